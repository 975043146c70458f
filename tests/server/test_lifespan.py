"""Start-up: jobs left unfinished by a process that died are marked FAILED (interrupted) when the
app starts; jobs whose process still runs are left alone; background jobs accepted but never
started stay SCHEDULED and run (or fail saying why, when their uploads are gone)."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys

import pytest

from ingestflow.service import Service, Upload
from ingestflow.store.job_rows import NodeStats
from ingestflow.store.owners import process_owner
from tests.server.conftest import API, DOC_A, Servers, local_workflow


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
            job_id = service.runs.submit(workflow.id, [upload])["id"]
            service.ws.set_owner(job_id, owner)
            service.ws.update_job(job_id, status=status, processing_status=status)
            return job_id

        exited = job(dead_owner(), "IN_PROGRESS")
        never_was = job("999999:1.0", "IN_PROGRESS")
        queued_by_dead = job(dead_owner(), "SCHEDULED")  # a server's, accepted, never started
        alive = job(process_owner(), "IN_PROGRESS")  # this test process still runs
        finished = job("999999:1.0", "COMPLETED")
        # a foreground run (no stored run request) whose process died before it started
        stats = [NodeStats("n", "Partitioner", "partition", "unstructured_api")]
        foreground = service.ws.create_job("local", "cli run", "ephemeral", stats, {}, dead_owner())
    with Service(workspace) as service:  # opening a workspace sweeps nothing
        assert service.ws.job_row(exited)["status"] == "IN_PROGRESS"

    server = serve("ws", background=False)
    http = server.client()
    for job_id in (exited, never_was, foreground):
        assert http.get(f"{API}/jobs/{job_id}").json()["status"] == "FAILED"
        details = http.get(f"{API}/jobs/{job_id}/details").json()
        assert details["processing_status"] == "FAILED"
        assert "interrupted" in details["message"]
    assert http.get(f"{API}/jobs/{alive}").json()["status"] == "IN_PROGRESS"
    assert http.get(f"{API}/jobs/{finished}").json()["status"] == "COMPLETED"
    assert http.get(f"{API}/jobs/{queued_by_dead}").json()["status"] == "SCHEDULED"  # to be run
    failed = {j["id"] for j in http.get(f"{API}/jobs", params={"status": "FAILED"}).json()}
    assert failed == {exited, never_was, foreground}


@pytest.mark.slow
def test_jobs_queued_when_the_server_died_run_at_the_next_start(serve: Servers) -> None:
    workspace = serve.root / "ws"
    workspace.mkdir()
    with Service(workspace) as service:  # two runs accepted (202) by a server that then died
        queued = {}
        for name in ("kept", "lost"):
            workflow = service.workflows.create(local_workflow(name))
            upload = Upload("plan.txt", io.BytesIO(DOC_A))
            queued[name] = service.runs.submit(workflow.id, [upload])["id"]
            service.ws.set_owner(queued[name], dead_owner())
    shutil.rmtree(workspace / "uploads" / queued["lost"])  # its files are gone

    server = serve("ws")  # launches jobs
    kept = server.wait_job(queued["kept"])
    http = server.client()
    details = http.get(f"{API}/jobs/{kept['id']}/details").json()
    assert kept["status"] == "COMPLETED", details
    assert details["processing_status"] == "SUCCESS"
    assert [n["success"] for n in details["node_stats"]] == [1, 1]
    lost = server.wait_job(queued["lost"])
    assert lost["status"] == "FAILED"
    message = http.get(f"{API}/jobs/{lost['id']}/details").json()["message"]
    assert "before it started" in message and "uploaded files" in message, message
    assert "run it again" in message and str(workspace) not in message
