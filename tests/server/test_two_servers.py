"""Two servers on one workspace (two apps, each under uvicorn on loopback) share its work: a
schedule's firing is submitted by one of them, a job is run by one job process, and a change to
the stored schedules made through either server or the CLI is followed by both."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from ingestflow.service import Service
from ingestflow.store import claims
from tests.fakes.confluence import FakeConfluence
from tests.server.clocks import FastClock, StoppedClock
from tests.server.conftest import API, FINISHED, NODES, Server, Servers, wiki_source

CLI = [sys.executable, "-c", "from ingestflow.cli import main; main()"]
T0 = datetime(2030, 1, 1, 12, 7, tzinfo=UTC)  # a schedules' time between two quarter hours


def at(hour: int, minute: int, micros: int = 0) -> datetime:
    """A time on T0's day."""
    return T0.replace(hour=hour, minute=minute, second=0, microsecond=micros)


def wiki_workflow(source_id: str, schedule: str | None = "every 15 minutes") -> dict[str, Any]:
    """A create body of a wiki-source workflow (`schedule` None: runs only when asked)."""
    body = {
        "name": "wiki every 15 minutes",
        "workflow_type": "custom",
        "source_id": source_id,
        "workflow_nodes": NODES,
    }
    return body if schedule is None else {**body, "schedule": schedule}


def stored_workflow(workspace: Path, wiki: FakeConfluence, schedule: str | None) -> str:
    """Store a wiki source and a workflow reading it in `workspace`; the workflow's id."""
    workspace.mkdir(parents=True, exist_ok=True)
    with Service(workspace) as service:
        source = service.connectors.create(wiki_source(wiki), role="source")
        return service.workflows.create(wiki_workflow(source.id, schedule)).id


def schedules(server: Server) -> Any:
    """The server's schedules (service.schedules.Schedules)."""
    return server.app.state.ingestflow.schedules


def jobs_of(http: httpx.Client, workflow_id: str) -> list[dict[str, Any]]:
    answer = http.get(f"{API}/jobs", params={"workflow_id": workflow_id})
    assert answer.status_code == 200, answer.text
    return answer.json()


def wait_for(what: str, done: Callable[[], bool], deadline_s: float = 30.0) -> None:
    """Poll `done` until it is true; fail saying `what` did not happen in time."""
    end = time.monotonic() + deadline_s
    while not done():
        if time.monotonic() > end:
            pytest.fail(f"{what}: not within {deadline_s:g} s")
        time.sleep(0.05)


def assert_completed(server: Server, job_id: str) -> None:
    """Wait for a job to finish; it must have completed."""
    job = server.wait_job(job_id, deadline_s=240)
    details = server.client().get(f"{API}/jobs/{job_id}/details").json()
    assert job["status"] == "COMPLETED", details


def space_listings(wiki: FakeConfluence) -> int:
    """How many times the wiki's space was listed from its first page (once per crawl)."""
    return sum(
        r.query.get("spaceKey") == ["DEV"] and r.query.get("start", ["0"]) == ["0"]
        for r in wiki.requests_to("/rest/api/content")
    )


@pytest.mark.slow
def test_a_schedule_fires_once_per_tick_across_two_servers(
    wiki: FakeConfluence, serve: Servers, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ingestflow.server")
    workflow_id = stored_workflow(serve.root / "ws", wiki, "every 15 minutes")
    clock = StoppedClock(T0)  # the test fires each server's schedule itself, in turn
    first, second = serve("ws", clock=clock), serve("ws", clock=clock)
    http = first.client()
    for server in (first, second):
        assert schedules(server).scheduled() == {workflow_id: "*/15 * * * *"}

    # 12:15 fires on the first server, and its run ends before the second server's firing
    clock.now = at(12, 15, 3)
    job = schedules(first).fire(workflow_id)
    assert job is not None
    assert_completed(first, job)
    clock.now = at(12, 15, 8)
    assert schedules(second).fire(workflow_id) is None  # 12:15 has had its run
    assert [j["id"] for j in jobs_of(http, workflow_id)] == [job]
    assert "2030-01-01T12:15:00+00:00 was fired already" in caplog.text

    # 12:30 fires on the second server first: the first one's firing of it submits nothing
    clock.now = at(12, 30, 1)
    later = schedules(second).fire(workflow_id)
    assert later is not None
    assert schedules(first).fire(workflow_id) is None
    assert_completed(second, later)
    jobs = jobs_of(http, workflow_id)
    assert sorted(j["id"] for j in jobs) == sorted([job, later])
    assert {j["job_type"] for j in jobs} == {"scheduled"}


@pytest.mark.slow
def test_a_schedule_on_a_fast_clock_runs_once_per_tick_on_two_servers(
    wiki: FakeConfluence, serve: Servers
) -> None:
    workflow_id = stored_workflow(serve.root / "ws", wiki, "every 15 minutes")
    clock = FastClock(speed=900)  # both servers read one clock: a quarter hour each second
    first, second = serve("ws", clock=clock), serve("ws", clock=clock)
    http = first.client()

    # never two runs unfinished at once, however the two servers' firings fall
    end = time.monotonic() + 240
    while True:
        jobs = jobs_of(http, workflow_id)
        unfinished = [j for j in jobs if j["status"] not in FINISHED]
        assert len(unfinished) <= 1, unfinished
        if sum(j["status"] == "COMPLETED" for j in jobs) >= 3:
            break
        assert time.monotonic() < end, f"three scheduled runs did not complete: {jobs}"
        time.sleep(0.05)
    for server in (first, second):
        schedules(server).scheduler.shutdown(wait=True)  # no more firings, none under way
    wait_for(
        "the last scheduled run finishing",
        lambda: all(j["status"] in FINISHED for j in jobs_of(http, workflow_id)),
        deadline_s=120,
    )
    serve.close()  # both servers stop; every job process they started has ended

    with Service(serve.root / "ws") as service:
        jobs = service.jobs.list(workflow_id=workflow_id)
        firings = claims.firings(service.ws.db, workflow_id)
    assert {j["status"] for j in jobs} == {"COMPLETED"}, jobs
    assert space_listings(wiki) == len(jobs)  # each run crawled the wiki once
    assert {j["job_type"] for j in jobs} == {"scheduled"}
    fired = {f["job_id"]: f["fire_time"] for f in firings if f["job_id"]}
    assert sorted(fired) == sorted(j["id"] for j in jobs)  # each job, one firing
    assert len(set(fired.values())) == len(fired)  # each tick, at most one job
    for tick in fired.values():
        assert datetime.fromisoformat(tick).minute % 15 == 0 and tick.endswith(":00+00:00")


@pytest.mark.slow
def test_runs_through_two_servers_each_run_in_one_job_process(
    wiki: FakeConfluence, serve: Servers
) -> None:
    workflow_id = stored_workflow(serve.root / "ws", wiki, schedule=None)
    first = serve("ws")
    # how often one run lists the wiki's space, with one server alone
    assert_completed(first, first.client().post(f"{API}/workflows/{workflow_id}/run").json()["id"])
    per_run = space_listings(wiki)
    assert per_run >= 1

    second = serve("ws")
    runs = []
    for server in (first, second, first, second):
        answer = server.client().post(f"{API}/workflows/{workflow_id}/run")
        assert answer.status_code == 202, answer.text
        runs.append(answer.json()["id"])
    for job_id in runs:
        assert_completed(first, job_id)
    serve.close()  # both servers stop; every job process they started has ended

    assert space_listings(wiki) == per_run * (1 + len(runs))  # no run was run twice
    with Service(serve.root / "ws") as service:
        for job_id in runs:
            details = service.jobs.details(job_id)
            assert details.node_stats[0].success == 3, details  # the wiki's three pages


def test_a_workflow_deleted_through_one_server_stops_firing_on_the_other(
    wiki: FakeConfluence, serve: Servers
) -> None:
    workflow_id = stored_workflow(serve.root / "ws", wiki, "every 15 minutes")
    clock = StoppedClock(T0)
    first, second = serve("ws", clock=clock), serve("ws", clock=clock)
    assert workflow_id in schedules(second).scheduled()

    answer = first.client().delete(f"{API}/workflows/{workflow_id}")
    assert answer.status_code == 200, answer.text
    assert schedules(first).scheduled() == {}
    wait_for(
        "the second server dropping the deleted workflow's schedule",
        lambda: schedules(second).scheduled() == {},
    )
    clock.now = at(12, 15, 5)
    assert schedules(second).fire(workflow_id) is None
    assert jobs_of(second.client(), workflow_id) == []


def test_a_schedule_changed_through_the_cli_is_followed_by_a_running_server(
    wiki: FakeConfluence, serve: Servers, tmp_path: Path
) -> None:
    workspace = serve.root / "ws"
    workspace.mkdir()
    with Service(workspace) as service:
        source = service.connectors.create(wiki_source(wiki), role="source")
    server = serve("ws", clock=StoppedClock(T0))
    assert schedules(server).scheduled() == {}

    def cli(*args: str) -> str:
        done = subprocess.run(
            [*CLI, "workflows", *args, "--workspace", str(workspace)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    body = tmp_path / "workflow.json"
    body.write_text(json.dumps(wiki_workflow(source.id, "every 15 minutes")))
    workflow_id = json.loads(cli("create", str(body)))["id"]
    wait_for(
        "the server scheduling a workflow the CLI created",
        lambda: schedules(server).scheduled() == {workflow_id: "*/15 * * * *"},
    )

    body.write_text(json.dumps({"schedule": "every hour"}))
    cli("update", workflow_id, str(body))
    wait_for(
        "the server following a schedule the CLI changed",
        lambda: schedules(server).scheduled() == {workflow_id: "0 * * * *"},
    )

    body.write_text(json.dumps({"schedule": None}))
    cli("update", workflow_id, str(body))
    wait_for(
        "the server dropping a schedule the CLI removed",
        lambda: schedules(server).scheduled() == {},
    )

    body.write_text(json.dumps({"schedule": "daily"}))
    cli("update", workflow_id, str(body))
    wait_for("a schedule the CLI set again", lambda: workflow_id in schedules(server).scheduled())
    cli("delete", workflow_id)
    wait_for(
        "the server dropping a workflow the CLI deleted",
        lambda: schedules(server).scheduled() == {},
    )
