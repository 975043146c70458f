"""The text layer's words of a PDF page stored turned (`/Rotate`), in the frame of the page image
the library reads: a landscape table stored on a portrait page, and a page whose `/Rotate`
turns its text sideways (which the library turns back after rendering)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingestflow.stages.partition.hires import page_words
from ingestflow.stages.partition.hires.tables.grid import Word
from tests.stages.test_table_finding import _pdf, partition, two_page_table_pdf

WIDTH = 1700  # the page image's width at the library's 200 dpi (US Letter, portrait)


def variants(folder: Path) -> dict[str, Path]:
    """The first page of a ruled table with a text layer, as stored upright; as a landscape
    page would be stored (its content drawn a quarter turned, `/Rotate 270` showing it
    upright); and with `/Rotate 90` alone (shown sideways)."""
    from pypdf import PdfReader, PdfWriter, Transformation

    whole = folder / "two.pdf"
    whole.write_bytes(two_page_table_pdf())
    upright = folder / "upright.pdf"
    writer = PdfWriter()
    writer.add_page(PdfReader(whole).pages[0])
    writer.write(upright)

    landscape = folder / "landscape.pdf"
    writer = PdfWriter(clone_from=upright)
    page = writer.pages[0]
    width, height = float(page.mediabox.width), float(page.mediabox.height)
    page.add_transformation(Transformation().rotate(-90).translate(0, width))
    page.mediabox.upper_right = (height, width)
    page.cropbox.upper_right = (height, width)
    page.rotation = 270
    writer.write(landscape)

    sideways = folder / "sideways.pdf"
    writer = PdfWriter(clone_from=upright)
    writer.pages[0].rotation = 90
    writer.write(sideways)
    return {"upright": upright, "landscape": landscape, "sideways": sideways}


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return variants(tmp_path_factory.mktemp("turned"))


def same(a: list[Word], b: list[Word]) -> bool:
    """The same words in the same places (pdfium may list a turned page's lines in another
    order; the words' places are what the table builders use)."""
    a, b = (sorted(words, key=lambda w: (round(w.y0), w.x0)) for words in (a, b))
    return [w.text for w in a] == [w.text for w in b] and all(
        max(abs(p.x0 - q.x0), abs(p.y0 - q.y0), abs(p.x1 - q.x1), abs(p.y1 - q.y1)) < 0.5
        for p, q in zip(a, b, strict=True)
    )


def test_a_landscape_page_stored_turned_gives_the_upright_page_s_words(pdfs: dict[str, Path]):
    upright = page_words.pdf_words(pdfs["upright"], 0, WIDTH)
    assert len(upright) > 20 and "Measurements" in [w.text for w in upright]
    assert same(page_words.pdf_words(pdfs["landscape"], 0, WIDTH), upright)
    assert same(
        page_words.pdf_runs(pdfs["landscape"], 0, WIDTH),
        page_words.pdf_runs(pdfs["upright"], 0, WIDTH),
    )


def test_a_page_turned_sideways_gives_its_words_where_its_image_has_them(pdfs: dict[str, Path]):
    upright = page_words.pdf_words(pdfs["upright"], 0, WIDTH)
    # as rendered: the page shown a quarter turned clockwise, 2200 px wide
    shown = page_words.pdf_words(pdfs["sideways"], 0, 2200)
    first = upright[0]
    # the heading's line runs down the image: one word, as a turned column title is
    turned = next(w for w in shown if w.text.startswith(first.text))
    assert turned.text == "Measurements of the samples"
    assert abs(turned.x0 - (2200 - first.y1)) < 0.5 and abs(turned.y0 - first.x0) < 0.5
    # the library turns that image back upright (its notes say by how much): the upright words
    assert same(page_words.pdf_words(pdfs["sideways"], 0, WIDTH, turn=90), upright)


def test_the_library_s_turn_is_read_from_the_page_image_s_notes():
    from PIL import Image

    image: Any = Image.new("L", (4, 4))
    assert page_words.image_turn(image) == 0
    image.info["pdf_rotation_correction"] = "90"
    assert page_words.image_turn(image) == 90
    image.info["pdf_rotation_correction"] = "x"
    assert page_words.image_turn(image) == 0


def test_pdfium_s_line_breaks_split_no_word_of_an_upright_page(tmp_path: Path):
    # pdfium breaks the lines of a turned page mid-word; on an upright page its breaks stand
    # (a superscript after a name stays its own word)
    stream = b"BT /F1 10 Tf 72 700 Td (Shen) Tj 2 4 Td /F1 6 Tf (1) Tj ET\n"
    path = tmp_path / "sup.pdf"
    path.write_bytes(_pdf([stream]))
    assert [w.text for w in page_words.pdf_words(path, 0, 612)] == ["Shen", "1"]


@pytest.mark.slow
def test_a_table_on_a_page_stored_turned_reads_as_on_the_upright_page(pdfs: dict[str, Path]):
    html = {}
    for name, path in pdfs.items():
        tables = [e for e in partition(path, infer_table_structure=True) if e["type"] == "Table"]
        assert len(tables) == 1, name
        html[name] = tables[0]["metadata"]["text_as_html"]
    assert "Measurements" not in html["upright"] and "<td>" in html["upright"]
    assert html["landscape"] == html["upright"]
    assert html["sideways"] == html["upright"]
