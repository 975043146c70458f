"""Re-runs of uploaded files through the API into Milvus Lite: an upload is one document of its
workflow (its name within the workflow), so a re-run replaces its rows as a unit, or skips it
when it is unchanged and `reprocess_all` is false."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from ingestflow.service import Service
from tests.runner.test_vectordb_kill import cli_here, release
from tests.server.conftest import API, DOC_A, DOC_B, NODES, Server, Servers, local_workflow

EMBEDDER = {
    "name": "Embedder",
    "type": "embed",
    "subtype": "ibm",
    "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
}
CHANGED_A = b"Release plan\n\nShip the beta in May. The team reviews the plan every day.\n"


def rows(db: Path) -> list[tuple[str, str]]:
    """Every (record_id, text) row of the collection, sorted. A .db is open in one process at a
    time: read here between jobs (each job's process opens the .db while it runs, and holds it
    until that process has ended, a moment after the job is recorded as finished), then let go."""
    from pymilvus import MilvusClient
    from pymilvus.exceptions import ConnectionConfigException

    deadline = time.monotonic() + 120
    while True:
        try:
            client = MilvusClient(str(db))
            break
        except ConnectionConfigException as exc:
            release(db)
            assert time.monotonic() < deadline, f"{db} stayed open in another process: {exc}"
            time.sleep(0.2)
    try:
        client.load_collection("elements")
        found = client.query(
            "elements", filter="", output_fields=["record_id", "text"], limit=10000
        )
    finally:
        client.close()
        release(db)
    return sorted((r["record_id"], r["text"]) for r in found)


def milvus_workflow(server: Server, http: httpx.Client, reprocess_all: bool) -> dict[str, Any]:
    """A workflow of local uploads into a fresh Milvus Lite collection of the server's workspace."""
    db = server.workspace / "milvus.db"
    made = cli_here(
        db, "vectordb", "create-collection", "--uri", str(db), "--collection", "elements"
    )
    assert made.exit_code == 0, made.output
    config = {"uri": str(db), "user": "", "password": "", "db_name": ""}
    config["collection_name"] = "elements"
    destination = http.post(
        f"{API}/destinations", json={"name": "lite", "type": "vectordb", "config": config}
    )
    assert destination.status_code == 200, destination.text
    body = {
        "name": f"uploads to milvus ({reprocess_all})",
        "workflow_type": "custom",
        "destination_id": destination.json()["id"],
        "reprocess_all": reprocess_all,
        "workflow_nodes": [*NODES, EMBEDDER],
    }
    workflow = http.post(f"{API}/workflows", json=body)
    assert workflow.status_code == 200, workflow.text
    return workflow.json()


def run(server: Server, http: httpx.Client, workflow: dict[str, Any], *files: Any) -> str:
    """Run the workflow on `(name, bytes)` uploads to its end; the job's id."""
    parts = [("input_files", (name, data, "text/plain")) for name, data in files]
    answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=parts)
    assert answer.status_code == 202, answer.text
    job = server.wait_job(answer.json()["id"], deadline_s=300)
    details = http.get(f"{API}/jobs/{job['id']}/details").json()
    assert job["status"] == "COMPLETED", details
    return job["id"]


def statuses(server: Server, job_id: str) -> dict[str, str]:
    """Each document's outcome in a job, by file name."""
    with Service(server.workspace) as service:
        return {f["filename"]: f["status"] for f in service.jobs.get(job_id)["files"]}


@pytest.mark.slow
def test_a_rerun_of_an_upload_replaces_its_rows(server: Server) -> None:
    http = server.client()
    workflow = milvus_workflow(server, http, reprocess_all=True)
    db = server.workspace / "milvus.db"
    first_job = run(server, http, workflow, ("plan.txt", DOC_A), ("notes.md", DOC_B))
    assert statuses(server, first_job) == {"plan.txt": "SUCCESS", "notes.md": "SUCCESS"}
    first = rows(db)
    assert len({record for record, _ in first}) == 2, first

    run(server, http, workflow, ("plan.txt", DOC_A), ("notes.md", DOC_B))
    again = rows(db)
    duplicates = [text for text, n in Counter(t for _, t in again).items() if n > 1]
    assert duplicates == [], f"a re-run left rows twice: {duplicates}"
    assert again == first  # the same records, the same texts: one set of rows

    run(server, http, workflow, ("plan.txt", CHANGED_A))  # a new version of one upload
    changed = rows(db)
    plan_record = next(r for r, t in first if "beta in March" in t)
    plan_texts = [t for r, t in changed if r == plan_record]
    assert plan_texts and all("beta in May" in t for t in plan_texts), changed
    assert not [t for _, t in changed if "March" in t], "the old version's rows are still there"
    assert [row for row in changed if row[0] != plan_record] == [
        row for row in first if row[0] != plan_record
    ]  # the other upload's rows are untouched


@pytest.mark.slow
def test_an_unchanged_upload_is_skipped_when_reprocess_all_is_false(server: Server) -> None:
    http = server.client()
    workflow = milvus_workflow(server, http, reprocess_all=False)
    db = server.workspace / "milvus.db"
    first_job = run(server, http, workflow, ("plan.txt", DOC_A))
    assert statuses(server, first_job) == {"plan.txt": "SUCCESS"}
    first = rows(db)
    assert first

    second_job = run(server, http, workflow, ("plan.txt", DOC_A))
    assert statuses(server, second_job) == {"plan.txt": "SKIPPED"}
    details = http.get(f"{API}/jobs/{second_job}/details").json()
    assert [n["success"] for n in details["node_stats"]] == [0, 0, 0]
    assert rows(db) == first

    third_job = run(server, http, workflow, ("plan.txt", CHANGED_A))  # changed: processed
    assert statuses(server, third_job) == {"plan.txt": "SUCCESS"}
    assert all("beta in May" in t for _, t in rows(db))


def test_two_uploads_of_one_name_are_refused(serve: Servers) -> None:
    server = serve(background=False)
    http = server.client()
    workflow = http.post(f"{API}/workflows", json=local_workflow("same names")).json()
    files = [
        ("input_files", ("plan.txt", DOC_A, "text/plain")),
        ("input_files", ("drafts/plan.txt", DOC_B, "text/plain")),  # its name is plan.txt too
    ]
    answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=files)
    assert answer.status_code == 422, answer.text
    (problem,) = answer.json()["detail"]
    assert problem["loc"] == ["body", "input_files"]
    assert "two files are named 'plan.txt'" in problem["msg"] and "rename" in problem["msg"]
    assert http.get(f"{API}/jobs").json() == []
    assert not list((server.workspace / "uploads").rglob("*.txt"))  # nothing stored
