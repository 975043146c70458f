"""The workers' options are typed (`stages.base.RuntimeOptions`), set by the runner, read by
attribute: no magic keys."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from ingestflow.connectors.local import LocalDestination, LocalSource
from ingestflow.runner.executor import JobRunner, RunOptions
from ingestflow.runner.plan import build_plan
from ingestflow.stages.base import RunContext, RuntimeOptions
from ingestflow.store.jobs import Workspace
from tests.runner.test_split import workflow


def runner(tmp_path: Path, options: RunOptions) -> JobRunner:
    (tmp_path / "in").mkdir(exist_ok=True)
    return JobRunner(
        build_plan(workflow()),
        LocalSource([tmp_path / "in"]),
        LocalDestination(tmp_path / "out"),
        Workspace(tmp_path / "ws"),
        options,
    )


def test_the_options_are_typed_and_frozen() -> None:
    options = RunContext().options
    assert options == RuntimeOptions(doc_timeout=None, torch_threads=None, embed_batch_size=32)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field"):
        options.doc_timeout = 3  # type: ignore[misc]
    assert options.with_threads(4).torch_threads == 4
    assert RuntimeOptions(torch_threads=2).with_threads(4).torch_threads == 2  # set: kept


def test_the_runner_sets_the_document_timeout_and_the_workers_threads(tmp_path: Path) -> None:
    run = runner(tmp_path, RunOptions(doc_timeout=5, workers=2))
    assert run.plan.context.options == RuntimeOptions(doc_timeout=5.0)
    pool: Any = run._executor()  # a local pool: its workers share the CPUs
    threads = max(1, (os.cpu_count() or 1) // 2)
    assert pool.plan.context.options == RuntimeOptions(doc_timeout=5.0, torch_threads=threads)
    untimed = runner(tmp_path, RunOptions(doc_timeout=None, workers=1))
    in_process: Any = untimed._executor()  # in this process
    assert in_process.plan.context.options == RuntimeOptions()
