"""The web UI in a real browser (Debian's chromium, headless, driven by Playwright): sign in
with the link's token, open a High Res job of a one-page PDF, see its page rendered with a box
per element that has coordinates (coloured by type), the chunks with their elements, and two
jobs compared; nothing is fetched from elsewhere and no script error happens."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingestflow.service import Service
from tests.runner.test_reuse import run
from tests.server.conftest import Server, running_server

pytestmark = [pytest.mark.slow, pytest.mark.corpus]  # a browser, a layout model, the corpus
PDF = "docs/pdf/embedded-images-tables.pdf"  # one born-digital page: text, tables, images


def hi_res(tmp: Path, name: str, max_characters: int) -> Path:
    """High Res with coordinates, then chunk by title."""
    body = {
        "name": name,
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "unstructured_api",
                "settings": {
                    "strategy": "hi_res",
                    "coordinates": True,
                    "pdf_infer_table_structure": True,
                },
            },
            {
                "name": "Chunker",
                "type": "chunk",
                "subtype": "chunk_by_title",
                "settings": {"max_characters": max_characters, "include_orig_elements": True},
            },
        ],
    }
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(body))
    return path


@pytest.fixture(scope="module")
def jobs(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two traced jobs of the PDF: chunks of at most 500 characters, then (from the first
    job's partition) of at most 1500."""
    tmp = tmp_path_factory.mktemp("ui")
    folder = tmp / "in"
    folder.mkdir()
    shutil.copy(corpus / PDF, folder / "embedded-images-tables.pdf")
    ws = tmp / "ws"
    code, first = run(hi_res(tmp, "narrow", 500), folder, tmp / "out-a", ws, "--trace")
    assert code == 0, first
    code, second = run(
        hi_res(tmp, "narrow", 1500), folder, tmp / "out-b", ws, "--trace", "--from-job",
        first["id"],
    )  # fmt: skip
    assert code == 0, second
    return {"ws": ws, "a": first, "b": second}


@pytest.fixture(scope="module")
def server(jobs: dict[str, Any]) -> Iterator[Server]:
    with running_server(jobs["ws"], background=False) as served:
        yield served


@pytest.fixture
def tab(browser: Any, server: Server) -> Iterator[Any]:
    """A signed-in page (the sign-in link opened), recording requests and script errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.requests, page.failures = [], []
    page.on("request", lambda request: page.requests.append(request.url))
    page.on("pageerror", lambda error: page.failures.append(str(error)))
    page.on(
        "console",
        lambda message: page.failures.append(message.text) if message.type == "error" else None,
    )
    token = server.app.state.signin.issue_token()
    page.goto(f"{server.url}/ui/signin?token={token}")
    assert page.url == f"{server.url}/ui/"
    try:
        yield page
    finally:
        assert page.failures == [], page.failures
        assert all(url.startswith(server.url) for url in page.requests), page.requests
        context.close()


def elements(ws: Path, job: str, node: str) -> list[dict[str, Any]]:
    with Service(ws) as service:
        (entry,) = service.jobs.get(job)["files"]
        return service.jobs.download(job, entry["file_id"], node)


def style(locator: Any, prop: str) -> str:
    return locator.evaluate(f"e => getComputedStyle(e).getPropertyValue('{prop}')")


def test_a_pdf_page_shows_a_box_per_element(tab: Any, jobs: dict[str, Any]) -> None:
    first = jobs["a"]
    assert tab.locator("h1").inner_text() == "Jobs"
    rows = tab.locator("#jobs tr.job")
    assert rows.count() == 2
    tab.locator(f"#jobs a[href='/ui/jobs/{first['id']}']").click()
    assert tab.locator("h1").inner_text() == f"Job {first['id']}"
    nodes = tab.locator("#nodes tr.node")
    assert nodes.count() == 2
    assert nodes.nth(0).locator("td").nth(1).inner_text() == "Partitioner"
    images: list[Any] = []
    tab.on(
        "response", lambda response: images.append(response) if "/pages/" in response.url else None
    )
    tab.locator("#files a", has_text="embedded-images-tables.pdf").click()
    tab.wait_for_load_state("networkidle")

    parts = elements(jobs["ws"], first["id"], "Partitioner")
    boxed = [e for e in parts if (e["metadata"].get("coordinates") or {}).get("points")]
    assert len(boxed) >= 3
    assert tab.locator("svg.page-view").count() == 1  # one page
    assert [r.status for r in images] == [200]
    assert images[0].headers["content-type"] == "image/png"
    boxes = tab.locator("svg.page-view rect.box")
    assert boxes.count() == len(boxed)
    assert tab.locator("#elements article.element").count() == len(parts)
    # one colour per type
    assert {e["type"] for e in boxed} >= {"Table"} and len({e["type"] for e in boxed}) > 1
    table = tab.locator("rect.box[data-type='Table']").first
    other = tab.locator("rect.box:not([data-type='Table'])").first
    assert table.is_visible() and other.is_visible()
    assert style(table, "stroke") != style(other, "stroke")
    # the table's text_as_html is drawn as a table (sanitised), its cells the element's
    cells = tab.locator(".table-html table td")
    assert cells.count() > 4 and tab.locator(".table-html script").count() == 0
    # a box lies where its coordinates say, in the page's drawn size
    shown = tab.locator("svg.page-view").bounding_box()
    title = table
    box = title.bounding_box()
    coords = next(e for e in boxed if e["type"] == "Table")["metadata"]["coordinates"]
    left = min(p[0] for p in coords["points"]) / coords["layout_width"]
    assert box["x"] - shown["x"] == pytest.approx(left * shown["width"], abs=3)
    # hovering an element lights its box
    index = title.get_attribute("data-index")
    tab.locator(f"#el-{index}").hover()
    assert "hot" in (title.get_attribute("class") or "")


def test_chunks_show_their_elements_and_two_jobs_compare(tab: Any, jobs: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    first, second = jobs["a"], jobs["b"]
    (entry,) = first["files"]
    tab.goto(tab.url.rstrip("/") + f"/jobs/{first['id']}/files/{entry['file_id']}")
    tab.locator("#node-choice a", has_text="Chunker").click()
    chunks = elements(jobs["ws"], first["id"], "Chunker")
    # the click loads the chunker's page: wait for it (a busy machine loads it late)
    expect(tab.locator("#elements article.element")).to_have_count(len(chunks), timeout=30_000)
    from unstructured.staging.base import elements_from_base64_gzipped_json

    kept = [elements_from_base64_gzipped_json(c["metadata"]["orig_elements"]) for c in chunks]
    origins = tab.locator("details.origins")
    assert origins.count() == len(chunks)
    for i, own in enumerate(kept):
        summary = origins.nth(i).locator("summary").inner_text()
        assert summary == f"{len(own)} element(s) it came from"  # exact: not matched by text
        assert origins.nth(i).locator("li").count() == len(own)
    # each chunk's boxes are its elements' boxes
    boxed = sum(1 for own in kept for e in own if e.metadata.coordinates is not None)
    assert tab.locator("svg.page-view rect.box[data-chunk]").count() == boxed > 0

    # the two jobs side by side
    tab.goto(tab.url.split("/ui/")[0] + f"/ui/jobs/{first['id']}")
    tab.locator("#compare select").select_option(second["id"])
    tab.locator("#compare button").click()
    expect(tab.locator("#diff-jobs")).to_be_visible(timeout=30_000)
    sections = tab.locator("section.diff-node")
    expect(sections).to_have_count(2, timeout=30_000)
    partitioner, chunker = sections.nth(0), sections.nth(1)
    assert "same settings" in partitioner.inner_text()
    assert "no change" in partitioner.locator(".diff-file h3").inner_text()
    row = chunker.locator("table.settings-diff tr", has_text="settings.max_characters")
    assert row.locator("td").all_inner_texts() == ["settings.max_characters", "500", "1500"]
    assert "element(s) differ" in chunker.locator(".diff-file h3").inner_text()
    assert chunker.locator(".change").count() > 0
    assert chunker.locator(".change .side-b .element").count() > 0


def test_a_running_job_shows_its_progress_live(browser: Any, tmp_path: Path) -> None:
    """The jobs page follows a job's record while it runs (written here as the runner writes
    it), then shows how it ended."""
    from ingestflow.store.job_rows import NodeStats
    from tests.server.conftest import NODES

    with running_server(tmp_path / "ws", background=False) as served:  # the job waits
        answer = served.client().post(
            "/api/v1/jobs/",
            data={"request_data": json.dumps({"job_nodes": NODES})},
            files=[("input_files", ("plan.txt", b"Release plan.\n", "text/plain"))],
        )
        assert answer.status_code == 200, answer.text
        job = answer.json()["id"]
        page = browser.new_page()
        try:
            page.goto(f"{served.url}/ui/signin?token={served.app.state.signin.issue_token()}")
            row = page.locator(f"#jobs tr[data-job='{job}']")
            assert row.locator("[data-field='status']").inner_text() == "SCHEDULED / SCHEDULED"

            def record(status: str) -> None:
                ended = status == "COMPLETED"
                nodes = [
                    NodeStats("n1", "Partitioner", "partition", "unstructured_api", success=1),
                    NodeStats("n2", "Chunker", "chunk", "chunk_by_title", ready=1 - ended,
                              success=int(ended)),
                ]  # fmt: skip
                processing = "SUCCESS" if status == "COMPLETED" else status
                with Service(served.workspace) as service:
                    service.ws.update_job(
                        job, status=status, processing_status=processing, nodes=nodes
                    )

            record("IN_PROGRESS")
            progress = row.locator("[data-field='progress']")
            progress.filter(has_text="Partitioner: 1 done").wait_for(timeout=20_000)
            assert "Chunker: 0 done, 1 waiting" in progress.inner_text()
            assert row.locator("[data-field='status']").inner_text() == "IN_PROGRESS / IN_PROGRESS"
            record("COMPLETED")  # finished: the page reloads with the final figures
            page.locator(f"tr[data-job='{job}']:not([data-active])").wait_for(timeout=20_000)
            assert row.locator("[data-field='status']").inner_text() == "COMPLETED / SUCCESS"
        finally:
            page.close()


def test_untrusted_text_and_tables_run_nothing(browser: Any, tmp_path: Path) -> None:
    """An element's text and its text_as_html come from documents: in the browser they show as
    text and as a bare table, and no script, handler or image of theirs runs or loads."""
    from tests.server.conftest import NODES

    evil_html = (
        "<table><tr><td onmouseover=alert(1)>cell <b>one</b></td><td>two"
        "<script>alert(2)</script><img src=x onerror=alert(3)></td></tr></table>"
        "<iframe srcdoc='<script>alert(4)</script>'></iframe><svg onload=alert(5)>"
    )
    element = {
        "type": "Table",
        "text": "<script>alert(6)</script> cell one two",
        "metadata": {"page_number": 1, "text_as_html": evil_html},
    }
    with running_server(tmp_path / "ws") as served:
        answer = served.client().post(
            "/api/v1/jobs/",
            data={"request_data": json.dumps({"job_nodes": NODES})},
            files=[("input_files", ("t.txt", b"A table.\n", "text/plain"))],
        )
        assert answer.status_code == 200, answer.text
        job = served.wait_job(answer.json()["id"])
        with Service(served.workspace) as service:
            record = service.jobs.get(job["id"])
            (entry,) = record["files"]
            path = service.ws.node_output_path(
                record["id"], record["node_stats"][0]["node_id"], entry["file_id"]
            )
        path.write_text(json.dumps([element]))
        page = browser.new_page()
        dialogs: list[str] = []
        requests: list[str] = []

        def dismiss(dialog: Any) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismiss)
        page.on("request", lambda request: requests.append(request.url))
        try:
            page.goto(f"{served.url}/ui/signin?token={served.app.state.signin.issue_token()}")
            page.goto(f"{served.url}/ui/jobs/{record['id']}/files/{entry['file_id']}?node=1")
            shown = page.locator("#el-0")
            assert "<script>alert(6)</script>" in shown.locator(".text").inner_text()
            cells = shown.locator(".table-html table td")
            assert cells.all_inner_texts() == ["cell one", "two"]
            cells.first.hover()
            assert shown.locator("script, img, iframe, svg, [onmouseover]").count() == 0
            assert dialogs == []
            assert all(url.startswith(served.url) for url in requests), requests
        finally:
            page.close()
