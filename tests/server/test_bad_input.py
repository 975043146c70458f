"""Hostile input over real loopback HTTP answers 4xx with a reason, never a 500, a traceback or
a server path; JSON bodies go through the same parse and rules as `ingestflow validate`."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.server.errors import problem_loc
from ingestflow.spec.problems import Problem
from tests.server.conftest import API, Server, Servers, local_workflow, two_files

JSON = {"content-type": "application/json"}


@pytest.fixture
def quiet(serve: Servers, tmp_path: Path) -> Iterator[Server]:
    """A server that launches nothing; afterwards, no body it sent held a traceback or a path
    of this machine."""
    served = serve(background=False)
    yield served
    for body in served.bodies():
        assert "Traceback" not in body and str(tmp_path) not in body, body


def assert_422(answer: httpx.Response, loc: list[str | int], words: str) -> None:
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert any(p["loc"] == loc and words in p["msg"] for p in detail), detail


# --- D7: four requests that answered 500 ------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["é" * 200 + ".txt", "a" * 300 + ".pdf", "🙂" * 100 + ".md", "名" * 90 + "x.tar.gz"],
    ids=["2-byte", "ascii", "4-byte", "cjk"],
)
def test_an_upload_name_over_255_bytes_is_cut_to_fit_keeping_its_extension(
    quiet: Server, name: str
) -> None:
    http = quiet.client()
    workflow = http.post(f"{API}/workflows", json=local_workflow("long names")).json()
    files = [("input_files", (name, b"A short note.", "text/plain"))]
    answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=files)
    assert answer.status_code == 202, answer.text
    (stored,) = (quiet.workspace / "uploads" / answer.json()["id"]).rglob("*.*")
    assert stored.read_bytes() == b"A short note."
    assert len(stored.name.encode()) <= 255
    suffix = ".gz" if name.endswith(".gz") else Path(name).suffix
    assert stored.name.endswith(suffix)
    assert name.startswith(stored.name.removesuffix(suffix))


def test_request_data_nested_100000_deep_is_422(quiet: Server) -> None:
    deep = '{"job_nodes": ' + "[" * 100_000 + "]" * 100_000 + "}"
    answer = quiet.client().post(f"{API}/jobs", data={"request_data": deep}, files=two_files())
    assert_422(answer, ["body", "request_data"], "nested more than 64 levels")


@pytest.mark.parametrize(
    ("request_data", "loc"),
    [
        ('{"template_id": "\\ud800"}', ["body", "request_data", "template_id"]),
        ('{"job_nodes": [{"name": "\\udc80"}]}', ["body", "request_data", "job_nodes", 0, "name"]),
        ('{"\\ud800": 1, "template_id": "fast_partition"}', ["body", "request_data"]),
    ],
    ids=["value", "nested", "key"],
)
def test_request_data_with_a_lone_surrogate_is_422(
    quiet: Server, request_data: str, loc: list[str | int]
) -> None:
    answer = quiet.client().post(
        f"{API}/jobs", data={"request_data": request_data}, files=two_files()
    )
    assert_422(answer, loc, "not valid Unicode")


@pytest.fixture(params=["UTC", "America/New_York", "Pacific/Kiritimati"])
def zone(request: pytest.FixtureRequest) -> Iterator[str]:
    """The process's local time zone for one test (the server runs in this process)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    try:
        yield request.param
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.mark.parametrize(
    ("field", "value", "kept"),
    [
        ("created_since", "0001-01-01", True),
        ("created_since", "0001-01-01T00:00:00+14:00", True),
        ("created_since", "9999-12-31T23:59:59.999999", False),
        ("created_before", "0001-01-01T00:00:00", False),
        ("created_before", "9999-12-31", True),
        ("created_before", "9999-12-31T23:59:59-14:00", True),
    ],
)
def test_a_date_at_the_ends_of_the_calendar_filters(
    quiet: Server, zone: str, field: str, value: str, kept: bool
) -> None:
    """Naive times are local: year 1 or 9999 is a plain bound, not an overflow (it was a 500),
    whatever the server's time zone (west of UTC, 9999-12-31 local is in year 10000 in UTC)."""
    http = quiet.client()
    http.post(f"{API}/workflows", json=local_workflow("dated"))
    answer = http.get(f"{API}/workflows", params={field: value})
    assert answer.status_code == 200, answer.text
    assert [w["name"] for w in answer.json()] == (["dated"] if kept else [])


def test_an_unexpected_failure_is_a_generic_500_without_a_path(quiet: Server) -> None:
    http = quiet.client()
    workflow = http.post(f"{API}/workflows", json=local_workflow("damaged")).json()
    (quiet.workspace / "uploads").write_text("a file where the uploads folder should be")
    answer = http.post(f"{API}/workflows/{workflow['id']}/run", files=two_files())
    assert answer.status_code == 500, answer.text
    detail = answer.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail
    assert "internal error" in detail and "log" in detail
    assert "/" not in detail and "Errno" not in detail, detail


# --- D11: one parse and one set of rules for the API and `ingestflow validate` -----------------

NODE = {"name": "P", "type": "partition", "subtype": "unstructured_api"}
HOSTILE = {
    "duplicate-top-key": '{"name": "a", "name": "b", "workflow_type": "custom", '
    '"workflow_nodes": [{"name": "P", "type": "partition", "subtype": "unstructured_api", '
    '"settings": {"strategy": "fast"}}]}',
    "duplicate-nested-key": '{"name": "a", "workflow_type": "custom", "workflow_nodes": '
    '[{"name": "P", "type": "partition", "subtype": "unstructured_api", '
    '"settings": {"strategy": "fast", "strategy": "hi_res"}}]}',
    "nul-in-workflow-name": json.dumps(local_workflow("a\u0000b")),
    "nul-in-node-name": json.dumps(
        local_workflow("n", [{**NODE, "name": "P\u0000", "settings": {"strategy": "fast"}}])
    ),
    "lone-surrogate": '{"name": "x\\udc80", "workflow_type": "custom"}',
    "deep": "[" * 100_000 + "]" * 100_000,
    "malformed": '{"name": "a",, }',
    "empty": "",
}


def validate_problems(tmp_path: Path, raw: bytes) -> list[Problem]:
    """The problems `ingestflow validate --json` reports for a file holding `raw`."""
    path = tmp_path / "workflow.json"
    path.write_bytes(raw)
    result = CliRunner().invoke(app, ["validate", "--json", str(path)])
    return [Problem(**p) for p in json.loads(result.stdout)["problems"]]


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_api_and_validate_report_the_same_problems(
    quiet: Server, tmp_path: Path, case: str
) -> None:
    raw = HOSTILE[case].encode("utf-8")
    expected = validate_problems(tmp_path, raw)
    assert expected, f"validate accepted {case}"
    answer = quiet.client().post(f"{API}/workflows", content=raw, headers=JSON)
    assert answer.status_code == 422, answer.text
    got = [(p["loc"], p["msg"]) for p in answer.json()["detail"]]
    assert got == [(problem_loc(p.path, "body"), p.one_line().split(": ", 1)[-1]) for p in expected]


def test_a_duplicate_key_is_refused_at_its_json_path(quiet: Server) -> None:
    raw = HOSTILE["duplicate-nested-key"].encode()
    answer = quiet.client().post(f"{API}/workflows", content=raw, headers=JSON)
    assert_422(answer, ["body", "workflow_nodes", 0, "settings", "strategy"], "appears twice")


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        (local_workflow("a\u0000b"), ["body", "name"]),
        (
            local_workflow("n", [{**NODE, "name": "P\u0000", "settings": {"strategy": "fast"}}]),
            ["body", "workflow_nodes", 0, "name"],
        ),
    ],
    ids=["workflow", "node"],
)
def test_a_nul_in_a_workflow_or_node_name_is_refused(
    quiet: Server, body: dict[str, Any], loc: list[str | int]
) -> None:
    answer = quiet.client().post(f"{API}/workflows", json=body)
    assert_422(answer, loc, "control character")
    assert quiet.client().get(f"{API}/workflows").json() == []


def test_a_nul_in_a_connector_name_is_refused(quiet: Server) -> None:
    body = {"name": "wiki\u0000", "type": "wiki", "config": {"url": "http://h", "token": "t"}}
    assert_422(quiet.client().post(f"{API}/sources", json=body), ["body", "name"], "control")


def test_a_byte_order_mark_is_accepted_by_both(quiet: Server, tmp_path: Path) -> None:
    raw = "\ufeff".encode() + json.dumps(local_workflow("bom")).encode()
    assert validate_problems(tmp_path, raw) == []
    answer = quiet.client().post(f"{API}/workflows", content=raw, headers=JSON)
    assert answer.status_code == 200, answer.text
    assert answer.json()["name"] == "bom"


def test_a_body_that_is_not_utf8_is_refused_by_both(quiet: Server, tmp_path: Path) -> None:
    raw = json.dumps(local_workflow("café"), ensure_ascii=False).encode("latin-1")
    (problem,) = validate_problems(tmp_path, raw)
    assert "not UTF-8" in problem.message
    answer = quiet.client().post(f"{API}/workflows", content=raw, headers=JSON)
    assert_422(answer, ["body"], "not UTF-8")


def test_a_body_that_is_not_json_is_refused_with_the_reason(quiet: Server) -> None:
    answer = quiet.client().post(
        f"{API}/workflows", content=b"{}", headers={"content-type": "text/plain"}
    )
    assert_422(answer, ["body"], "application/json")
