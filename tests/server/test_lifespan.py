"""Start-up: jobs left unfinished by a process that died are marked FAILED (interrupted) when the
app starts; jobs whose process still runs are left alone."""

from __future__ import annotations

import io
import subprocess
import sys

from ingestflow.service import Service, Upload
from ingestflow.store.jobs import process_owner
from tests.server.conftest import API, Servers, local_workflow


def dead_owner() -> str:
    """The owner string of a process that ran and has exited (pid and start time)."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        owner = process_owner(child.pid)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    return owner


def test_jobs_of_dead_processes_are_failed_at_start_up(serve: Servers) -> None:
    workspace = serve.root / "ws"
    workspace.mkdir()
    with Service(workspace) as service:
        workflow = service.workflows.create(local_workflow("crashed"))

        def job(owner: str, status: str) -> str:
            upload = Upload("note.txt", io.BytesIO(b"A note."))
            job_id = service.runs.submit(workflow["id"], [upload])["id"]
            service.ws.set_owner(job_id, owner)
            service.ws.update_job(job_id, status=status, processing_status=status)
            return job_id

        exited = job(dead_owner(), "IN_PROGRESS")
        never_was = job("999999:1.0", "IN_PROGRESS")
        queued_by_dead = job(dead_owner(), "SCHEDULED")
        alive = job(process_owner(), "IN_PROGRESS")  # this test process still runs
        finished = job("999999:1.0", "COMPLETED")
    with Service(workspace) as service:  # opening a workspace sweeps nothing
        assert service.ws.job_row(exited)["status"] == "IN_PROGRESS"

    server = serve("ws", background=False)
    http = server.client()
    for job_id in (exited, never_was, queued_by_dead):
        assert http.get(f"{API}/jobs/{job_id}").json()["status"] == "FAILED"
        details = http.get(f"{API}/jobs/{job_id}/details").json()
        assert details["processing_status"] == "FAILED"
        assert "interrupted" in details["message"]
    assert http.get(f"{API}/jobs/{alive}").json()["status"] == "IN_PROGRESS"
    assert http.get(f"{API}/jobs/{finished}").json()["status"] == "COMPLETED"
    failed = {j["id"] for j in http.get(f"{API}/jobs", params={"status": "FAILED"}).json()}
    assert failed == {exited, never_was, queued_by_dead}
