"""Blank scanned pages under High Res and Auto: no elements, the document succeeds, a note names
them; and the errors of a PDF that gives no text name the strategy that read it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingestflow.elements import Document
from ingestflow.errors import DocumentError
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage, filetypes
from ingestflow.stages.partition.hires import blank_pages
from tests.stages.test_partition import make_pdf

BLANK_NOTE = "page 2 is blank: no text or pictures were found on it"


def white(width: int = 1700, height: int = 2200) -> Any:
    from PIL import Image

    return Image.new("RGB", (width, height), "white")


def hi_res() -> UnstructuredPartitionStage:
    st = UnstructuredPartitionSettings(strategy="hi_res")
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
    stage.precheck()
    return stage


def process(stage: Any, path: Path) -> Document:
    return stage.process(Document(path.name, path.name, path.name, path=path))


# --- without the models --------------------------------------------------------------------------
def test_a_page_with_ink_and_no_elements_is_not_called_blank(tmp_path: Path):
    from PIL import ImageDraw

    marked = white(400, 500)
    ImageDraw.Draw(marked).rectangle((100, 100, 300, 140), fill="black")
    path = tmp_path / "pages.tiff"
    white(400, 500).save(path, save_all=True, append_images=[marked, white(400, 500)])
    found = [{"type": "Title", "text": "Seen", "metadata": {"page_number": 3}}]
    assert blank_pages.notes(path, found, True, None) == [
        "page 1 is blank: no text or pictures were found on it",
        "page 2 is not blank but gave no elements: neither the layout model nor OCR found "
        "anything to read on it (a faint or unusual scan?)",
    ]
    assert blank_pages.notes(path, found, True, None, first_page=5)[0].startswith(
        "pages 5, 7 are blank"
    )


def test_a_scanned_pdf_that_gives_no_text_names_the_strategy(tmp_path: Path):
    scan = tmp_path / "scan.pdf"
    white().save(scan, resolution=200.0)
    assert filetypes.pdf_zero_element_reason(scan, "fast").startswith(
        "needs OCR: the Fast strategy reads only text layers; use strategy hi_res"
    )
    text = tmp_path / "text.pdf"
    text.write_bytes(make_pdf(["A line of the text layer."]))
    said = filetypes.pdf_zero_element_reason(text, "hi_res")
    assert said.startswith("no text could be extracted under the High Res strategy")
    assert "Fast" not in said and "try strategy fast" in said


# --- through High Res and Auto -------------------------------------------------------------------
@pytest.fixture(scope="module")
def stage() -> UnstructuredPartitionStage:
    return hi_res()


@pytest.mark.slow
def test_a_blank_scanned_pdf_succeeds_with_no_elements(stage: Any, tmp_path: Path):
    path = tmp_path / "blank.pdf"
    white().save(path, resolution=200.0)
    doc = process(stage, path)  # failed: "needs OCR: the Fast strategy reads only text layers"
    assert doc.elements == []
    assert doc.warnings == [
        "page 1 is blank: no text or pictures were found on it",
        "no text: the document yielded no element with text",
    ]


@pytest.mark.slow
def test_a_blank_page_among_scanned_pages_is_named(stage: Any, tmp_path: Path):
    from tests.stages.test_hires import HEADING, draw_page, split_and_join

    path = tmp_path / "scan.pdf"
    draw_page().save(path, resolution=200.0, save_all=True, append_images=[white(), draw_page()])
    doc = process(stage, path)
    assert {e["metadata"]["page_number"] for e in doc.elements} == {1, 3}
    assert doc.warnings == [BLANK_NOTE]
    joined = split_and_join(stage, path, [(1, 2), (3, 3)])  # over several workers
    assert [e["text"] for e in joined.elements] == [e["text"] for e in doc.elements]
    assert joined.warnings == [BLANK_NOTE]
    assert HEADING in doc.elements[0]["text"]


@pytest.mark.slow
def test_a_blank_image_succeeds_with_a_note(stage: Any, tmp_path: Path):
    path = tmp_path / "blank.png"
    white().save(path)
    doc = process(stage, path)
    assert doc.elements == []
    assert doc.warnings[0] == "page 1 is blank: no text or pictures were found on it"


@pytest.mark.slow
def test_auto_reads_a_document_with_a_blank_scanned_page(tmp_path: Path):
    from pypdf import PdfReader, PdfWriter

    from tests.stages.test_hires import auto

    text = tmp_path / "text.pdf"
    text.write_bytes(
        make_pdf(
            [
                "Harbour report\\nThe harbour opened in early spring, and the ships came.",
                "Second page\\nThe ships left again before the autumn storms began.",
            ]
        )
    )
    scan = tmp_path / "blank.pdf"
    white().save(scan, resolution=200.0)
    writer = PdfWriter()
    pages = PdfReader(str(text)).pages
    for page in (pages[0], PdfReader(str(scan)).pages[0], pages[1]):
        writer.add_page(page)
    mixed = tmp_path / "mixed.pdf"
    with mixed.open("wb") as fh:
        writer.write(fh)
    doc = auto(mixed)  # failed whole: the blank page's run "needs OCR" under High Res
    assert doc.stats["pages_by_strategy"] == {"fast": 2, "hi_res": 1}
    assert {e["metadata"]["page_number"] for e in doc.elements} == {1, 3}
    assert doc.warnings == [BLANK_NOTE]


@pytest.mark.slow
def test_a_damaged_pdf_still_fails_under_high_res(stage: Any, tmp_path: Path):
    path = tmp_path / "cut.pdf"
    white().save(path, resolution=200.0)
    path.write_bytes(path.read_bytes().replace(b"%%EOF", b""))
    with pytest.raises(DocumentError, match=r"^Partitioner: cut\.pdf: truncated or damaged PDF"):
        process(stage, path)
