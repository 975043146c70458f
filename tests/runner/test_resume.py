"""`ingestflow jobs resume JOB` continues a stopped or killed job in place: the same job id, only
the documents it had not written yet; refused, saying why, for a finished job, a running one, or
one whose workflow changed since. Real `ingestflow run` processes, stopped and killed at a
chosen write; the resumes, which nothing stops, run in this process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.connectors.local import LocalDestination
from ingestflow.connectors.vectordb_destination import VectorDBDestination
from ingestflow.store import Workspace
from ingestflow.store.job_rows import NodeStats
from tests.fakes.confluence import FakeConfluence
from tests.runner import test_wiki_run as wiki_run
from tests.runner.test_crash import EXE, _workflow
from tests.runner.test_vectordb_kill import _rows, release
from tests.runner.test_vectordb_kill import setup as milvus_setup

pytestmark = pytest.mark.slow

#: Loaded by every Python process started with its folder first on PYTHONPATH: logs each
#: document a destination writes, and stops (SIGINT, as Ctrl-C) or kills (SIGKILL) the run
#: right after its Nth write (before the job records it).
HOOK = """
import os, signal
from ingestflow.connectors.local import LocalDestination
from ingestflow.connectors.vectordb_destination import VectorDBDestination

calls = [0]


def hooked(original):
    def write(self, doc):
        result = original(self, doc)
        with open(os.environ["WRITES_LOG"], "a") as log:
            log.write(doc.filename + "\\n")
        calls[0] += 1
        if str(calls[0]) == os.environ.get("STOP_AFTER"):
            os.kill(os.getpid(), signal.SIGINT)
        if str(calls[0]) == os.environ.get("KILL_AFTER"):
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    return write


LocalDestination.write = hooked(LocalDestination.write)
VectorDBDestination.write = hooked(VectorDBDestination.write)
"""
NAMES = [f"d{i}.txt" for i in range(6)]
cli = CliRunner()


class Hooked:
    """`ingestflow` commands in processes that log their writes (and stop or die on cue)."""

    def __init__(self, tmp: Path) -> None:
        hooks = tmp / "hooks"
        hooks.mkdir()
        (hooks / "sitecustomize.py").write_text(HOOK)
        self.log = tmp / "writes.log"
        path = os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")]))
        self.env = {**os.environ, "PYTHONPATH": path, "WRITES_LOG": str(self.log)}
        self.workspace = tmp / "ws"

    def __call__(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        self.log.write_text("")
        return subprocess.run(
            [*EXE, *args, "--workspace", str(self.workspace)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**self.env, **env},
        )

    def writes(self) -> list[str]:
        return self.log.read_text().split()

    def resume(self, job_id: str) -> tuple[Any, dict[str, Any]]:
        """`jobs resume JOB --json` in this process (nothing is stopped or killed there, so no
        process of its own is needed), its destinations' writes logged as the hooked processes
        log theirs; then the Milvus Lite .db let go, for the next process that opens it."""
        self.log.write_text("")
        with pytest.MonkeyPatch.context() as patch:
            for destination in (LocalDestination, VectorDBDestination):
                patch.setattr(destination, "write", logging_writes(destination.write, self.log))
            try:
                done = cli.invoke(
                    app, ["jobs", "resume", job_id, "--json", "--workspace", str(self.workspace)]
                )
            finally:
                release(self.workspace.parent / "milvus.db")
        return done, json.loads(done.stdout) if done.stdout.startswith("{") else {}


def logging_writes(original: Any, log: Path) -> Any:
    """A destination's `write` that logs each document it writes, as HOOK's does."""

    def write(self: Any, doc: Any) -> Any:
        result = original(self, doc)
        with log.open("a") as out:
            out.write(doc.filename + "\n")
        return result

    return write


def _local(tmp: Path) -> tuple[Hooked, list[str]]:
    folder = tmp / "in"
    folder.mkdir()
    for i, name in enumerate(NAMES):
        (folder / name).write_text(f"Document {i}.\n\nIts own paragraph, number {i}.")
    args = ["run", str(_workflow(tmp)), "-i", str(folder), "-o", str(tmp / "out"), "-w", "1"]
    return Hooked(tmp), args


def _only_job(hooked: Hooked) -> dict[str, Any]:
    listed = cli.invoke(app, ["jobs", "list", "--json", "--workspace", str(hooked.workspace)])
    (job,) = json.loads(listed.stdout)
    return job


def _refused(hooked: Hooked, job_id: str) -> str:
    """What `jobs resume` says when it refuses (exit 2), run in this process (nothing runs)."""
    done = cli.invoke(app, ["jobs", "resume", job_id, "--workspace", str(hooked.workspace)])
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    return " ".join(done.output.split())


def test_a_stopped_job_resumes_in_place_with_what_was_left(tmp_path: Path) -> None:
    """Also: refused while its workflow file differs from the job's (and resumed once it is
    the same again); refused once finished."""
    hooked, args = _local(tmp_path)
    stopped = hooked(*args, "--json", STOP_AFTER="1")  # stops after the batch in progress
    assert stopped.returncode == 130, stopped.stderr
    first = json.loads(stopped.stdout)
    assert first["status"] == "STOPPED"
    written = [f["filename"] for f in first["files"] if f["status"] == "SUCCESS"]
    assert 0 < len(written) < len(NAMES)
    _workflow(tmp_path, name="renamed")
    refused = _refused(hooked, first["id"])
    changed = f"the workflow file {tmp_path / 'wf.json'} changed since job {first['id']} ran"
    assert changed in refused
    assert "Run the workflow again as a new job" in refused
    _workflow(tmp_path)  # the job's own workflow again
    done, record = hooked.resume(first["id"])
    assert done.exit_code == 0, done.output
    assert record["id"] == first["id"] and record["status"] == "COMPLETED"
    assert sorted(hooked.writes()) == sorted(set(NAMES) - set(written))  # only what was left
    assert sorted(f["filename"] for f in record["files"]) == NAMES
    assert {f["status"] for f in record["files"]} == {"SUCCESS"}
    assert sorted(p.name for p in (tmp_path / "out").glob("*.json")) == [f"{n}.json" for n in NAMES]
    assert record["node_stats"][0]["success"] == len(NAMES)
    assert _only_job(hooked)["id"] == first["id"]  # no new job
    again = _refused(hooked, first["id"])
    assert f"job {first['id']} finished (COMPLETED, SUCCESS): there is nothing to resume" in again


def test_a_killed_job_resumes_under_its_own_id(tmp_path: Path) -> None:
    hooked, args = _local(tmp_path)
    killed = hooked(*args, KILL_AFTER="2")
    assert killed.returncode == -9, killed.stderr
    job = _only_job(hooked)  # the sweep finds its process gone
    assert job["status"] == "FAILED" and "interrupted" in job["message"]
    recorded = [f["filename"] for f in job["files"] if f["status"] == "SUCCESS"]
    done, record = hooked.resume(job["id"])
    assert done.exit_code == 0, done.output
    assert record["id"] == job["id"] and record["status"] == "COMPLETED"
    assert record["processing_status"] == "SUCCESS" and record["message"] is None
    # the document written but not recorded when the process died is written again
    assert sorted(hooked.writes()) == sorted(set(NAMES) - set(recorded))
    assert sorted(f["filename"] for f in record["files"]) == NAMES
    for path in (tmp_path / "out").glob("*.json"):
        json.loads(path.read_text())  # whole files only


def test_a_killed_milvus_job_resumes_with_no_row_twice(tmp_path: Path) -> None:
    docs, conn, wf = milvus_setup(tmp_path)
    (docs / "third.txt").write_text("Sailing\n\nThe harbour opens in spring.\n")
    hooked = Hooked(tmp_path)
    args = ["run", str(wf), "-i", str(docs), "--destination", str(conn), "-w", "1"]
    killed = hooked(*args, KILL_AFTER="2")
    assert killed.returncode == -9, killed.stderr
    job = _only_job(hooked)
    assert len([f for f in job["files"] if f["status"] == "SUCCESS"]) == 1
    done, record = hooked.resume(job["id"])
    assert done.exit_code == 0, done.output
    assert record["id"] == job["id"] and len(hooked.writes()) == 2
    rows = _rows(tmp_path / "milvus.db")
    assert len(rows) == len(set(rows))  # every row once
    by_file = {f["filename"]: f for f in record["files"]}
    assert {r for r, _ in rows} == {f["file_id"] for f in by_file.values()}
    assert sum(f["elements"] for f in by_file.values()) == len(rows)


def test_resume_refuses_a_running_job_and_an_unknown_one(tmp_path: Path) -> None:
    """(A changed workflow is refused in the stopped job's test above.)"""
    hooked = Hooked(tmp_path)
    ws = Workspace(tmp_path / "ws")
    try:  # a job this (live) process owns and runs
        running = ws.create_job("w", "running", "ephemeral", [NodeStats("n", "n", "t", "s")], {})
        ws.update_job(running, status="IN_PROGRESS", processing_status="IN_PROGRESS")
    finally:
        ws.close()
    busy = _refused(hooked, running)
    assert f"job {running} is in progress: only a stopped or failed job resumes" in busy
    assert "not found" in _refused(hooked, "no-such-job")


def test_resume_refuses_a_source_that_now_lists_elsewhere(
    tmp_path: Path, wiki: FakeConfluence
) -> None:
    hooked = Hooked(tmp_path)
    source = wiki_run.connector(tmp_path, wiki, extract_files=False, extract_images=False)
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(wiki_run.WORKFLOW))
    args = ["run", str(wf), "--source", str(source), "-o", str(tmp_path / "out"), "-w", "1"]
    stopped = hooked(*args, "--json", STOP_AFTER="1")
    assert stopped.returncode == 130, stopped.stderr
    job_id = json.loads(stopped.stdout)["id"]
    wiki.add_space("OPS")
    wiki_run.connector(tmp_path, wiki, extract_files=False, extract_images=False, spaces=["OPS"])
    refused = _refused(hooked, job_id)
    assert f"job {job_id}'s source is not what it was when the job ran" in refused


wiki = wiki_run.wiki  # the fixture: a fake Confluence with one space of five pages
