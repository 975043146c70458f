"""A job that a CLI (or Python API) process runs is that process's: a server's launcher on the same
workspace never starts it, and a cancel that ends it before it began says so in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli.app import app
from ingestflow.runner.executor import JobRunner
from ingestflow.service.launcher import Launcher
from ingestflow.store import NodeStats, Workspace, open_workspace
from ingestflow.store.owners import process_owner

WORKFLOW = """{"name": "notes", "workflow_type": "custom", "workflow_nodes": [
  {"name": "Partitioner", "type": "partition", "subtype": "unstructured_api",
   "settings": {"strategy": "fast"}}]}"""


def test_a_servers_launcher_leaves_a_foreground_runs_job_to_its_process(tmp_path: Path) -> None:
    """A CLI run's job is SCHEDULED while its process prechecks; the launcher of a server on the
    same workspace used to start a job process for it, which ended it (the CLI run then exited
    130 with nothing said)."""
    ws = Workspace(tmp_path / "ws")
    stats = [NodeStats("n", "Partitioner", "partition", "unstructured_api")]
    info = {"output_dir": str(tmp_path / "out"), "run": {"inputs": [str(tmp_path)]}}
    job = ws.create_job(f"file:{tmp_path}/wf.json", "notes", "ephemeral", stats, info)
    launcher = Launcher(tmp_path / "ws", poll_s=60)
    try:
        launcher._launch()  # one round of the launcher's loop, here and now
        assert launcher.running == {}
        row = ws.job_row(job)
        assert (row["status"], row["owner"]) == ("SCHEDULED", process_owner())
        assert ws.begin_job(job)  # the CLI process goes on to run it
    finally:
        launcher.stop(grace_s=5)
        ws.close()


def test_a_run_cancelled_in_its_precheck_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jobs cancel` (or the API) from another process while a CLI run prechecks: the run
    exits 130 with a line naming the job and the cancel, not silently."""
    precheck = JobRunner.precheck

    def cancelled_meanwhile(runner: Any) -> None:
        precheck(runner)
        with open_workspace(tmp_path / "ws") as ws:  # as another process's cancel records it
            ws.update_job(
                runner.job_id,
                status="STOPPED",
                processing_status="STOPPED",
                message="cancelled by the user",
            )

    monkeypatch.setattr(JobRunner, "precheck", cancelled_meanwhile)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "note.txt").write_text("A note.\n")
    (tmp_path / "wf.json").write_text(WORKFLOW)
    args = ["run", str(tmp_path / "wf.json"), "-i", str(tmp_path / "in")]
    args += ["-o", str(tmp_path / "out"), "--workspace", str(tmp_path / "ws"), "--workers", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 130, result.output
    lines = [line for line in result.stderr.splitlines() if "cancelled" in line]
    assert len(lines) == 1 and "before it began" in lines[0], result.stderr
    assert "no document was read" in lines[0]
    assert not (tmp_path / "out" / "note.txt.json").exists()
