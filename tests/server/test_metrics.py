"""`serve` exposes the workspace's jobs as Prometheus metrics at /metrics, behind the API keys."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.server.conftest import API, Server, local_workflow, two_files


def _metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_need_a_key_and_count_the_jobs(server: Server) -> None:
    anonymous = server.client(key="")
    assert anonymous.get("/metrics").status_code == 401
    assert server.client(key="not-a-key").get("/metrics").status_code == 401
    bearer = server.client(key=f"Bearer {server.key}", header="Authorization")
    empty = _metrics(bearer.get("/metrics").text)
    assert empty[("ingestflow_jobs", (("status", "COMPLETED"),))] == 0

    http = server.client()
    workflow = http.post(f"{API}/workflows", json=local_workflow("metrics")).json()
    bad = ("input_files", ("broken.pdf", b"%PDF-1.7 not really a pdf", "application/pdf"))
    answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=[*two_files(), bad])
    assert answer.status_code in (200, 201, 202), answer.text
    job = server.wait_job(answer.json()["id"])

    response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    seen = _metrics(response.text)
    assert seen[("ingestflow_jobs", (("status", job["status"]),))] == 1
    assert seen[("ingestflow_documents_total", (("status", "SUCCESS"),))] == 2
    assert seen[("ingestflow_documents_total", (("status", "FAILED"),))] == 1
    partition = (("subtype", "unstructured_api"), ("type", "partition"))
    assert seen[("ingestflow_node_seconds_total", partition)] > 0
    assert seen[("ingestflow_node_failures_total", partition)] == 1
    assert seen[("ingestflow_elements_total", ())] > 0
    assert server.key not in response.text
