"""One long PDF over several workers: its pages are partitioned as ranges in parallel and joined
into exactly what one call over the whole document gives (ids, page numbers, hierarchy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingestflow.connectors.local import LocalDestination, LocalSource
from ingestflow.elements import Document
from ingestflow.runner.events import PagesPartitioned
from ingestflow.runner.executor import RunOptions, run_workflow
from ingestflow.runner.plan import build_plan
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.spec.strategies import FAST
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
from tests.stages.test_partition import HARBOUR, make_pdf

PAGES = 60


def long_pdf(pages: int = PAGES) -> bytes:
    """A chapter title every fifth page, so titles parent text across page ranges."""
    return make_pdf(
        [
            (f"Chapter {n // 5 + 1}\n" if n % 5 == 0 else "")
            + HARBOUR.replace("spring", f"spring of year {n + 1}")
            for n in range(pages)
        ]
    )


def workflow(**partition: Any) -> dict[str, Any]:
    return {
        "name": "long",
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "unstructured_api",
                "settings": {"strategy": "fast", "unique_element_ids": False, **partition},
            },
            {
                "name": "Chunker",
                "type": "chunk",
                "subtype": "chunk_by_title",
                "settings": {"max_characters": 400},
            },
        ],
    }


def run(tmp: Path, body: dict[str, Any], folder: Path, workers: int, name: str, **options: Any):
    events: list[Any] = []  # the run's typed events (runner.events)
    out = tmp / name
    record = run_workflow(
        build_plan(body),
        LocalSource([folder]),
        LocalDestination(out),
        tmp / f"ws-{name}",
        RunOptions(workers=workers, trace=True, output_dir=str(out), **options),
        events.append,
    )
    return record, events, out


def test_page_ranges_cover_a_long_pdf_once_in_order() -> None:
    stage = UnstructuredPartitionStage(
        "P", "unstructured_api", UnstructuredPartitionSettings(strategy="fast"), RunContext()
    )
    doc = Document("d", "r", "log.pdf", data=long_pdf())
    ranges = stage.page_ranges(doc, workers=2)
    assert len(ranges) > 1
    assert [p for first, last in ranges for p in range(first, last + 1)] == list(range(1, 61))
    assert all(last - first + 1 >= FAST.pages_per_part for first, last in ranges[:-1])
    assert stage.page_ranges(doc, workers=1) == []  # nothing to spread over
    short = Document("d", "r", "short.pdf", data=long_pdf(3))
    assert stage.page_ranges(short, workers=2) == []
    text = Document("d", "r", "notes.pdf", data=b"plain text, named .pdf")
    assert stage.page_ranges(text, workers=2) == []  # read whole: the partitioner says why


@pytest.mark.slow
@pytest.mark.parametrize("page_breaks", [False, True])
def test_a_long_pdf_spread_over_workers_gives_what_one_call_gives(
    tmp_path: Path, page_breaks: bool
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "log.pdf").write_bytes(long_pdf())
    (folder / "notes.txt").write_text("A short note beside the long log.\n")
    body = workflow(include_page_breaks=page_breaks)
    one, one_events, one_out = run(tmp_path, body, folder, 1, "one")
    # without page breaks, with `--doc-timeout 0` (no limit): the ranges' shared budget then has
    # no limit to word a message on; with them, the default limit
    limit = {} if page_breaks else {"doc_timeout": None}
    two, two_events, two_out = run(tmp_path, body, folder, 2, "two", **limit)

    # one worker: the document whole
    assert not [e for e in one_events if isinstance(e, PagesPartitioned)]
    pages = [e for e in two_events if isinstance(e, PagesPartitioned)]
    assert pages and pages[0].filename == "log.pdf" and pages[0].parts > 1
    assert pages[-1].done == pages[-1].total == PAGES
    assert [e.done for e in pages] == sorted(e.done for e in pages)
    # its pages counted once (range by range as they end, not again when it is written)
    assert two["node_stats"][0]["pages"] == one["node_stats"][0]["pages"] == PAGES
    assert two["progress"]["pages"] == PAGES

    assert two["status"] == "COMPLETED" and two["processing_status"] == "SUCCESS", two
    assert [(n["success"], n["failure"]) for n in two["node_stats"]] == [(2, 0), (2, 0)]
    for name in ("log.pdf.json", "notes.txt.json"):
        assert (two_out / name).read_text() == (one_out / name).read_text()
    assert json.loads((two_out / "log.pdf.json").read_text())
    # the partition output itself (traced) is the same too, parents across ranges included
    partitioned = [
        traced(tmp_path / f"ws-{name}", record) for name, record in (("one", one), ("two", two))
    ]
    assert partitioned[0] == partitioned[1]
    elements = partitioned[1]
    assert {e["metadata"]["page_number"] for e in elements if e["type"] != "PageBreak"} == set(
        range(1, PAGES + 1)
    )
    titles = {
        e["metadata"]["page_number"]: e["element_id"] for e in elements if e["type"] == "Title"
    }
    assert sorted(titles) == list(range(1, PAGES + 1, 5))
    for e in elements:  # each page's text sits under its chapter, across the ranges too
        if e["type"] == "NarrativeText" and not page_breaks:  # (a page break ends a section)
            chapter_page = (e["metadata"]["page_number"] - 1) // 5 * 5 + 1
            assert e["metadata"]["parent_id"] == titles[chapter_page]
    assert len({e["element_id"] for e in elements}) == len(elements)


def traced(workspace: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    """The partitioner's traced output for log.pdf in a job."""
    return traced_node(workspace, record, "partition")


def traced_node(workspace: Path, record: dict[str, Any], node_type: str) -> list[dict[str, Any]]:
    """A node's traced output for log.pdf in a job."""
    from ingestflow.store.jobs import Workspace

    ws = Workspace(workspace)
    try:
        (file,) = [f for f in ws.files(record["id"]) if f.filename == "log.pdf"]
        (output,) = [
            o
            for o in record["output_node_files"]
            if o["file_id"] == file.file_id and o["node_type"] == node_type
        ]
        path = ws.node_output_path(record["id"], output["node_id"], file.file_id)
        return json.loads(path.read_text())
    finally:
        ws.close()


@pytest.mark.slow
def test_a_page_range_that_cannot_be_read_fails_in_one_line_naming_its_pages() -> None:
    from ingestflow.runner import worker

    worker.init_worker(build_plan(workflow()), in_process=True)
    try:
        doc = Document("d", "r", "log.pdf", data=long_pdf())
        ok = worker.process_part(doc, (1, 30))
        assert ok.error is None and ok.part is not None and ok.part.elements
        bad = worker.process_part(doc, (55, 70))  # past the last page
        assert bad.part is None and bad.error is not None
        assert bad.error.startswith("Partitioner: log.pdf: pages 55-70: ")
        assert "\n" not in bad.error
    finally:
        worker.close_worker()


@pytest.mark.slow
def test_a_long_documents_embedding_is_spread_over_workers_and_put_back_in_order(
    tmp_path: Path,
) -> None:
    import numpy as np

    from ingestflow.runner import tasks

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "log.pdf").write_bytes(long_pdf())
    (folder / "notes.txt").write_text("A short note beside the long log.\n")
    body = workflow()
    body["workflow_nodes"][1]["settings"] = {"max_characters": 50}  # many chunks
    body["workflow_nodes"].append(
        {
            "name": "Embedder",
            "type": "embed",
            "subtype": "ibm",
            "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
        }
    )
    _, _, one_out = run(tmp_path, body, folder, 1, "one")
    spread: list[int] = []
    original = tasks.slices

    def recording(doc: Any, workers: int) -> list[list[int]]:
        groups = original(doc, workers)
        spread.append(len(groups))
        return groups

    tasks.slices = recording
    try:  # a small batch_bytes makes the 60-page log "long" (it is most of the work in view)
        two, _, two_out = run(tmp_path, body, folder, 2, "two", batch_bytes=1000)
    finally:
        tasks.slices = original
    assert spread and max(spread) > 1  # the embedding went out in slices
    assert two["processing_status"] == "SUCCESS"
    a = json.loads((one_out / "log.pdf.json").read_text())
    b = json.loads((two_out / "log.pdf.json").read_text())
    assert [(c["element_id"], c["text"]) for c in a] == [(c["element_id"], c["text"]) for c in b]
    for x, y in zip(a, b, strict=True):  # batches differ, so padding does: float noise only
        assert np.allclose(x["embeddings"], y["embeddings"], atol=1e-5)
    assert traced_node(tmp_path / "ws-two", two, "embed") == b


def lying_count(data: bytes, count: int) -> bytes:
    """The PDF with its page tree's root saying `count` pages, whatever it holds (same length,
    so the cross-reference table still points at every object)."""
    import re

    found = re.search(rb"<< /Type /Pages /Kids \[([^\]]*)\] /Count \d+ >>", data)
    assert found is not None
    old = found.group(0)
    new = b"<</Type/Pages/Kids[%s]/Count %d>>" % (found.group(1), count)
    assert len(new) <= len(old)
    return data.replace(old, new.ljust(len(old)))


def test_page_ranges_follow_the_pages_a_pdf_holds_not_its_count() -> None:
    stage = UnstructuredPartitionStage(
        "P", "unstructured_api", UnstructuredPartitionSettings(strategy="fast"), RunContext()
    )
    one = Document("d", "r", "one.pdf", data=lying_count(long_pdf(1), 100_000))
    assert stage.page_ranges(one, workers=2) == []  # one page: nothing to spread
    many = Document("d", "r", "many.pdf", data=lying_count(long_pdf(), 99))
    ranges = stage.page_ranges(many, workers=2)
    assert [p for first, last in ranges for p in range(first, last + 1)] == list(range(1, 61))


@pytest.mark.slow
def test_a_pdf_whose_count_overstates_its_pages_completes_over_workers(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "log.pdf").write_bytes(lying_count(long_pdf(1), 100_000))
    record, _, out = run(tmp_path, workflow(), folder, 2, "two")
    assert record["status"] == "COMPLETED" and record["processing_status"] == "SUCCESS", record
    elements = traced(tmp_path / "ws-two", record)
    assert elements and {e["metadata"]["page_number"] for e in elements} == {1}
    assert "spring of year 1" in " ".join(e["text"] for e in elements)
    assert json.loads((out / "log.pdf.json").read_text())
