"""Ctrl-C says what the run found, did and left: a real `ingestflow run` on a folder of seven
documents, stopped with SIGINT while a model server holds its documents in progress."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.models import FakeModelServer, Request
from tests.runner.test_crash import EXE, _wait_gone
from tests.runner.test_stop import KEY, WORKFLOW, Run, _chats

pytestmark = pytest.mark.slow
DOCUMENTS = 7


class FolderRun(Run):
    """`ingestflow run` (one worker) on a folder of DOCUMENTS texts, in its own process group."""

    def __init__(self, tmp: Path, server: FakeModelServer) -> None:
        folder = tmp / "in"
        folder.mkdir()
        for i in range(DOCUMENTS):
            (folder / f"doc{i}.txt").write_text(f"Charles Babbage built engine {i}.\n")
        workflow = tmp / "wf.json"
        workflow.write_text(json.dumps(WORKFLOW))
        self.workspace = tmp / "ws"
        env = {
            **os.environ,
            "INGESTFLOW_ANTHROPIC_BASE_URL": server.anthropic_url,
            "INGESTFLOW_ANTHROPIC_API_KEY": KEY,
            "INGESTFLOW_ANTHROPIC_TIMEOUT": "600",
        }
        self.process = subprocess.Popen(
            [
                *(*EXE, "run", str(workflow), "-i", str(folder), "-o", str(tmp / "out")),
                *("--workspace", str(self.workspace), "-w", "1"),
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


@pytest.fixture
def held() -> Iterator[tuple[FakeModelServer, threading.Event]]:
    """A model server that holds every request until the test releases it."""
    release = threading.Event()

    def later(request: Request) -> str:
        release.wait(300)
        return json.dumps({"items": [], "relationships": []})

    with FakeModelServer(key=KEY) as server:
        server.reply(later)
        try:
            yield server, release
        finally:
            release.set()


def test_ctrl_c_reports_what_was_found_done_and_left(
    tmp_path: Path, held: tuple[FakeModelServer, threading.Event]
) -> None:
    server, release = held
    run = FolderRun(tmp_path, server)
    # documents are in progress once the run asks the model server
    run.wait_for("a request to the model server", lambda: _chats(server) >= 1)
    run.signal_group(signal.SIGINT)  # Ctrl-C: stop after the documents in progress
    run.wait_for("the stopping line", lambda: "Ctrl-C again" in run.stderr())
    release.set()  # the documents in progress finish; the others are left
    code = run.ended()
    err = run.stderr()
    assert code == 130, err
    assert "Traceback" not in err, err
    assert not _wait_gone(run.process.pid), "a process outlived the run"
    out = run.process.stdout.read() if run.process.stdout else ""
    job = run.job()
    progress = job["progress"]
    assert job["status"] == "STOPPED", job
    assert progress["found"] == DOCUMENTS, job
    assert 0 < progress["written"] < DOCUMENTS, job
    assert progress["left"] == DOCUMENTS - progress["written"] - progress["failed"]
    entities = job["node_stats"][1]
    assert entities["node_name"] == "Entities" and entities["enriched"] == progress["written"]
    written, left = progress["written"], progress["left"]
    said = (
        f"stopped by the user after {written} of {DOCUMENTS} documents found ({written} "
        f"written, 0 failed, 0 unchanged); {left} left unprocessed"
    )
    assert job["message"].startswith(said), job["message"]
    summary = " ".join(out.split())  # the summary wraps at the console's width
    assert re.search(
        rf"{written} of {DOCUMENTS} documents written .* {left} left unprocessed", summary
    ), out
