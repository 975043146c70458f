"""Rendered pages kept uncompressed (`hires.page_files`): the same pixels and notes as the
library's PNG files, and the same High Res elements."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from ingestflow.elements import Document
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
from ingestflow.stages.partition.hires.page_files import PageFiles
from tests.stages.test_partition import make_pdf


@pytest.fixture(scope="module")
def turned_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three text pages; the second carries /Rotate 90 (a page the viewer turns)."""
    from pypdf import PdfReader, PdfWriter

    raw = make_pdf(
        [
            "A first page of plain text\nwith two lines",
            "A page stored sideways\nread after a quarter turn",
            "The third page",
        ]
    )
    writer = PdfWriter()
    for index, page in enumerate(PdfReader(io.BytesIO(raw)).pages):
        if index == 1:
            page.rotate(90)
        writer.add_page(page)
    path = tmp_path_factory.mktemp("turned") / "turned.pdf"
    with path.open("wb") as out:
        writer.write(out)
    return path


def library_render() -> Any:
    from unstructured_inference.inference.pdf_image import convert_pdf_to_image

    return convert_pdf_to_image


def both(pdf: Path, folder: Path, dpi: int, pages: PageFiles) -> tuple[list[str], list[str]]:
    """The library's PNG page files of `pdf` and `pages`' files of it, in two folders."""
    render = library_render()
    theirs, ours = folder / "theirs", folder / "ours"
    theirs.mkdir()
    ours.mkdir()
    common = {"filename": str(pdf), "dpi": dpi, "path_only": True}
    expected = render(**common, output_folder=str(theirs))
    return expected, pages.render(render, {**common, "output_folder": str(ours)})


def test_pages_read_back_with_the_pixels_and_notes_of_the_library_png(
    turned_pdf: Path, tmp_path: Path
):
    from PIL import Image

    pages = PageFiles()
    expected, got = both(turned_pdf, tmp_path, 100, pages)
    assert [Path(p).name for p in got] == [Path(p).name for p in expected]
    with pages.opening():
        for mine, library in zip(got, expected, strict=True):
            with Image.open(mine) as image, Image.open(library) as reference:
                assert image.format == "PPM" and reference.format == "PNG"
                assert image.info == reference.info  # the rotation notes, as strings
                assert image.size == reference.size and image.tobytes() == reference.tobytes()
    with Image.open(expected[1]) as reference:
        assert reference.info["pdf_rotation"] == "90"  # the notes this test is about
    with Image.open(got[1]) as image:  # outside the call: Pillow's own open again
        assert "pdf_rotation" not in image.info


def test_a_page_range_renders_only_its_pages(turned_pdf: Path, tmp_path: Path):
    kwargs = {"filename": str(turned_pdf), "dpi": 50, "path_only": True}
    got = PageFiles().render(
        library_render(), {**kwargs, "output_folder": str(tmp_path), "first_page": 2}
    )
    assert [Path(p).name for p in got] == ["page_2.png", "page_3.png"]
    got = PageFiles().render(
        library_render(), {**kwargs, "output_folder": str(tmp_path), "last_page": 1}
    )
    assert [Path(p).name for p in got] == ["page_1.png"]


def test_pages_come_in_batches_and_the_range_is_the_library_s(tmp_path: Path):
    path = tmp_path / "ten.pdf"
    path.write_bytes(make_pdf([f"Page {n} of ten" for n in range(1, 11)]))
    calls: list[tuple[int, int]] = []

    def counted(**kwargs: Any) -> Any:
        calls.append((kwargs["first_page"], kwargs["last_page"]))
        return library_render()(**kwargs)

    def names(**more: Any) -> list[str]:
        kwargs = {"filename": str(path), "dpi": 20, "path_only": True, "output_folder": tmp_path}
        return [Path(p).name for p in PageFiles().render(counted, {**kwargs, **more})]

    assert names() == [f"page_{n}.png" for n in range(1, 11)]
    assert calls == [(1, 8), (9, 16)]  # a batch of 8, then the rest: the document ends there
    assert names(first_page=8) == ["page_8.png", "page_9.png", "page_10.png"]
    assert names(first_page=3, last_page=3) == ["page_3.png"]
    assert names(last_page=9)[-1] == "page_9.png" and len(names(last_page=9)) == 9
    assert names(last_page=0) == [] and names(first_page=11) == []


def test_past_the_budget_pages_are_png_files_with_the_same_notes(turned_pdf: Path, tmp_path: Path):
    from PIL import Image

    one_page = 425 * 550 * 3  # a letter page at 50 dpi, RGB
    pages = PageFiles(budget=one_page)  # room for the first page alone
    expected, got = both(turned_pdf, tmp_path, 50, pages)
    with Image.open(expected[0]) as first:
        assert first.width * first.height * 3 == one_page
    with pages.opening():
        formats = []
        for mine, library in zip(got, expected, strict=True):
            with Image.open(mine) as image, Image.open(library) as reference:
                formats.append(image.format)
                assert image.info == reference.info and image.tobytes() == reference.tobytes()
    assert formats == ["PPM", "PNG", "PNG"]


def test_a_mode_pnm_cannot_hold_is_saved_as_png_with_its_notes(tmp_path: Path):
    from PIL import Image

    pages = PageFiles()
    path = tmp_path / "page_1.png"
    pages.write(path, Image.new("RGBA", (8, 8), (1, 2, 3, 4)), {"pdf_rotation": "180"})
    with Image.open(path) as image:
        assert image.format == "PNG" and image.info["pdf_rotation"] == "180"
    pages.link(path, tmp_path / "other.png")
    assert pages.notes(tmp_path / "other.png") == {"pdf_rotation": "180"}


def numbered(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The elements with their ids (random under High Res) replaced by their order."""
    ids = {e["element_id"]: index for index, e in enumerate(elements)}
    out = []
    for e in elements:
        metadata = {**e["metadata"], "parent_id": ids.get(e["metadata"].get("parent_id"))}
        out.append({**e, "element_id": ids[e["element_id"]], "metadata": metadata})
    return out


@pytest.mark.slow
def test_high_res_gives_the_elements_it_gives_from_the_library_png_files(
    turned_pdf: Path, monkeypatch: pytest.MonkeyPatch
):
    settings = UnstructuredPartitionSettings(
        strategy="hi_res", coordinates=True, extract_image_block_types=["Image", "Table"]
    )
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", settings, RunContext())
    stage.open()

    def run() -> list[dict[str, Any]]:
        doc = Document("turned", "turned", turned_pdf.name, path=turned_pdf)
        return stage.process(doc).elements

    ours = run()
    monkeypatch.setattr(PageFiles, "render", lambda self, render, kwargs: render(**kwargs))
    assert numbered(run()) == numbered(ours)
    text = " ".join(e["text"] for e in ours)
    assert "A page stored sideways" in text and "The third page" in text
