"""A stop stops, promptly, while a model server hangs: a real `ingestflow run` in its own process
group, a real model server on loopback that never answers, and signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.models import FakeModelServer, Request
from tests.runner.test_crash import EXE, _jobs, _wait_gone

pytestmark = pytest.mark.slow
KEY = "sk-stop-secret-4321"
WORKFLOW = {
    "name": "hanging",
    "workflow_type": "custom",
    "workflow_nodes": [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {"strategy": "fast"},
        },
        {"name": "Entities", "type": "prompter", "subtype": "anthropic_ner", "settings": {}},
        {"name": "Chunker", "type": "chunk", "subtype": "chunk_by_title", "settings": {}},
    ],
}
ONE = "Ada Lovelace wrote the first program.\n"  # one element: one request
THREE = "Ada Lovelace wrote.\n\nCharles Babbage built.\n\nThe engine ran.\n"  # three at once


@pytest.fixture
def hanging() -> Iterator[FakeModelServer]:
    """A model server that takes every chat request and never answers (until the test ends)."""
    release = threading.Event()

    def never(request: Request) -> str:
        release.wait()
        return json.dumps({"items": [], "relationships": []})

    with FakeModelServer(key=KEY) as server:
        server.reply(never)
        try:
            yield server
        finally:
            release.set()


class Run:
    """`ingestflow run` in its own process group (as a terminal or a service manager starts it),
    its stderr read as it comes."""

    def __init__(self, tmp: Path, server: FakeModelServer, workers: int, text: str) -> None:
        folder = tmp / "in"
        folder.mkdir()
        (folder / "a.txt").write_text(text)
        workflow = tmp / "wf.json"
        workflow.write_text(json.dumps(WORKFLOW))
        self.workspace = tmp / "ws"
        env = {
            **os.environ,
            "INGESTFLOW_ANTHROPIC_BASE_URL": server.anthropic_url,
            "INGESTFLOW_ANTHROPIC_API_KEY": KEY,
            "INGESTFLOW_ANTHROPIC_TIMEOUT": "3600",  # the request hangs for the whole test
        }
        self.process = subprocess.Popen(
            [
                *(*EXE, "run", str(workflow), "-i", str(folder), "-o", str(tmp / "out")),
                *("--workspace", str(self.workspace), "-w", str(workers)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        self.err: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.err.append(line)

    def wait_for(self, what: str, condition: Callable[[], bool], seconds: float = 180) -> None:
        """Wait until `condition()`, failing loudly after `seconds` or when the run ends."""
        deadline = time.monotonic() + seconds
        while not condition():
            if self.process.poll() is not None:
                raise AssertionError(f"the run ended before {what}: {''.join(self.err)}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {seconds} s: {''.join(self.err)}")
            time.sleep(0.2)

    def signal_group(self, sig: int) -> None:
        os.killpg(self.process.pid, sig)

    def ended(self, seconds: float = 60) -> int:
        """The exit code, once the run ends; killed and failed after `seconds`."""
        try:
            code = self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.signal_group(signal.SIGKILL)
            self.process.wait()
            raise AssertionError(
                f"the run did not end within {seconds} s of the stop: {''.join(self.err)}"
            ) from None
        self.reader.join(10)
        return code

    def stderr(self) -> str:
        return "".join(self.err)

    def job(self) -> dict[str, Any]:
        (job,) = _jobs(self.workspace)
        return job


def _chats(server: FakeModelServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/messages"))


@pytest.mark.parametrize("second", [False, True], ids=["one-sigterm", "then-another"])
def test_sigterm_to_the_group_stops_at_once_while_the_provider_hangs(
    tmp_path: Path, hanging: FakeModelServer, second: bool
) -> None:
    run = Run(tmp_path, hanging, workers=2, text=ONE)
    run.wait_for("request to the model server", lambda: _chats(hanging) >= 1)
    run.signal_group(signal.SIGTERM)  # the workers end with it; the run must not retry them
    if second:  # a second one, once the first was seen, stops at once whatever it was doing
        run.wait_for("stopping line", lambda: "Ctrl-C again" in run.stderr())
        run.signal_group(signal.SIGTERM)
    code = run.ended()
    err = run.stderr()
    # 130 as for Ctrl-C; a second SIGTERM that finds the interpreter exiting ends it there
    assert code in ((130, -signal.SIGTERM) if second else (130,)), err
    assert "Traceback" not in err and "AttributeError" not in err, err
    assert not _wait_gone(run.process.pid), "a process outlived the run"
    job = run.job()
    assert job["status"] == "STOPPED", job
    assert _chats(hanging) == 1  # the document was not retried after the stop


def test_a_second_ctrl_c_stops_at_once_a_document_hanging_in_process(
    tmp_path: Path, hanging: FakeModelServer
) -> None:
    # the document runs in the main process; its elements' requests, in threads
    run = Run(tmp_path, hanging, workers=1, text=THREE)
    run.wait_for("requests to the model server", lambda: _chats(hanging) >= 3)
    run.signal_group(signal.SIGINT)  # Ctrl-C: asks to stop after the document in progress
    run.wait_for("stopping line", lambda: "Ctrl-C again" in run.stderr())
    run.signal_group(signal.SIGINT)  # again: now
    code = run.ended()
    err = run.stderr()
    assert code == 130, err
    assert "Traceback" not in err and "AttributeError" not in err, err
    assert not _wait_gone(run.process.pid), "a process outlived the run"
    assert run.job()["status"] == "STOPPED"
    assert _chats(hanging) == 3
