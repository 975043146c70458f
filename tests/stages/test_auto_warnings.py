"""Auto's warnings agree with its output: Fast pages after a High Res page are not reported as
pages that gave no text."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestflow.elements import Document
from ingestflow.spec.settings import VLMPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition.auto import VLMPartitionStage
from tests.stages.test_partition import make_pdf

pytestmark = pytest.mark.slow


def test_fast_pages_after_a_hi_res_page_are_not_called_blank(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    from tests.stages.test_hires import draw_page

    scan = tmp_path / "scan.pdf"
    draw_page().save(scan, resolution=200.0)
    text = tmp_path / "text.pdf"
    text.write_bytes(
        make_pdf(
            [
                "Harbour report\\nThe harbour opened in early spring, and the ships came.",
                "Second page\\nThe ships left again before the autumn storms began.",
            ]
        )
    )
    writer = PdfWriter()
    writer.add_page(PdfReader(str(scan)).pages[0])
    for page in PdfReader(str(text)).pages:
        writer.add_page(page)
    mixed = tmp_path / "mixed.pdf"
    with mixed.open("wb") as fh:
        writer.write(fh)
    st = VLMPartitionSettings(is_dynamic=True, allow_fast=True, unique_element_ids=False)
    stage = VLMPartitionStage("Partitioner", "vlm", st, RunContext())
    stage.precheck()
    doc = stage.process(Document("d", "r", "mixed.pdf", path=mixed))
    assert doc.stats["pages_by_strategy"] == {"hi_res": 1, "fast": 2}
    fast_pages = {
        e["metadata"]["page_number"]
        for e in doc.elements
        if e["metadata"]["partition_strategy"] == "fast" and e["text"].strip()
    }
    assert fast_pages == {2, 3}
    assert not [w for w in doc.warnings if "gave no text" in w], doc.warnings
