"""Executors come from a registry of factories (`runner.executors.registry`), each with options of
its own; the service reads the names from it, and the registry never imports Ray."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ingestflow.runner.executor import RunOptions
from ingestflow.runner.executors import registry
from ingestflow.runner.executors.base import Executor, OnResult
from ingestflow.runner.executors.local import InProcess, LocalPool
from ingestflow.runner.tasks import Task
from ingestflow.service import Service
from ingestflow.service.requests import ExecutionOptions, RequestInvalid, RunRequest
from tests.conftest import REPO
from tests.runner.test_runtime_options import runner
from tests.service.test_run_requests import WORKFLOW


@dataclass(frozen=True)
class HereOptions:
    """A third party's executor options."""

    label: str = "default"


class Here(Executor):
    """A third party's executor: remembers what it was built with."""

    def __init__(self, launch: registry.Launch, own: HereOptions) -> None:
        self.launch, self.own = launch, own

    def run(self, tasks: Any, on_result: OnResult) -> None:
        for task in tasks:
            on_result(task, None, 1)


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch) -> registry.ExecutorType:
    """The registry with one more executor, as a third party registers it (for this test)."""
    monkeypatch.setattr(registry, "EXECUTOR_TYPES", dict(registry.EXECUTOR_TYPES))
    return registry.register(registry.ExecutorType("here", Here, HereOptions))


def test_the_built_in_executors_register_as_a_third_party_would() -> None:
    assert registry.names() == ("local", "ray")
    assert registry.executor_type("ray").options is registry.RayOptions
    assert registry.executor_type("local").preloads and not registry.executor_type("ray").preloads
    with pytest.raises(ValueError, match="cannot register executor 'local': the name is taken"):
        registry.register(registry.ExecutorType("local", Here))
    with pytest.raises(ValueError, match="cannot register executor 'Here': its name must be"):
        registry.register(registry.ExecutorType("Here", Here))


def test_the_registry_imports_no_executor() -> None:
    code = (
        "import sys, ingestflow.runner.executors.registry as r; r.names(); "
        "print(sorted(m for m in sys.modules if m == 'ray' or m.endswith('executors.ray')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_run_builds_the_executor_it_names_with_its_own_options(
    tmp_path: Path, here: registry.ExecutorType
) -> None:
    given = HereOptions("mine")
    built = runner(tmp_path, RunOptions(executor="here", executor_options={"here": given}))
    executor = built._executor()
    assert isinstance(executor, Here) and executor.own is given
    assert executor.launch.plan is built.plan and executor.launch.stopper is built.stopper
    defaults = runner(tmp_path, RunOptions(executor="here"))._executor()
    assert isinstance(defaults, Here) and defaults.own == HereOptions()
    wrong = runner(tmp_path, RunOptions(executor="here", executor_options={"here": 3}))
    with pytest.raises(TypeError, match=r"the here executor takes HereOptions, not int"):
        wrong._executor()
    one, two = (runner(tmp_path, RunOptions(workers=n))._executor() for n in (1, 2))
    assert isinstance(one, InProcess) and isinstance(two, LocalPool)
    tasks: list[Task] = []
    executor.run(iter(tasks), lambda *_: [])


def test_the_service_allows_the_registered_executors(
    tmp_path: Path, here: registry.ExecutorType
) -> None:
    with Service(tmp_path / "ws") as service:
        with pytest.raises(RequestInvalid, match=r"unknown executor.*allowed.*local.*ray.*here"):
            service.runs.prepare(
                RunRequest(WORKFLOW, inputs=(tmp_path,), execution=ExecutionOptions(executor="x"))
            )
        execution = ExecutionOptions(executor="here", ray_address="auto", ray_shared_fs=True)
        prepared = service.runs.prepare(
            RunRequest(WORKFLOW, inputs=(tmp_path,), execution=execution)
        )
        try:
            assert prepared.options.executor == "here"
            ray = prepared.options.executor_options["ray"]
            assert ray == registry.RayOptions(address="auto", shared_fs=True)
        finally:
            prepared.source.close()
            prepared.destination.close()
