"""Uploads as elements downloaded through the REST API (real loopback HTTP) name them: each
element says which job's upload it came from and its file name (`upload://<job>/<name>`), never
where the server keeps it; the same name uploaded again is the same record."""

from __future__ import annotations

import json
from typing import Any

from tests.server.conftest import API, DOC_B, Server, local_workflow


def elements_of(server: Server, job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every element of every node's output of a finished job, downloaded."""
    http = server.client()
    out = []
    for entry in job["output_node_files"]:
        answer = http.get(
            f"{API}/jobs/{job['id']}/download",
            params={"file_id": entry["file_id"], "node_id": entry["node_id"]},
        )
        assert answer.status_code == 200, answer.text
        out.extend(answer.json())
    return out


def test_downloaded_elements_name_an_upload_without_the_servers_paths(server: Server) -> None:
    http = server.client()
    workflow = http.post(f"{API}/workflows", json=local_workflow("names")).json()
    record_ids = []
    for _ in range(2):
        files = [("input_files", ("my notes.md", DOC_B, "text/markdown"))]
        answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=files)
        assert answer.status_code == 202, answer.text
        job = server.wait_job(answer.json()["id"])
        assert job["status"] == "COMPLETED", job
        elements = elements_of(server, job)
        assert elements
        text = json.dumps(elements)
        assert str(server.workspace) not in text and "file://" not in text
        for element in elements:
            source = element["metadata"]["data_source"]
            assert source["url"] == f"upload://{job['id']}/my%20notes.md", source
            assert source["record_locator"] == {
                "protocol": "upload",
                "remote_file_path": f"{job['id']}/my notes.md",
            }
        record_ids.append({entry["file_id"] for entry in job["output_node_files"]})
    assert record_ids[0] == record_ids[1]  # one document of its workflow, job after job
