"""Every image format High Res takes, every page of it: multi-page TIFFs, BMP, WebP and HEIC.

The pages are drawn here (test_hires.draw_page) and saved with Pillow, except the HEIC file:
Pillow's HEIF plug-in here (pi-heif) only decodes, so `fixtures/images/harbour-log-2p.heic` was
made once with pillow-heif 1.8.1 (two pages of four drawn lines each; the second photographed
sideways, turned a quarter clockwise).
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest

from ingestflow.quality import word_recall
from ingestflow.stages.partition.hires import orientation
from tests.conftest import FIXTURES
from tests.stages.test_hires import HEADING, PARAGRAPH, auto, draw_page, run

pytestmark = pytest.mark.slow

HEIC = FIXTURES / "images" / "harbour-log-2p.heic"
#: The drawn lines of its two pages.
HEIC_PAGES = [
    [
        "Harbour Log, First Page",
        "The pilot boarded the steamer at dawn",
        "and brought her through the narrows",
        "before the tide turned in the afternoon.",
        "The harbour master signed the book at noon.",
    ],
    [
        "Harbour Log, Second Page",
        "Two barges waited by the grain quay",
        "while the crane was mended on Tuesday",
        "and the lamps were lit along the mole.",
        "The ferry kept her hours all the week.",
    ],
]


def second_page() -> Any:
    """A short page of another size than draw_page's, its words known."""
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("RGB", (1275, 1650), "white")
    font = ImageFont.load_default(size=40)
    ImageDraw.Draw(page).text((120, 150), "Annex on the winter moorings", fill="black", font=font)
    return page


@pytest.fixture(scope="module")
def tiff(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three pages: a page with a table, a short page of another size, the table page again
    in grey (the modes and sizes of a scanner's multi-page TIFF vary page to page)."""
    path = tmp_path_factory.mktemp("tiff") / "scan.tiff"
    page = draw_page()
    page.save(path, save_all=True, append_images=[second_page(), page.convert("L")])
    return path


def texts_by_page(elements: list[dict[str, Any]]) -> dict[int, str]:
    pages: dict[int, str] = {}
    for element in elements:
        number = element["metadata"]["page_number"]
        pages[number] = f"{pages.get(number, '')} {element['text']}".strip()
    return pages


def test_every_page_of_a_multi_page_tiff_is_read_with_its_crops(tiff: Path):
    # a crop of a block on page 2 or 3 failed the document (IndexError): the library crops
    # from the file as if it held one page
    elements = run(tiff, extract_image_block_types=["Table", "Title"], coordinates=True)
    pages = texts_by_page(elements)
    assert sorted(pages) == [1, 2, 3]
    assert HEADING in pages[1] and HEADING in pages[3]
    assert "winter moorings" in pages[2]
    tables = [e for e in elements if e["type"] == "Table"]
    assert {e["metadata"]["page_number"] for e in tables} == {1, 3}
    from PIL import Image

    for element in elements:
        if element["type"] not in ("Table", "Title"):
            continue
        crop = Image.open(io.BytesIO(base64.b64decode(element["metadata"]["image_base64"])))
        points = element["metadata"]["coordinates"]["points"]
        width = max(x for x, _ in points) - min(x for x, _ in points)
        assert abs(crop.width - width) < 0.2 * width + 40, (element["text"], crop.size, width)


def test_auto_reads_every_page_of_a_multi_page_tiff(tiff: Path):
    doc = auto(tiff)
    assert sorted(texts_by_page(doc.elements)) == [1, 2, 3]
    assert doc.stats["pages_by_strategy"] == {"hi_res": 1}  # one file, read by High Res


@pytest.mark.parametrize("suffix", ["bmp", "webp"])
def test_a_bmp_and_a_webp_scan_give_their_text(tmp_path: Path, suffix: str):
    path = tmp_path / f"scan.{suffix}"
    draw_page().save(path, **({"lossless": True} if suffix == "webp" else {}))
    elements = run(path)
    assert {e["metadata"]["page_number"] for e in elements} == {1}
    assert word_recall(f"{HEADING} {PARAGRAPH}", " ".join(e["text"] for e in elements)) >= 0.95


def test_every_page_of_a_heic_file_is_read_upright():
    elements = run(HEIC, extract_image_block_types=["Title"])
    pages = texts_by_page(elements)
    assert sorted(pages) == [1, 2]
    assert word_recall(" ".join(HEIC_PAGES[0]), pages[1]) >= 0.95
    assert word_recall(" ".join(HEIC_PAGES[1]), pages[2]) >= 0.95
    assert {
        e["metadata"].get("page_rotation") for e in elements if e["metadata"]["page_number"] == 2
    } == {270}
    assert all(e["metadata"].get("image_base64") for e in elements if e["type"] == "Title")


def test_a_heic_file_is_looked_at_before_the_library_registers_its_opener(
    monkeypatch: pytest.MonkeyPatch,
):
    # the library registers Pillow's HEIF plug-in inside its own call, after the orientation
    # hook has opened the file: the first HEIC file of a process was never turned upright
    from PIL import Image

    for table in (Image.OPEN, Image.MIME, Image.EXTENSION, Image.SAVE, Image.DECODERS):
        for key in [k for k in table if "HEI" in str(k).upper() or "AVIF" in str(k).upper()]:
            monkeypatch.delitem(table, key)
    monkeypatch.setattr(Image, "ID", [i for i in Image.ID if i not in ("HEIF", "AVIF")])
    straightener = orientation.Straightener(HEIC, True)
    assert straightener.image_frames() is not None
    assert {index: turn.rotation for index, turn in straightener.turns.items()} == {1: 270}
