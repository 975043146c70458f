"""Schedules on a fast clock (tests/server/clocks.py: "every 15 minutes" fires every second): a
wiki-source workflow gets `scheduled` jobs, never two at once, and none after it is deleted."""

from __future__ import annotations

import itertools
import re
import time
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.fakes.confluence import FakeConfluence
from tests.server.clocks import FastClock
from tests.server.conftest import API, NODES, Servers, wiki_source

ACTIVE = ("SCHEDULED", "IN_PROGRESS")


def runtime(job: dict[str, Any]) -> timedelta:
    """A finished job's runtime (an ISO 8601 duration `PT<seconds>S`)."""
    found = re.fullmatch(r"PT([0-9.]+)S", job["runtime"])
    assert found, job["runtime"]
    return timedelta(seconds=float(found.group(1)))


def jobs_of(http: httpx.Client, workflow_id: str) -> list[dict[str, Any]]:
    answer = http.get(f"{API}/jobs", params={"workflow_id": workflow_id})
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.slow
def test_scheduled_runs_never_overlap_and_stop_with_the_workflow(
    wiki: FakeConfluence, serve: Servers
) -> None:
    server = serve(clock=FastClock(speed=900))
    http = server.client()
    source = http.post(f"{API}/sources", json=wiki_source(wiki)).json()
    answer = http.post(
        f"{API}/workflows",
        json={
            "name": "wiki every 15 minutes",
            "workflow_type": "custom",
            "source_id": source["id"],
            "schedule": "every 15 minutes",
            "workflow_nodes": NODES,
        },
    )
    assert answer.status_code == 200, answer.text
    workflow = answer.json()
    assert workflow["schedule"]["crontab_entries"][0]["cron_expression"]

    # watch the workflow's jobs until two have finished: never two unfinished at once
    seen: dict[str, dict[str, Any]] = {}
    end = time.monotonic() + 180  # a deadline only: runs take what the machine gives them
    while True:
        jobs = jobs_of(http, workflow["id"])
        unfinished = [j["id"] for j in jobs if j["status"] in ACTIVE]
        assert len(unfinished) <= 1, jobs
        seen.update({j["id"]: j for j in jobs})
        if sum(j["status"] == "COMPLETED" for j in jobs) >= 2:
            break
        assert time.monotonic() < end, jobs
        time.sleep(0.1)
    assert {j["job_type"] for j in seen.values()} == {"scheduled"}

    # finished jobs, oldest first: each was created after the one before had ended
    finished = sorted(
        (j for j in jobs_of(http, workflow["id"]) if j["status"] not in ACTIVE),
        key=lambda j: j["created_at"],
    )
    assert all(j["status"] == "COMPLETED" for j in finished), finished
    for before, after in itertools.pairwise(finished):
        ended = datetime.fromisoformat(before["created_at"]) + runtime(before)
        assert datetime.fromisoformat(after["created_at"]) >= ended, (before, after)
    details = http.get(f"{API}/jobs/{finished[0]['id']}/details").json()
    assert details["node_stats"][0]["success"] == 3  # the wiki's three pages

    # delete it: refused while a run is unfinished, so try until it goes between two runs
    end = time.monotonic() + 120  # a deadline only: a gap comes once a run ends
    while True:
        answer = http.delete(f"{API}/workflows/{workflow['id']}")
        if answer.status_code == 200:
            break
        assert answer.status_code == 409, answer.text
        assert time.monotonic() < end, "the workflow could not be deleted"
        time.sleep(0.05)

    # no firing afterwards: the scheduler no longer follows it (a firing already on its way
    # finds no trigger), and any run under way when it went finishes
    schedules = server.app.state.ingestflow.schedules
    end = time.monotonic() + 120
    while workflow["id"] in schedules.scheduled() or schedules.scheduler.get_job(workflow["id"]):
        assert time.monotonic() < end, "the deleted workflow is still scheduled"
        time.sleep(0.05)
    while any(j["status"] in ACTIVE for j in jobs_of(http, workflow["id"])):
        assert time.monotonic() < end, "a run after deletion did not finish"
        time.sleep(0.1)
    count = len(jobs_of(http, workflow["id"]))
    assert schedules.fire(workflow["id"]) is None  # what a late firing would do: nothing
    assert len(jobs_of(http, workflow["id"])) == count
    assert http.get(f"{API}/workflows/{workflow['id']}").status_code == 404
