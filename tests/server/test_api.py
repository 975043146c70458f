"""The REST API over real loopback HTTP with plain httpx: auth, paths, every 422 rule, error
shapes, uploads, jobs, connection checks, concurrency. No body ever carries a stored secret or a
traceback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ingestflow.service import Service, UploadLimits
from tests.fakes.confluence import FakeConfluence, Fault
from tests.server.conftest import (
    API,
    NODES,
    SECRETS,
    WIKI_TOKEN,
    Server,
    Servers,
    local_workflow,
    two_files,
    wiki_source,
)

SMALL = UploadLimits(max_files=3, max_file_bytes=1000)
EMBEDDER = {
    "name": "Embedder",
    "type": "embed",
    "subtype": "ibm",
    "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
}


@pytest.fixture(autouse=True)
def no_leaks(serve: Servers) -> Iterator[None]:
    """After each test: no response body carried a stored secret or a traceback."""
    yield
    for body in serve.bodies():
        assert "Traceback" not in body, body
        for secret in SECRETS:
            assert secret not in body, body


def assert_422(answer: httpx.Response, *loc_tail: str | int) -> list[dict[str, Any]]:
    """A 422 in FastAPI's shape, one of whose problems has a loc ending with `loc_tail`."""
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert isinstance(detail, list) and detail
    for problem in detail:
        assert set(problem) == {"loc", "msg", "type"}, problem
        assert isinstance(problem["loc"], list) and problem["loc"][0] in ("body", "query", "path")
        assert isinstance(problem["msg"], str) and problem["msg"]
        assert isinstance(problem["type"], str) and problem["type"]
    n = len(loc_tail)
    assert any(tuple(p["loc"][-n:]) == loc_tail for p in detail), detail
    return detail


def assert_detail(answer: httpx.Response, status: int) -> str:
    """An error answer with a plain string `detail`."""
    assert answer.status_code == status, answer.text
    detail = answer.json()["detail"]
    assert isinstance(detail, str) and detail
    return detail


def create(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    answer = http.post(f"{API}/workflows", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


# --- auth -----------------------------------------------------------------------------------


def test_auth(server: Server) -> None:
    for http in (server.client(key=""), server.client(key="ifk_not-a-key")):
        answer = http.get(f"{API}/workflows")
        assert "API key" in assert_detail(answer, 401)
    assert server.client(key="").get(f"{API}/jobs/whatever").status_code == 401
    assert server.client(key="").post(f"{API}/workflows", json={}).status_code == 401

    for header in ("service-api-key", "unstructured-api-key"):
        assert server.client(header=header).get(f"{API}/workflows").status_code == 200

    with Service(server.workspace) as service:
        record, other = service.keys.create("second")
    second = server.client(key=other, header="unstructured-api-key")
    assert second.get(f"{API}/workflows").status_code == 200
    with Service(server.workspace) as service:
        service.keys.revoke(record.id)
    assert_detail(second.get(f"{API}/workflows"), 401)
    assert server.client().get(f"{API}/workflows").status_code == 200  # the first still works


# --- paths ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/workflows", "/jobs", "/sources", "/destinations", "/templates"])
def test_both_slash_spellings_without_redirect(server: Server, path: str) -> None:
    http = server.client()
    for spelled in (API + path, API + path + "/"):
        answer = http.get(spelled, follow_redirects=False)
        assert answer.status_code == 200, (spelled, answer.status_code)
        assert isinstance(answer.json(), list)


def test_doubled_prefix_gets_a_hint(server: Server) -> None:
    detail = assert_detail(server.client().get(f"{API}/api/v1/workflows"), 404)
    assert "/api/v1 twice" in detail
    assert "/api/v1" in assert_detail(server.client().get("/workflows"), 404)


def test_not_found_bodies_are_strings(server: Server) -> None:
    http = server.client()
    for path in (
        "/workflows/no-such-id",
        "/jobs/no-such-id",
        "/jobs/no-such-id/details",
        "/sources/no-such-id",
        "/destinations/no-such-id",
        "/templates/no_such_template",
    ):
        assert "not found" in assert_detail(http.get(API + path), 404).lower(), path
    assert_detail(http.delete(f"{API}/workflows/no-such-id"), 404)


# --- 422 rules ------------------------------------------------------------------------------


def test_duplicate_workflow_name(server: Server) -> None:
    http = server.client()
    create(http, local_workflow("twice"))
    assert_422(http.post(f"{API}/workflows", json=local_workflow("twice")), "body", "name")
    other = create(http, local_workflow("other"))
    answer = http.put(f"{API}/workflows/{other['id']}", json={"name": "twice"})
    assert_422(answer, "body", "name")


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({**local_workflow("scheduled"), "schedule": "every 15 minutes"}, "schedule"),
        ({"name": "template", "workflow_type": "template"}, "template_id"),
        (
            {"name": "template", "workflow_type": "template", "template_id": "nope"},
            "template_id",
        ),
        ({**local_workflow("basic"), "workflow_type": "basic"}, "workflow_type"),
        ({**local_workflow("wiki"), "source_id": "no-such-source"}, "source_id"),
        (
            {**local_workflow("lake"), "destination_id": "no-such-destination"},
            "destination_id",
        ),
    ],
    ids=[
        "local-with-schedule",
        "template-without-id",
        "unknown-template",
        "deprecated-basic",
        "unknown-source",
        "unknown-destination",
    ],
)
def test_create_rules(server: Server, body: dict[str, Any], loc: str) -> None:
    http = server.client()
    assert_422(http.post(f"{API}/workflows", json=body), "body", loc)
    assert http.get(f"{API}/workflows").json() == []


def test_chunk_size_over_the_embedders_limit(server: Server) -> None:
    nodes = [NODES[0], {**NODES[1], "settings": {"max_characters": 5000}}, EMBEDDER]
    answer = server.client().post(f"{API}/workflows", json=local_workflow("embed", nodes))
    detail = assert_422(answer, "body", "workflow_nodes", 1, "settings", "max_characters")
    assert any("all-minilm-l6-v2" in p["msg"] for p in detail)


def test_update_is_checked_whole(server: Server) -> None:
    http = server.client()
    workflow = create(http, local_workflow("kept"))
    answer = http.put(f"{API}/workflows/{workflow['id']}", json={"schedule": "every 15 minutes"})
    assert_422(answer, "body", "schedule")
    assert http.get(f"{API}/workflows/{workflow['id']}").json()["schedule"] is None


def test_on_demand_workflow_cannot_be_updated(serve: Servers) -> None:
    server = serve(background=False)  # the job stays SCHEDULED: its workflow exists
    http = server.client()
    answer = http.post(
        f"{API}/jobs/",
        data={"request_data": json.dumps({"job_nodes": NODES})},
        files=two_files(),
    )
    assert answer.status_code == 200, answer.text
    job = answer.json()
    assert job["job_type"] == "ephemeral" and job["status"] == "SCHEDULED"
    workflow_id = job["workflow_id"]
    assert http.get(f"{API}/workflows/{workflow_id}").status_code == 200
    assert http.get(f"{API}/workflows").json() == []  # on-demand ones are not listed
    answer = http.put(f"{API}/workflows/{workflow_id}", json={"name": "keep me"})
    assert_422(answer, "body", "workflow_id")
    # request_data names a template or lists nodes: one of them, as JSON
    for bad in ("not json", json.dumps({}), json.dumps({"template_id": "x", "job_nodes": []})):
        answer = http.post(f"{API}/jobs", data={"request_data": bad}, files=two_files())
        assert_422(answer, "body", "request_data")


def test_run_of_a_local_workflow_needs_files(server: Server) -> None:
    http = server.client()
    workflow = create(http, local_workflow("local"))
    assert_422(http.post(f"{API}/workflows/{workflow['id']}/run"), "body", "input_files")
    assert http.get(f"{API}/jobs", params={"workflow_id": workflow["id"]}).json() == []


# --- deletes ----------------------------------------------------------------------------------


def test_deletes_answer_200_with_an_object(server: Server, wiki: FakeConfluence) -> None:
    http = server.client()
    workflow = create(http, local_workflow("short-lived"))
    source = http.post(f"{API}/sources", json=wiki_source(wiki)).json()
    destination = http.post(
        f"{API}/destinations",
        json={
            "name": "lite",
            "type": "vectordb",
            "config": {
                "uri": str(server.workspace / "milvus.db"),
                "user": "",
                "password": "milvus-pa55word-s3cr3t",
                "db_name": "",
                "collection_name": "elements",
            },
        },
    ).json()
    assert destination["config"]["password"] == "********"
    for path in (
        f"/workflows/{workflow['id']}",
        f"/sources/{source['id']}",
        f"/destinations/{destination['id']}/",
    ):
        answer = http.delete(API + path)
        assert answer.status_code == 200, answer.text
        assert isinstance(answer.json(), dict) and answer.json()["detail"]
        assert_detail(http.get(API + path), 404)


# --- uploads ----------------------------------------------------------------------------------


def test_upload_names_cannot_leave_the_workspace(serve: Servers, tmp_path: Path) -> None:
    server = serve(background=False, limits=SMALL)
    http = server.client()
    workflow = create(http, local_workflow("uploads"))
    outside = tmp_path / "outside"
    files = [
        ("input_files", ("../../x.txt", b"one", "text/plain")),
        ("input_files[]", ("..\\..\\y.txt", b"two", "text/plain")),
        ("input_files", (str(outside / "z.txt"), b"three", "text/plain")),
    ]
    answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=files)
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["id"]
    folder = (server.workspace / "uploads" / job_id).resolve()
    landed = {p.name: p for p in tmp_path.rglob("*.txt")}
    assert set(landed) == {"x.txt", "y.txt", "z.txt"}
    for path in landed.values():
        assert path.resolve().is_relative_to(folder), path
    assert landed["x.txt"].read_bytes() == b"one"
    assert not outside.exists()
    assert not (Path.cwd().parent.parent / "x.txt").exists()  # "../../x.txt" from the cwd


@pytest.mark.parametrize(
    "count",
    [
        4,
        10,
    ],
)
def test_too_many_files(serve: Servers, count: int) -> None:
    server = serve(background=False, limits=SMALL)
    http = server.client()
    workflow = create(http, local_workflow("many"))
    files = [("input_files", (f"f{i}.txt", b"x", "text/plain")) for i in range(count)]
    answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=files)
    detail = assert_422(answer, "body", "input_files")
    assert any("at most 3" in p["msg"] for p in detail)
    assert http.get(f"{API}/jobs").json() == []
    assert not list((server.workspace / "uploads").rglob("f*.txt"))


def test_a_file_over_the_limit_is_413(serve: Servers) -> None:
    server = serve(background=False, limits=SMALL)
    http = server.client()
    workflow = create(http, local_workflow("big"))
    files = [
        ("input_files", ("small.txt", b"fine", "text/plain")),
        ("input_files", ("big.txt", b"x" * 1500, "text/plain")),
    ]
    detail = assert_detail(http.post(f"{API}/workflows/{workflow['id']}/run", files=files), 413)
    assert "big.txt" in detail and "larger than" in detail
    assert http.get(f"{API}/jobs").json() == []
    assert not list((server.workspace / "uploads").rglob("*.txt"))  # nothing half-kept
    # a body far over what the limits allow is refused before it is read
    huge = [("input_files", ("huge.txt", b"x" * (2 << 20), "text/plain"))]
    detail = assert_detail(http.post(f"{API}/workflows/{workflow['id']}/run", files=huge), 413)
    assert "at most 3 files" in detail


def test_the_413_message_states_the_real_limit(serve: Servers) -> None:
    server = serve(background=False, limits=SMALL)
    http = server.client()
    workflow = create(http, local_workflow("big"))
    files = [("input_files", ("big.txt", b"x" * 1500, "text/plain"))]
    detail = assert_detail(http.post(f"{API}/workflows/{workflow['id']}/run", files=files), 413)
    assert "0 MB" not in detail and "1000" in detail


# --- jobs -------------------------------------------------------------------------------------


def test_jobs_list_filters_and_cancel(serve: Servers) -> None:
    server = serve(background=False)  # jobs stay SCHEDULED until cancelled
    http = server.client()
    first = create(http, local_workflow("first"))
    second = create(http, local_workflow("second"))
    jobs: dict[str, list[str]] = {}
    for workflow in (first, first, second):
        answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=two_files())
        assert answer.status_code == 202, answer.text
        jobs.setdefault(workflow["name"], []).append(answer.json()["id"])
    stopped = jobs["first"][0]
    answer = http.post(f"{API}/jobs/{stopped}/cancel")
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    assert http.get(f"{API}/jobs/{stopped}").json()["status"] == "STOPPED"
    assert "already finished" in assert_detail(http.post(f"{API}/jobs/{stopped}/cancel"), 409)

    def ids(**params: str) -> set[str]:
        answer = http.get(f"{API}/jobs/", params=params)
        assert answer.status_code == 200, answer.text
        return {j["id"] for j in answer.json()}

    assert ids() == {*jobs["first"], *jobs["second"]}
    assert ids(workflow_id=first["id"]) == set(jobs["first"])
    assert ids(workflow_id=second["id"]) == set(jobs["second"])
    assert ids(status="STOPPED") == {stopped}
    assert ids(status="SCHEDULED") == {jobs["first"][1], *jobs["second"]}
    assert ids(workflow_id=first["id"], status="SCHEDULED") == {jobs["first"][1]}
    assert ids(workflow_id=second["id"], status="STOPPED") == set()
    assert ids(status="COMPLETED") == set()
    assert_422(http.get(f"{API}/jobs", params={"status": "DONE"}), "query", "status")
    # a workflow with a job scheduled cannot be deleted
    assert_detail(http.delete(f"{API}/workflows/{second['id']}"), 409)


@pytest.mark.slow
def test_cancel_of_a_finished_job_is_409(server: Server) -> None:
    http = server.client()
    workflow = create(http, local_workflow("done"))
    answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=two_files("input_files[]"))
    assert answer.status_code == 202, answer.text
    job = server.wait_job(answer.json()["id"])
    assert job["status"] == "COMPLETED", http.get(f"{API}/jobs/{job['id']}/details").json()
    assert "already finished" in assert_detail(http.post(f"{API}/jobs/{job['id']}/cancel"), 409)
    assert http.get(f"{API}/jobs/{job['id']}").json()["status"] == "COMPLETED"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("request_data", "nodes"),
    [
        pytest.param(
            {"template_id": "fast_partition"},
            [("Partitioner", "unstructured_api", 2)],
            id="template",
        ),
        pytest.param(
            {"job_nodes": NODES},
            [("Partitioner", "unstructured_api", 2), ("Chunker", "chunk_by_title", 2)],
            id="job-nodes",
        ),
    ],
)
def test_on_demand_job_completes_and_its_workflow_goes(
    server: Server, request_data: dict[str, Any], nodes: list[tuple[str, str, int]]
) -> None:
    http = server.client()
    answer = http.post(
        f"{API}/jobs", data={"request_data": json.dumps(request_data)}, files=two_files()
    )
    assert answer.status_code == 200, answer.text
    started = answer.json()
    assert started["job_type"] == "ephemeral"
    job = server.wait_job(started["id"])
    assert job["status"] == "COMPLETED"
    details = http.get(f"{API}/jobs/{job['id']}/details").json()
    assert details["processing_status"] == "SUCCESS"
    assert [(n["node_name"], n["node_subtype"], n["success"]) for n in details["node_stats"]] == (
        nodes
    )
    progress = details["progress"]  # the live counts the runner keeps in the job record
    assert (progress["found"], progress["written"], progress["left"]) == (2, 2, 0)
    assert len(job["output_node_files"]) == 2 * len(nodes)
    for entry in job["output_node_files"]:
        elements = http.get(
            f"{API}/jobs/{job['id']}/download",
            params={"file_id": entry["file_id"], "node_id": entry["node_id"]},
        ).json()
        assert elements and all(e["text"] for e in elements)
    assert_detail(http.get(f"{API}/workflows/{started['workflow_id']}"), 404)
    assert http.get(f"{API}/workflows").json() == []
    assert [j["id"] for j in http.get(f"{API}/jobs").json()] == [job["id"]]


# --- connection checks ------------------------------------------------------------------------


def test_connection_check_of_a_wiki_source(server: Server, wiki: FakeConfluence) -> None:
    http = server.client()
    source = http.post(f"{API}/sources/", json=wiki_source(wiki)).json()
    assert source["config"]["token"] == "********"
    assert_detail(http.get(f"{API}/sources/{source['id']}/connection-check"), 404)

    def check() -> dict[str, Any]:
        answer = http.post(f"{API}/sources/{source['id']}/connection-check")
        assert answer.status_code == 202, answer.text
        assert answer.json()["status"] in ("SCHEDULED", "SUCCESS", "FAILURE")
        end = time.monotonic() + 30
        while True:
            answer = http.get(f"{API}/sources/{source['id']}/connection-check")
            assert answer.status_code == 200, answer.text
            if answer.json()["status"] != "SCHEDULED":
                return answer.json()
            assert time.monotonic() < end, "the check stayed SCHEDULED"
            time.sleep(0.1)

    done = check()
    assert done["status"] == "SUCCESS" and done["reported_at"]
    answer = http.put(
        f"{API}/sources/{source['id']}", json={"config": {**source["config"], "spaces": ["NOPE"]}}
    )
    assert answer.status_code == 200, answer.text
    failed = check()
    assert failed["status"] == "FAILURE" and "NOPE" in failed["reason"]
    assert wiki.requests_to("/rest/api/space/*")  # the checks did reach the wiki


# --- concurrency ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_hundred_concurrent_reads_while_a_job_runs(server: Server, wiki: FakeConfluence) -> None:
    http = server.client()
    wiki.inject("/rest/api/content", Fault.slow(3.0, times=None))  # the crawl takes a while
    source = http.post(f"{API}/sources", json=wiki_source(wiki)).json()
    workflow = create(http, {**local_workflow("from wiki"), "source_id": source["id"]})
    answer = http.post(f"{API}/workflows/{workflow['id']}/run")
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["id"]
    end = time.monotonic() + 60
    while http.get(f"{API}/jobs/{job_id}").json()["status"] == "SCHEDULED":
        assert time.monotonic() < end, "the job did not start"
        time.sleep(0.1)

    paths = [
        f"{API}/jobs/{job_id}",
        f"{API}/jobs/{job_id}/details",
        f"{API}/jobs?workflow_id={workflow['id']}",
        f"{API}/workflows/{workflow['id']}",
        f"{API}/workflows/",
        f"{API}/sources/{source['id']}",
        f"{API}/templates",
    ]
    shared = server.client(limits=httpx.Limits(max_connections=100))
    barrier = threading.Barrier(100)
    answers: list[httpx.Response | BaseException] = [None] * 100  # type: ignore[list-item]

    def read(number: int) -> None:
        try:
            barrier.wait(timeout=30)
            answers[number] = shared.get(paths[number % len(paths)])
        except BaseException as exc:
            answers[number] = exc

    threads = [threading.Thread(target=read, args=(n,)) for n in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    failures = [
        a if isinstance(a, BaseException) else f"{a.request.url}: {a.status_code} {a.text}"
        for a in answers
        if isinstance(a, BaseException) or a.status_code != 200
    ]
    assert failures == []
    statuses = {a.json()["status"] for a in answers[:: len(paths)] if isinstance(a, httpx.Response)}
    assert "IN_PROGRESS" in statuses  # the reads overlapped the running job
    job = server.wait_job(job_id)
    assert job["status"] == "COMPLETED", http.get(f"{API}/jobs/{job_id}/details").json()
    assert WIKI_TOKEN not in json.dumps(job)
