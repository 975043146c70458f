"""GET /jobs pages like GET /workflows (`page`, `page_size`) and says when there are more, in
headers, so the body stays the bare list the official SDK reads."""

from __future__ import annotations

import re

from ingestflow.service import Service
from ingestflow.store.job_rows import NodeStats
from tests.server.conftest import API, Servers

STORED = 124  # more than one default page of 100


def _store_jobs(service: Service, count: int) -> list[str]:
    """`count` finished jobs, oldest first; their ids."""
    stats = [NodeStats("n", "Partitioner", "partition", "unstructured_api")]
    ids = []
    for number in range(count):
        job_id = service.ws.create_job("w", f"workflow {number}", "ephemeral", stats, {})
        service.ws.update_job(job_id, status="COMPLETED", processing_status="SUCCESS")
        ids.append(job_id)
    return ids


def test_jobs_are_paged_and_the_answer_says_when_there_are_more(serve: Servers) -> None:
    server = serve(background=False)
    with Service(server.workspace) as service:
        ids = _store_jobs(service, STORED)
    http = server.client()

    first = http.get(f"{API}/jobs/")
    assert first.status_code == 200, first.text
    assert isinstance(first.json(), list) and len(first.json()) == 100
    assert first.headers["x-total-count"] == str(STORED)
    link = first.headers["link"]
    next_page = r'<http://127\.0\.0\.1:\d+/api/v1/jobs/\?page=2&page_size=100>; rel="next"'
    assert re.fullmatch(next_page, link), link

    second = http.get(link[1 : link.index(">")])
    assert second.status_code == 200, second.text
    assert len(second.json()) == STORED - 100
    assert "link" not in second.headers  # the last page: no more
    seen = [j["id"] for j in first.json() + second.json()]
    assert seen == ids[::-1]  # newest first, each job once

    small = http.get(f"{API}/jobs", params={"page": 3, "page_size": 50, "status": "COMPLETED"})
    assert [j["id"] for j in small.json()] == ids[::-1][100:]
    assert small.headers["x-total-count"] == str(STORED) and "link" not in small.headers
    middle = http.get(f"{API}/jobs", params={"page": 2, "page_size": 50, "status": "COMPLETED"})
    assert "page=3" in middle.headers["link"] and "status=COMPLETED" in middle.headers["link"]
    everything = http.get(f"{API}/jobs", params={"page_size": 1000}).json()
    assert len(everything) == STORED
    beyond = http.get(f"{API}/jobs", params={"page": 9})
    assert beyond.json() == [] and "link" not in beyond.headers

    for bad in ({"page": 0}, {"page_size": 0}, {"page_size": 1001}):
        answer = http.get(f"{API}/jobs", params=bad)
        assert answer.status_code == 422, (bad, answer.text)
        assert answer.json()["detail"][0]["loc"][0] == "query"
