"""Office element bombs: a small docx/pptx/xlsx whose XML unpacks to megabytes of one repeated
element fails at once, alone, with a one-line reason, before the library walks it; an ordinary
one is read as before (issue 37, 8)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from ingestflow.errors import DocumentError
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage, office_limits
from tests.stages.test_partition import doc_of, texts

#: The main XML part of each kind, and the element its bomb repeats.
PARTS = {
    "docx": ("word/document.xml", b"<w:p/>"),
    "pptx": ("ppt/slides/slide1.xml", b"<a:p/>"),
    "xlsx": ("xl/worksheets/sheet1.xml", b"<row/>"),
}


@pytest.fixture(scope="module")
def fast() -> UnstructuredPartitionStage:
    st = UnstructuredPartitionSettings(strategy="fast")
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
    stage.open()
    return stage


def _made(folder: Path, kind: str) -> Path:
    """An ordinary file of `kind`, made with its own library."""
    path = folder / f"ordinary.{kind}"
    if kind == "docx":
        import docx

        document = docx.Document()
        document.add_paragraph("The harbour opened in early spring.")
        document.save(str(path))
    elif kind == "pptx":
        import pptx

        deck = pptx.Presentation()
        deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "Season Review"
        deck.save(str(path))
    else:
        import openpyxl

        book = openpyxl.Workbook()
        book.active.append(["vessel", "tonnage"])
        book.save(str(path))
    return path


def _with_part(source: Path, target: Path, name: str, body: bytes) -> Path:
    """`source` with its part `name` replaced by `body` (deflated, as Office writes it)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as new:
        for item in old.infolist():
            new.writestr(item.filename, body if item.filename == name else old.read(item))
    return target


def _bomb_body(element: bytes, megabytes: int) -> bytes:
    head, tail = b'<?xml version="1.0"?><w:document><w:body>', b"</w:body></w:document>"
    return head + element * (megabytes * 1_000_000 // len(element)) + tail


@pytest.mark.parametrize("kind", sorted(PARTS))
def test_an_element_bomb_fails_at_once_with_a_reason(
    fast: UnstructuredPartitionStage, tmp_path: Path, kind: str
):
    name, element = PARTS[kind]
    bomb = _with_part(
        _made(tmp_path, kind), tmp_path / f"bomb.{kind}", name, _bomb_body(element, 8)
    )
    assert bomb.stat().st_size < 100_000  # small on disk
    with pytest.raises(
        DocumentError,
        match=rf"^Partitioner: bomb\.{kind}: the {kind.upper()} file is refused before reading: "
        rf"its part {name} unpacks from [\d,]+ to [\d,]+ bytes \([\d,]+ times, over 100\)",
    ) as caught:
        fast.process(doc_of(bomb))
    assert "\n" not in str(caught.value)


def test_too_many_elements_at_an_ordinary_ratio_are_refused(
    fast: UnstructuredPartitionStage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Elements that do not pack well (each paragraph its own text) are counted."""
    monkeypatch.setattr(office_limits, "MAX_ELEMENTS", 5_000)
    paragraphs = b"".join(b"<w:p><w:r><w:t>%d</w:t></w:r></w:p>" % i for i in range(3_000))
    body = b'<?xml version="1.0"?><w:document><w:body>' + paragraphs + b"</w:body></w:document>"
    many = _with_part(_made(tmp_path, "docx"), tmp_path / "many.docx", "word/document.xml", body)
    with pytest.raises(
        DocumentError, match=r"its part word/document\.xml holds over 5,000 elements"
    ):
        fast.process(doc_of(many))


def test_a_paragraph_bomb_padded_to_pass_the_other_limits_is_refused(
    fast: UnstructuredPartitionStage, tmp_path: Path
):
    """The second trial's bomb: empty paragraphs with random comments between them pack ~60
    times (under 100) and stay under the element limit, and ran 342 s at 1.1 GB; 200,001
    empty paragraphs (12 bytes of random padding each) are refused for their count."""
    import base64
    import random

    noise = random.Random(7)
    paragraphs = b"".join(
        b"<w:p/><!--" + base64.b64encode(noise.randbytes(9)) + b"-->" for _ in range(200_001)
    )
    body = b'<?xml version="1.0"?><w:document><w:body>' + paragraphs + b"</w:body></w:document>"
    bomb = _with_part(_made(tmp_path, "docx"), tmp_path / "padded.docx", "word/document.xml", body)
    with zipfile.ZipFile(bomb) as archive:
        part = archive.getinfo("word/document.xml")
        assert part.file_size / part.compress_size < office_limits.MAX_RATIO  # passes the ratio
    with pytest.raises(
        DocumentError, match=r"its part word/document\.xml holds over 200,000 paragraphs"
    ):
        fast.process(doc_of(bomb))


@pytest.mark.parametrize("kind", sorted(PARTS))
def test_an_ordinary_file_is_read(fast: UnstructuredPartitionStage, tmp_path: Path, kind: str):
    doc = fast.process(doc_of(_made(tmp_path, kind)))
    assert texts(doc)


def test_a_blank_picture_that_packs_well_is_no_bomb(
    fast: UnstructuredPartitionStage, tmp_path: Path
):
    """Media parts are bounded by the total only: a blank bitmap packs a thousand times."""
    source = _made(tmp_path, "docx")
    picture = tmp_path / "picture.docx"
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(picture, "w", zipfile.ZIP_DEFLATED) as new:
        for item in old.infolist():
            new.writestr(item.filename, old.read(item))
        new.writestr("word/media/blank.bmp", b"\xff" * 4_000_000)
    assert "harbour" in texts(fast.process(doc_of(picture)))
