"""The run's typed progress events, heard through the Python API on a real run, and the same
live counts in the job record (what the server's job details and the web UI show)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ingestflow
from ingestflow.service.progress import (
    DocumentFailed,
    DocumentsFound,
    DocumentWritten,
    Event,
    JobFinished,
    JobPrepared,
    JobStarted,
    NodeProgress,
)
from tests.stages.test_partition import HARBOUR, make_pdf

pytestmark = pytest.mark.slow  # real runs: the partitioner and the embedding model load
WORKFLOW = json.loads(Path("fixtures/workflows/valid/02-fast-by-title-embed.json").read_text())


def test_a_run_tells_its_listener_what_it_found_did_and_left(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("The first note.\n\nIt has two paragraphs.\n")
    (folder / "b.pdf").write_bytes(make_pdf([HARBOUR, HARBOUR, HARBOUR]))
    (folder / "c.pdf").write_bytes(b"%PDF-1.4 not really a PDF")  # fails alone
    heard: list[Event] = []
    result = ingestflow.run(
        WORKFLOW,
        [folder],
        workspace=tmp_path / "ws",
        output=tmp_path / "out",
        workers=1,
        trace=False,
        progress=heard.append,
    )
    kinds = [type(event) for event in heard]
    assert kinds[0] is JobPrepared and heard[0].total == 3  # type: ignore[union-attr]
    assert kinds.index(JobStarted) < kinds.index(DocumentsFound) < kinds.index(DocumentWritten)
    assert kinds[-1] is JobFinished
    started = next(e for e in heard if isinstance(e, JobStarted))
    assert started.job_id == result.job["id"]
    assert "the embedding model" in started.loading
    written = [e.result.filename for e in heard if isinstance(e, DocumentWritten)]
    failed = [e.result for e in heard if isinstance(e, DocumentFailed)]
    assert sorted(written) == ["a.txt", "b.pdf"]
    assert [f.filename for f in failed] == ["c.pdf"] and failed[0].error
    finished = heard[-1]
    # one of three failed: under the service's 90% the job counts as failed
    assert isinstance(finished, JobFinished) and finished.status == result.job["status"] == "FAILED"
    tally = finished.tally
    assert (tally.found, tally.written, tally.failed, tally.left) == (3, 2, 1, 0)
    assert tally.pages == 3  # the PDF's three pages (a text file has none)
    nodes = {n.name: n for n in finished.nodes}
    assert nodes["Partitioner"].pages == 3
    assert nodes["Chunker"].elements_out == nodes["Embedder"].elements_out > 0
    last_nodes = [e for e in heard if isinstance(e, NodeProgress)][-1]
    assert last_nodes.nodes == finished.nodes
    # the job record carries the same counts
    record = result.job
    progress = record["progress"]
    assert (progress["found"], progress["written"], progress["failed"], progress["left"]) == (
        3,
        2,
        1,
        0,
    )
    partitioner = record["node_stats"][0]
    assert partitioner["pages"] == 3
    assert "pages" not in record["node_stats"][1]  # a chunker has no pages
