"""Deletions through the API: a page removed from the wiki leaves the Milvus Lite collection on
the next run of an incremental workflow, counted in the job's details; `?keep_deleted=true` on
the run request keeps it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ingestflow.service import Service
from tests.fakes.confluence import FakeConfluence
from tests.runner.test_vectordb_kill import cli_here
from tests.server.conftest import API, NODES, Server, wiki_source
from tests.server.test_reruns import EMBEDDER, rows

pytestmark = pytest.mark.slow


def _workflow(server: Server, http: httpx.Client, wiki: FakeConfluence) -> dict[str, Any]:
    """An incremental workflow from the fake wiki into a fresh Lite collection."""
    db = server.workspace / "milvus.db"
    made = cli_here(
        db, "vectordb", "create-collection", "--uri", str(db), "--collection", "elements"
    )
    assert made.exit_code == 0, made.output
    config = {"uri": str(db), "user": "", "password": "", "db_name": ""}
    config["collection_name"] = "elements"
    destination = http.post(
        f"{API}/destinations", json={"name": "lite", "type": "vectordb", "config": config}
    ).json()
    source = http.post(f"{API}/sources", json=wiki_source(wiki)).json()
    body = {
        "name": "wiki to milvus",
        "workflow_type": "custom",
        "source_id": source["id"],
        "destination_id": destination["id"],
        "reprocess_all": False,
        "workflow_nodes": [*NODES, EMBEDDER],
    }
    workflow = http.post(f"{API}/workflows", json=body)
    assert workflow.status_code == 200, workflow.text
    return workflow.json()


def _run(server: Server, http: httpx.Client, workflow_id: str, query: str = "") -> dict[str, Any]:
    """Run the workflow to its end; the job's details."""
    answer = http.post(f"{API}/workflows/{workflow_id}/run{query}")
    assert answer.status_code == 202, answer.text
    job = server.wait_job(answer.json()["id"], deadline_s=300)
    details = http.get(f"{API}/jobs/{job['id']}/details").json()
    assert job["status"] == "COMPLETED", details
    return details


def test_a_page_removed_from_the_wiki_leaves_milvus_unless_kept(
    server: Server, wiki: FakeConfluence
) -> None:
    http = server.client()
    workflow = _workflow(server, http, wiki)
    db = server.workspace / "milvus.db"
    first = _run(server, http, workflow["id"])
    assert first["deleted"] == 0
    with Service(server.workspace) as service:
        ids = {f["filename"]: f["file_id"] for f in service.jobs.get(first["id"])["files"]}
    before = rows(db)
    assert {r for r, _ in before} == set(ids.values()) and len(ids) == 3
    (beta,) = [record for name, record in ids.items() if "beta" in name]
    del wiki.pages["102"]  # Beta leaves the space
    kept = _run(server, http, workflow["id"], "?keep_deleted=true")
    assert kept["deleted"] == 0
    assert rows(db) == before
    removed = _run(server, http, workflow["id"])
    assert removed["deleted"] == 1
    assert "1 document(s) that left the source were removed" in removed["message"]
    assert rows(db) == [row for row in before if row[0] != beta]
