"""`ingestflow jobs report --html`: the page, opened in a real headless browser (Debian's
chromium driven by Playwright), shows the job, its nodes, each file's per-node counts and its
elements colour-coded by type with chunk boundaries drawn; it loads nothing from the network and
shows a document's markup as text."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.runner.test_reuse import cli, download, run, sample, workflow

pytestmark = pytest.mark.slow  # starts a browser
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"no chromium at {CHROMIUM} to open the report in")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            launched.close()


def report(tmp: Path, ws: Path, job: str) -> Path:
    page = tmp / "report" / "job.html"
    result = cli("jobs", "report", job[:8], "--html", page, "--workspace", ws)
    assert result.exit_code == 0, result.output
    assert f"wrote {page}" in result.output
    return page


def open_page(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    """The page, the URLs it requested, and the dialogs it opened."""
    page = browser.new_page()
    requests: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, requests, dialogs


def style(locator: Any, prop: str) -> str:
    return locator.evaluate(f"e => getComputedStyle(e).getPropertyValue('{prop}')")


def test_the_report_shows_nodes_files_types_and_chunks(browser: Any, tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, record = run(
        workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250, embed=False),
        folder, tmp_path / "out", ws, "--trace",
    )  # fmt: skip
    assert code == 0, record
    path = report(tmp_path, ws, record["id"])
    page, requests, dialogs = open_page(browser, path)
    try:
        assert page.locator("h1").inner_text() == f"Job {record['id']}"
        assert requests == [path.as_uri()] and dialogs == []
        job_rows = dict(
            zip(
                page.locator("table#job th").all_inner_texts(),
                page.locator("table#job td").all_inner_texts(),
                strict=True,
            )
        )
        assert job_rows["workflow"] == "narrow"
        assert job_rows["status"] == "COMPLETED / SUCCESS"
        assert job_rows["files"] == "3"
        assert job_rows["runtime"].endswith(" s") and not job_rows["runtime"].startswith("PT")

        # the nodes table: one row per node, its numbers those of the job record
        rows = page.locator("table#nodes tr")
        assert rows.count() == 1 + len(record["node_stats"])
        header = rows.nth(0).locator("th").all_inner_texts()
        for index, node in enumerate(record["node_stats"]):
            cells = dict(
                zip(header, rows.nth(index + 1).locator("td").all_inner_texts(), strict=True)
            )
            assert cells["node"] == node["node_name"]
            assert cells["type"] == f"{node['node_type']} / {node['node_subtype']}"
            assert int(cells["documents ok"]) == node["success"] == 3
            assert int(cells["failed"]) == node["failure"] == 0
            assert int(cells["elements in"]) == node["elements_in"]
            assert int(cells["elements out"]) == node["elements_out"]
            assert float(cells["seconds"]) == pytest.approx(node["seconds"])
        assert '"max_characters": 300' in rows.nth(2).locator("td").last.inner_text()

        # one section per file, each with a per-node table
        files = [f["filename"] for f in record["files"]]
        assert page.locator("h2.file").all_inner_texts() == files
        tables = page.locator("table.per-node")
        assert tables.count() == len(files)
        details = page.locator("details.node-output")
        assert details.count() == len(files) * 2
        for i, file in enumerate(files):
            parts = download(ws, record["id"], file, "Partitioner")
            chunks = download(ws, record["id"], file, "Chunker")
            counts = tables.nth(i).locator("td.n").all_inner_texts()
            assert counts == [str(len(parts)), str(len(chunks))]
            partitioner, chunker = details.nth(2 * i), details.nth(2 * i + 1)
            assert (
                partitioner.locator("summary").inner_text() == f"Partitioner: {len(parts)} elements"
            )
            assert chunker.locator("summary").inner_text() == f"Chunker: {len(chunks)} elements"
            # the last node's section is open; each chunk is a box with a border
            assert chunker.get_attribute("open") is not None
            assert partitioner.get_attribute("open") is None
            boxes = chunker.locator(".chunk")
            assert boxes.count() == len(chunks)
            for k in range(boxes.count()):
                assert boxes.nth(k).is_visible()
                assert float(style(boxes.nth(k), "border-top-width").removesuffix("px")) > 0
                assert chunks[k]["text"].split()[0] in boxes.nth(k).inner_text()
            assert partitioner.locator(".chunk").count() == 0
            assert not partitioner.locator(".el").first.is_visible()  # closed until asked

        # elements colour-coded by type (guide.md has titles and paragraphs)
        guide = files.index("guide.md")
        partitioner = details.nth(2 * guide)
        partitioner.locator("summary").click()
        title = partitioner.locator(".el[data-type='Title']")
        narrative = partitioner.locator(".el[data-type='NarrativeText']")
        assert title.count() > 0 and narrative.count() > 0
        assert title.first.is_visible() and narrative.first.is_visible()
        title_colour = style(title.first, "background-color")
        narrative_colour = style(narrative.first, "background-color")
        assert title_colour != narrative_colour
        assert "rgba(0, 0, 0, 0)" not in (title_colour, narrative_colour)
        assert {style(title.nth(k), "background-color") for k in range(title.count())} == {
            title_colour
        }
        assert title.first.inner_text().endswith("Getting Started with Ingestion")

        # the documents' text shows
        shown = page.locator("body").inner_text()
        assert "Getting Started with Ingestion" in shown
        assert "Field Notes from the Harbour" in shown
        assert requests == [path.as_uri()]
    finally:
        page.close()


def test_chunk_boundaries_show_when_an_embedder_follows_the_chunker(
    browser: Any, tmp_path: Path
) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    fixture = FIXTURES / "workflows" / "valid" / "02-fast-by-title-embed.json"
    code, record = run(fixture, folder, tmp_path / "out", ws, "--trace")
    assert code == 0, record
    page, requests, _ = open_page(browser, report(tmp_path, ws, record["id"]))
    try:
        details = page.locator("details.node-output")
        assert details.count() == 3 * 3
        for i, entry in enumerate(record["files"]):
            chunks = download(ws, record["id"], entry["filename"])
            last = details.nth(3 * i + 2)
            assert last.get_attribute("open") is not None
            assert last.locator(".el").count() == len(chunks)
            assert last.locator(".chunk").count() == len(chunks)
        assert len(requests) == 1
    finally:
        page.close()


def test_the_report_shows_markup_as_text_and_failures(browser: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "evil.txt").write_text(
        "Beware <script>alert(1)</script> and <b>bold</b> & <img src=x onerror=alert(3)>\n"
    )
    odd = "<img src=x onerror=alert(2)>.txt"
    (folder / odd).write_text("A file with a strange name.\n")
    (folder / "empty.txt").write_bytes(b"")
    shutil.copy(FIXTURES / "docs" / "notes.txt", folder / "notes.txt")
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, record = run(wf, folder, tmp_path / "out", ws, "--trace")
    assert code == 1, record
    (failed,) = record["failed_files"]
    page, requests, dialogs = open_page(browser, report(tmp_path, ws, record["id"]))
    try:
        assert dialogs == [] and len(requests) == 1
        assert page.evaluate("document.scripts.length") == 0
        assert page.locator("img").count() == 0 and page.locator(".el b").count() == 0
        shown = page.locator("body").inner_text()
        assert "<script>alert(1)</script>" in shown
        assert "<b>bold</b> & <img src=x onerror=alert(3)>" in shown
        files = page.locator("h2.file").all_inner_texts()
        assert sorted(files) == sorted(f["filename"] for f in record["files"])
        assert odd in files
        # a failed file: its reason, and no per-node table
        assert page.locator("table.per-node").count() == len(files) - 1
        reason = page.locator("p.FAILED")
        assert reason.count() == 1
        assert " ".join(reason.inner_text().split()) == " ".join(
            f"FAILED: {failed['error']}".split()
        )
        page.locator("details.node-output summary").first.click()
        assert page.evaluate("document.scripts.length") == 0 and dialogs == []
    finally:
        page.close()
