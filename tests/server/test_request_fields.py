"""The REST API says a run request's fields as its own: files are `input_files`."""

from __future__ import annotations

from tests.server.conftest import API, Servers, local_workflow


def test_the_rest_api_names_its_form_fields(serve: Servers) -> None:
    server = serve()
    http = server.client()
    workflow = http.post(f"{API}/workflows", json=local_workflow("local")).json()
    answer = http.post(f"{API}/workflows/{workflow['id']}/run")
    assert answer.status_code == 422, answer.text
    [problem] = answer.json()["detail"]
    assert problem["loc"] == ["body", "input_files"]
    assert "a part named `input_files`" in problem["msg"] and "inputs" not in problem["msg"]
