"""The VLM strategy and Auto's VLM pages, against a real HTTP model server on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingestflow.elements import Document
from ingestflow.errors import StageError
from ingestflow.providers import client as client_module
from ingestflow.providers.config import endpoints_from_env
from ingestflow.spec.settings import VLMPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition.auto import VLMPartitionStage
from tests.fakes.models import FakeModelServer
from tests.stages.test_partition import make_pdf

pytestmark = pytest.mark.slow

PAGE_HTML = (
    "```html\n<h1>Harbour report {page}</h1><p>Cargo grew in every quarter of the year.</p>"
    "<ul><li>Containers</li><li>Bulk</li></ul>"
    "<table><tr><th>Port</th><th>Ships</th></tr><tr><td>Bergen</td><td>{page}</td></tr></table>\n```"
)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(key="node-key") as fake:
        yield fake


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "BACKOFF", 0.01)


def vlm(
    server: FakeModelServer, key: str | None = "node-key", **settings: Any
) -> VLMPartitionStage:
    environ = {
        "INGESTFLOW_PROVIDER_A_BASE_URL": server.anthropic_url,
        "INGESTFLOW_PROVIDER_A_API_KEY": "env-key",
    }
    st = VLMPartitionSettings.model_validate(
        {"is_dynamic": False, "unique_element_ids": False, "provider_api_key": key, **settings}
    )
    stage = VLMPartitionStage(
        "Partitioner", "vlm", st, RunContext(endpoints=endpoints_from_env(environ))
    )
    stage.precheck()
    return stage


def two_pages(tmp: Path) -> Path:
    path = tmp / "report.pdf"
    path.write_bytes(make_pdf(["Harbour report 1\nCargo grew.", "Harbour report 2\nMore cargo."]))
    return path


def test_vlm_reads_each_page_image_into_typed_elements(server: FakeModelServer, tmp_path: Path):
    server.reply(lambda r: PAGE_HTML.format(page="x"))
    path = two_pages(tmp_path)
    doc = vlm(server).process(Document("d", "r", "report.pdf", path=path))
    assert len(server.requests) == 2  # one request per page
    for request in server.requests:
        assert request.path == "/v1/messages" and request.image_formats == ["image"]
        assert request.model == "claude-sonnet-4-20250514"
        assert request.headers["authorization"] == "Bearer node-key"  # the node's key wins
    types = [e["type"] for e in doc.elements]
    assert types.count("Title") == 2 and types.count("ListItem") == 4 and types.count("Table") == 2
    assert {e["metadata"]["page_number"] for e in doc.elements} == {1, 2}
    assert {e["metadata"]["partition_strategy"] for e in doc.elements} == {"vlm"}
    table = next(e for e in doc.elements if e["type"] == "Table")
    assert "<td>\n" in table["metadata"]["text_as_html"]  # format_html: pretty-printed
    assert doc.stats["pages_by_strategy"] == {"vlm": 2}
    again = vlm(server).process(Document("d", "r", "report.pdf", path=path))
    assert [e["element_id"] for e in again.elements] == [e["element_id"] for e in doc.elements]


def test_vlm_json_output(server: FakeModelServer, tmp_path: Path):
    items = [
        {"type": "Title", "text": "Harbour report"},
        {
            "type": "Table",
            "text": "Port Ships",
            "text_as_html": "<table><tr><td>Port</td></tr></table>",
        },
        {"type": "Sidebar", "text": "An aside"},
    ]
    server.reply(lambda r: json.dumps(items))
    path = tmp_path / "one.pdf"
    path.write_bytes(make_pdf(["Harbour report"]))
    doc = vlm(server, output_format="application/json", format_html=False).process(
        Document("d", "r", "one.pdf", path=path)
    )
    assert [(e["type"], e["text"]) for e in doc.elements] == [
        ("Title", "Harbour report"),
        ("Table", "Port Ships"),
        ("UncategorizedText", "An aside"),
    ]
    assert doc.elements[1]["metadata"]["text_as_html"] == "<table><tr><td>Port</td></tr></table>"


def test_an_unusable_answer_fails_the_document_naming_the_page(
    server: FakeModelServer, tmp_path: Path
):
    server.reply(lambda r: "I cannot read this page, sorry.")
    path = tmp_path / "one.pdf"
    path.write_bytes(make_pdf(["Harbour report"]))
    with pytest.raises(
        StageError, match=r"page 1: provider_a answered something unusable: no HTML"
    ):
        vlm(server).process(Document("d", "r", "one.pdf", path=path))


def test_auto_sends_scans_to_the_vlm_and_text_pages_to_fast(
    server: FakeModelServer, tmp_path: Path
):
    from pypdf import PdfReader, PdfWriter

    from tests.stages.test_hires import draw_page

    scan = tmp_path / "scan.pdf"
    draw_page().save(scan, resolution=200.0)
    text = tmp_path / "text.pdf"
    text.write_bytes(
        make_pdf(["Harbour report\\nThe harbour opened in early spring, and the ships came."])
    )
    writer = PdfWriter()
    for part in (text, scan):
        writer.add_page(PdfReader(str(part)).pages[0])
    mixed = tmp_path / "mixed.pdf"
    with mixed.open("wb") as fh:
        writer.write(fh)
    server.reply(lambda r: PAGE_HTML.format(page=2))
    environ = {
        "INGESTFLOW_PROVIDER_A_BASE_URL": server.anthropic_url,
        "INGESTFLOW_PROVIDER_A_API_KEY": "node-key",
    }
    st = VLMPartitionSettings(is_dynamic=True, allow_fast=True, unique_element_ids=False)
    stage = VLMPartitionStage(
        "Partitioner", "vlm", st, RunContext(endpoints=endpoints_from_env(environ))
    )
    stage.precheck()
    assert stage.job_notes == []  # VLM is available
    doc = stage.process(Document("d", "r", "mixed.pdf", path=mixed))
    assert doc.stats["pages_by_strategy"] == {"fast": 1, "vlm": 1}
    by_page = {
        e["metadata"]["page_number"]: e["metadata"]["partition_strategy"] for e in doc.elements
    }
    assert by_page == {1: "fast", 2: "vlm"}
    assert len(server.requests) == 1


def test_the_vlm_strategy_stops_at_precheck_when_its_server_is_not_running():
    from ingestflow.errors import EnvironmentProblem
    from tests.stages.test_prompter import free_port

    url = f"http://127.0.0.1:{free_port()}"
    environ = {"INGESTFLOW_PROVIDER_A_BASE_URL": url}
    st = VLMPartitionSettings.model_validate({"is_dynamic": False})
    stage = VLMPartitionStage(
        "Partitioner", "vlm", st, RunContext(endpoints=endpoints_from_env(environ))
    )
    with pytest.raises(EnvironmentProblem, match=rf"no model server answers at {url}"):
        stage.precheck()
