"""A job is IN_PROGRESS from the moment its process is launched: cancelling it while the process
still starts (here: while the wiki's precheck hangs) stops it for good."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.fakes.confluence import FakeConfluence, Fault
from tests.server.conftest import API, Server, local_workflow, wiki_source


def _in_its_precheck(server: Server, wiki: FakeConfluence, delay: float) -> tuple[Any, str]:
    """A client and the id of a wiki job whose process is in its precheck (the wiki's first
    answer takes `delay` seconds)."""
    http = server.client()
    source = http.post(f"{API}/sources", json=wiki_source(wiki)).json()
    workflow = http.post(
        f"{API}/workflows", json={**local_workflow("from wiki"), "source_id": source["id"]}
    ).json()
    wiki.inject("/rest/api/space", Fault.slow(delay, times=None))  # the precheck's first call
    answer = http.post(f"{API}/workflows/{workflow['id']}/run")
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["id"]
    end = time.monotonic() + 120
    while not wiki.requests_to("/rest/api/space"):  # the job process is in its precheck
        assert time.monotonic() < end, "the job process never reached its precheck"
        time.sleep(0.05)
    return http, job_id


def _stopped_before_any_page(server: Server, wiki: FakeConfluence, http: Any, job_id: str) -> None:
    """The job's process ends, the job STOPPED before it began, and no page was read."""
    end = time.monotonic() + 120
    launcher = server.app.state.ingestflow.launcher
    while launcher.running:  # the job process has ended (and been reaped)
        assert time.monotonic() < end, "the cancelled job's process did not end"
        time.sleep(0.05)
    details = http.get(f"{API}/jobs/{job_id}/details").json()
    assert details["processing_status"] == "STOPPED", details
    assert "before it began" in details["message"]
    assert http.get(f"{API}/jobs/{job_id}").json()["status"] == "STOPPED"
    assert not wiki.requests_to("/rest/api/content")  # no page was read


@pytest.mark.slow
@pytest.mark.parametrize("server_sigint", ["handled", "ignored"])
def test_a_job_cancelled_while_its_process_starts_stays_stopped(
    server: Server, wiki: FakeConfluence, server_sigint: str
) -> None:
    """Also when the server's process ignores SIGINT (as a process started in the background
    does): the job process it launches would inherit that, and a cancel must still stop it."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    if server_sigint == "ignored":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        http, job_id = _in_its_precheck(server, wiki, 20.0)
    finally:
        signal.signal(signal.SIGINT, before)
    assert http.get(f"{API}/jobs/{job_id}").json()["status"] == "IN_PROGRESS"
    answer = http.post(f"{API}/jobs/{job_id}/cancel")
    assert answer.status_code == 200, answer.text
    _stopped_before_any_page(server, wiki, http, job_id)


@pytest.mark.slow
def test_a_cancel_that_cannot_signal_the_job_process_still_stops_it_before_any_page(
    server: Server, wiki: FakeConfluence
) -> None:
    """When the job's owner cannot be told apart from a gone process (here: its recorded start
    time is changed), the cancel only records STOPPED; the job process reads that once its
    precheck is done and ends there, STOPPED, without reading a page (it used to take the job
    back IN_PROGRESS and run it to COMPLETED)."""
    from ingestflow.store import open_workspace

    http, job_id = _in_its_precheck(server, wiki, 3.0)
    with open_workspace(server.workspace) as ws:
        pid = str(ws.job_row(job_id)["owner"]).split(":")[0]
        ws.set_owner(job_id, f"{pid}:0.000")  # reads as another process: no signal is sent
    answer = http.post(f"{API}/jobs/{job_id}/cancel")
    assert answer.status_code == 200, answer.text
    assert "stopped before it started" in answer.json()["message"]  # no signal went out
    _stopped_before_any_page(server, wiki, http, job_id)


@pytest.mark.slow
def test_a_job_whose_process_is_killed_fails_and_the_next_run_starts(
    server: Server, wiki: FakeConfluence
) -> None:
    """kill -9 of a served job's process: the server marks the job FAILED (interrupted) by
    itself, and the workflow's next run, which waited for it, starts (both used to stay
    IN_PROGRESS and SCHEDULED until a CLI command swept the workspace)."""
    http, job_id = _in_its_precheck(server, wiki, 60.0)
    workflow_id = http.get(f"{API}/jobs/{job_id}").json()["workflow_id"]
    waiting = http.post(f"{API}/workflows/{workflow_id}/run")
    assert waiting.status_code == 202, waiting.text
    launcher = server.app.state.ingestflow.launcher
    launcher.running[job_id][1].kill()
    end = time.monotonic() + 60
    while (job := http.get(f"{API}/jobs/{job_id}").json())["status"] == "IN_PROGRESS":
        assert time.monotonic() < end, "the killed job is still IN_PROGRESS"
        time.sleep(0.1)
    assert job["status"] == "FAILED", job
    assert "interrupted" in http.get(f"{API}/jobs/{job_id}/details").json()["message"]
    next_id = waiting.json()["id"]
    while http.get(f"{API}/jobs/{next_id}").json()["status"] == "SCHEDULED":
        assert time.monotonic() < end, "the workflow's next run never started"
        time.sleep(0.1)
    assert http.post(f"{API}/jobs/{next_id}/cancel").status_code == 200  # it waits on the wiki
