"""`GET /jobs/{id}/download?format=markdown` over real loopback HTTP: the file as Markdown
(`text/markdown`), after the output node or a kept one; JSON stays the default; documented."""

from __future__ import annotations

from tests.server.conftest import API, Server, two_files


def test_a_file_downloads_as_markdown(server: Server) -> None:
    http = server.client()
    answer = http.post(
        f"{API}/jobs",
        data={"request_data": '{"template_id": "fast_partition"}'},
        files=two_files(),
    )
    assert answer.status_code == 200, answer.text
    job = server.wait_job(answer.json()["id"])
    assert job["status"] == "COMPLETED", job
    node_id = job["output_node_files"][0]["node_id"]
    url = f"{API}/jobs/{job['id']}/download"
    params = {"file_id": "notes.md"}  # a file's name does as its id

    page = http.get(url, params={**params, "format": "markdown"})
    assert page.status_code == 200, page.text
    assert page.headers["content-type"] == "text/markdown; charset=utf-8"
    assert page.text == (
        "# Notes\n\nThe launch checklist is short.\n\n## Room\n\nBook the big room early.\n"
    )
    node = http.get(url, params={**params, "format": "markdown", "node_id": node_id})
    assert node.status_code == 200 and node.text == page.text

    elements = http.get(url, params=params)  # no format: the elements, as before
    assert elements.headers["content-type"] == "application/json"
    assert [e["text"] for e in elements.json()][:2] == ["Notes", "The launch checklist is short."]

    wrong = http.get(url, params={**params, "format": "xml"})
    assert wrong.status_code == 422
    (problem,) = wrong.json()["detail"]
    assert problem["loc"] == ["query", "format"] and "'json' or 'markdown'" in problem["msg"]
    missing = http.get(url, params={"file_id": "nope", "format": "markdown"})
    assert missing.status_code == 404 and "'nope' is not in job" in missing.json()["detail"]


def test_the_markdown_answer_is_documented(server: Server) -> None:
    doc = server.client().get("/openapi.json").json()
    operation = doc["paths"][f"{API}/jobs/{{job_id}}/download"]["get"]
    (fmt,) = [p for p in operation["parameters"] if p["name"] == "format"]
    assert fmt["in"] == "query" and fmt["schema"]["enum"] == ["json", "markdown"]
    assert fmt["schema"]["default"] == "json"
    content = operation["responses"]["200"]["content"]
    assert content["text/markdown"]["schema"] == {"type": "string"}
    assert content["application/json"]["schema"]["type"] == "array"  # the SDK's answer kept
