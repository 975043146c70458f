"""Requests that race over real HTTP: a run submitted while its workflow is deleted."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import httpx

from tests.server.conftest import API, Server, Servers, local_workflow, two_files

ROUNDS = 25


def race(server: Server, path: str) -> tuple[httpx.Response, httpx.Response]:
    """POST `path`/run and DELETE `path` at the same moment, each on its own connection."""
    start = threading.Barrier(2)
    answers: dict[str, httpx.Response] = {}

    def call(name: str, method: str, url: str, **kwargs: Any) -> None:
        with server.client() as own:
            start.wait(timeout=30)
            answers[name] = own.request(method, url, **kwargs)

    threads = [
        threading.Thread(
            target=call, args=("run", "POST", f"{path}/run"), kwargs={"files": two_files()}
        ),
        threading.Thread(target=call, args=("delete", "DELETE", path)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), "a request did not answer within 60 s"
    return answers["run"], answers["delete"]


def test_run_and_delete_of_a_workflow_never_both_succeed(serve: Servers) -> None:
    server = serve(background=False)  # a submitted job stays SCHEDULED: the delete must see it
    http = server.client()
    outcomes: Counter[tuple[int, int]] = Counter()
    accepted: set[str] = set()
    for round_number in range(ROUNDS):
        workflow = http.post(f"{API}/workflows", json=local_workflow(f"race {round_number}"))
        assert workflow.status_code == 200, workflow.text
        path = f"{API}/workflows/{workflow.json()['id']}"
        run, delete = race(server, path)
        outcome = (run.status_code, delete.status_code)
        outcomes[outcome] += 1
        assert outcome in ((202, 409), (404, 200)), (
            f"round {round_number}: run answered {run.status_code} ({run.text}), delete "
            f"{delete.status_code} ({delete.text}); exactly one of them must win"
        )
        jobs = http.get(f"{API}/jobs", params={"workflow_id": workflow.json()["id"]}).json()
        assert len(jobs) == (1 if run.status_code == 202 else 0), jobs
        assert http.get(path).status_code == (200 if run.status_code == 202 else 404)
        if run.status_code == 202:
            accepted.add(run.json()["id"])
        else:
            assert "not found" in run.json()["detail"]
        # a refused run keeps none of its files
        assert {p.name for p in (server.workspace / "uploads").glob("*")} == accepted
    print(f"outcomes (run, delete): {dict(outcomes)}")
