"""Secrets in a workflow's node settings through the REST API over real loopback HTTP: a record
read and written back keeps the stored secret, which never follows its node to another endpoint."""

from __future__ import annotations

from typing import Any

from ingestflow.service import Service
from tests.server.conftest import API, NODES, Server

KEY, CHUNK_KEY, MASK = "sk-provider-s3cr3t", "unstructured-s3cr3t", "********"


def vlm_workflow(name: str) -> dict[str, Any]:
    """A create body whose partitioner (VLM) and chunker each hold a secret."""
    vlm = {
        "name": "Partitioner",
        "type": "partition",
        "subtype": "vlm",
        "settings": {
            "is_dynamic": False,
            "provider": "openai",
            "model": "gpt-4o",
            "provider_api_key": KEY,
        },
    }
    chunker = {
        **NODES[1],
        "settings": {
            **NODES[1]["settings"],
            "unstructured_api_url": "http://127.0.0.1:9/",
            "unstructured_api_key": CHUNK_KEY,
        },
    }
    return {"name": name, "workflow_type": "custom", "workflow_nodes": [vlm, chunker]}


def stored_settings(server: Server, workflow_id: str) -> list[dict[str, Any]]:
    with Service(server.workspace) as service:
        return [n["settings"] for n in service.workflows.body(workflow_id)["workflow_nodes"]]


def test_a_workflow_record_written_back_keeps_its_node_secrets(server: Server) -> None:
    http = server.client()
    made = http.post(f"{API}/workflows", json=vlm_workflow("vlm")).json()
    record = http.get(f"{API}/workflows/{made['id']}").json()
    assert record["workflow_nodes"][0]["settings"]["provider_api_key"] == MASK
    body = {k: record[k] for k in ("workflow_type", "workflow_nodes")} | {"name": "renamed"}
    answer = http.put(f"{API}/workflows/{made['id']}", json=body)
    assert answer.status_code == 200, answer.text
    vlm, chunker = stored_settings(server, made["id"])
    assert vlm["provider_api_key"] == KEY and chunker["unstructured_api_key"] == CHUNK_KEY
    for text in server.bodies():
        assert KEY not in text and CHUNK_KEY not in text


def test_a_masked_node_secret_never_follows_its_node_to_another_endpoint(
    server: Server,
) -> None:
    http = server.client()
    made = http.post(f"{API}/workflows", json=vlm_workflow("vlm")).json()
    nodes = http.get(f"{API}/workflows/{made['id']}").json()["workflow_nodes"]
    moved = [
        {**nodes[0], "settings": {**nodes[0]["settings"], "provider": "anthropic"}},
        {**nodes[1], "settings": {**nodes[1]["settings"], "unstructured_api_url": "http://x/"}},
    ]
    answer = http.put(f"{API}/workflows/{made['id']}", json={"workflow_nodes": moved})
    assert answer.status_code == 422, answer.text
    said = {p["loc"][-1]: p["msg"] for p in answer.json()["detail"]}
    assert "`provider` changed" in said["provider_api_key"]
    assert "`unstructured_api_url` changed" in said["unstructured_api_key"]
    vlm, chunker = stored_settings(server, made["id"])
    assert vlm["provider"] == "openai" and vlm["provider_api_key"] == KEY
    assert chunker["unstructured_api_key"] == CHUNK_KEY

    # a masked secret with nothing stored behind it (a create) is refused, never stored
    answer = http.post(f"{API}/workflows", json=vlm_workflow("copy") | {"workflow_nodes": nodes})
    assert answer.status_code == 422 and "no provider_api_key is stored" in answer.text
