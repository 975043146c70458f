"""High Res OCR engines: PP-OCRv6 (rapidocr's bundled models) reads the small print of table
cells that tesseract garbles, is chosen per language and use (Korean and page text stay with
tesseract), says so in the metadata, and never touches the network. Figures behind the choice:
benchmarks/RESULTS.md, "OCR"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from ingestflow.elements import Document
from ingestflow.errors import EnvironmentProblem
from ingestflow.quality import table_rows, word_recall
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
from ingestflow.stages.partition.hires import ocr, page_words

pytestmark = pytest.mark.slow

FONT = "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"
NUMBERS = ["33.3", "0.716", "12.05"]
HEADING = "Quarterly Harbour Report"
LINE = "The harbour authority reviewed the cargo volumes of the quarter."
TABLE = [["Port", "Share", "Index"], ["Aberdeen", "33.3", "0.716"], ["Bergen", "12.05", "4.281"]]


def font(size: int) -> Any:
    from PIL import ImageFont

    if not Path(FONT).is_file():
        pytest.skip(f"the Liberation fonts (Debian fonts-liberation) are not at {FONT}")
    return ImageFont.truetype(FONT, size)


def small_print(size: int = 12) -> Any:
    """A row of numeric table cells in 12 px print (a 4 pt table footnote at 200 dpi)."""
    from PIL import Image, ImageDraw

    face = font(size)
    width = 20 + sum(int(face.getlength(t)) + 30 for t in NUMBERS)
    image = Image.new("RGB", (width, size * 3), "white")
    draw = ImageDraw.Draw(image)
    x = 10
    for text in NUMBERS:
        draw.text((x, size), text, fill="black", font=face)
        x += int(face.getlength(text)) + 30
    return image


def test_pp_ocr_reads_small_print_digits_that_tesseract_garbles():
    image = small_print()
    # the table path before: tesseract on the crop, as High Res ran it on a 200 dpi page
    before = [w.text for w in page_words.ocr_words(np.asarray(image.convert("L")), "eng", 1.0)]
    assert "33.3" not in before and "0.716" not in before, before  # "333°", "0716"
    words = ocr.read_words(image)
    assert [w.text for w in words] == NUMBERS
    assert all(0 <= w.x0 < w.x1 <= image.width and 0 <= w.y0 < w.y1 <= image.height for w in words)
    assert [w.x0 for w in words] == sorted(w.x0 for w in words)


def test_short_cells_are_recognised_at_their_own_width(monkeypatch: pytest.MonkeyPatch):
    """A batch of crops is as wide as its widest crop: rapidocr's default pads every crop to
    at least 320 px, so a one-number cell cost as much as a line of text."""
    rec = ocr.get_engine().text_rec
    widths: list[int] = []

    def recording(batch: Any, session: Any = rec.session) -> Any:
        widths.append(batch.shape[-1])
        return session(batch)

    monkeypatch.setattr(rec, "session", recording)
    words = ocr.read_words(small_print(16))
    assert [w.text for w in words] == NUMBERS
    assert widths and max(widths) < 320, widths  # 48 px high: a number is ~100 px wide


def test_the_engine_is_chosen_per_language(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(ocr.ENGINE_ENV, raising=False)
    assert ocr.engine_for(["eng"], "table") == ocr.RAPIDOCR
    assert ocr.engine_for(["eng"], "page") == ocr.TESSERACT  # as good, at 2.5-7 times the CPU
    assert ocr.engine_for(["kor"]) == ocr.TESSERACT  # PP-OCRv6 in the wheel has no Korean
    assert ocr.engine_for(["eng", "kor"], "table") == ocr.TESSERACT
    assert ocr.engine_for(["deu"]) == ocr.TESSERACT  # served, but not measured here
    # Chinese: PP-OCRv6 read OmniDocBench's Chinese pages better than tesseract (0.533/0.644)
    assert ocr.engine_for(["chi_sim", "eng"], "page") == ocr.RAPIDOCR
    assert ocr.engine_for(["chi_tra"], "table") == ocr.RAPIDOCR
    assert ocr.engine_for(["chi_sim", "kor"], "page") == ocr.TESSERACT  # no Korean in the wheel
    monkeypatch.setenv(ocr.ENGINE_ENV, "tesseract")
    assert ocr.engine_for(["eng"]) == ocr.TESSERACT
    monkeypatch.setenv(ocr.ENGINE_ENV, "rapidocr")
    assert ocr.engine_for(["eng", "deu"]) == ocr.RAPIDOCR
    assert ocr.engine_for(["eng"], "page") == ocr.RAPIDOCR
    with pytest.raises(EnvironmentProblem, match=r"cannot read kor: .+ unset INGESTFLOW_OCR"):
        ocr.engine_for(["eng", "kor"])
    monkeypatch.setenv(ocr.ENGINE_ENV, "paddle")
    with pytest.raises(EnvironmentProblem, match=r"'paddle' is not an OCR engine choice; use"):
        ocr.engine_for(["eng"])


def test_chinese_needs_no_tesseract_data_and_korean_still_does(monkeypatch: pytest.MonkeyPatch):
    """Chinese pages are read by PP-OCRv6 alone, so the node does not ask for tesseract's
    chi_sim data (before: "ocr_languages needs tesseract data for chi_sim")."""
    from ingestflow.stages.partition.hires import environment

    monkeypatch.delenv(ocr.ENGINE_ENV, raising=False)
    monkeypatch.setattr(environment, "tesseract_languages", lambda: {"eng", "osd"})
    environment.check_environment("Partitioner", ["chi_sim", "eng"], tables=True)
    with pytest.raises(EnvironmentProblem, match=r"needs tesseract data for kor"):
        environment.check_environment("Partitioner", ["kor"], tables=True)


def test_a_changed_model_file_stops_with_what_to_reinstall(monkeypatch: pytest.MonkeyPatch):
    name, _ = ocr.MODELS["rec"]
    monkeypatch.setitem(ocr.MODELS, "rec", (name, "0" * 64))
    with pytest.raises(EnvironmentProblem, match=r"is not the expected one .+ reinstall rapidocr"):
        ocr.model_paths()
    assert "reinstall rapidocr==3.10.0" in (ocr.available() or "")


def test_the_models_load_and_read_with_no_network(tmp_path: Path):
    """A fresh process whose every connection attempt fails loads the models from the wheel;
    rapidocr's import reads its model catalogue once (two of its modules each read it), and
    OmegaConf is left as it was."""
    image = tmp_path / "cell.png"
    small_print().save(image)
    script = f"""
import json, socket
def refuse(*args, **kwargs):
    raise OSError("network touched")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from pathlib import Path
from omegaconf import OmegaConf
read = []
library_load = OmegaConf.load
def counting(file_, *, max_yaml_expanded_nodes=10000):  # the library's shape (its guard checks)
    read.append(Path(file_).name)
    return library_load(file_)
OmegaConf.load = staticmethod(counting)
from PIL import Image
from ingestflow.stages.partition.hires import ocr
words = [w.text for w in ocr.read_words(Image.open({str(image)!r}))]
print("catalogue read:", read.count("default_models.yaml"), OmegaConf.load is counting)
print(json.dumps(words))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == NUMBERS
    assert "catalogue read: 1 True" in out.stdout


# --- through High Res ----------------------------------------------------------------------------
def draw_page() -> Any:
    """A scanned page at 200 dpi: a heading, a line of text and a ruled table of decimals."""
    from PIL import Image, ImageDraw

    page = Image.new("RGB", (1700, 2200), "white")
    draw = ImageDraw.Draw(page)
    draw.text((150, 150), HEADING, fill="black", font=font(60))
    draw.text((150, 300), LINE, fill="black", font=font(36))
    top, left, col, row = 500, 200, 420, 80
    for r, cells in enumerate(TABLE):
        for c, text in enumerate(cells):
            draw.text((left + c * col + 20, top + r * row + 20), text, fill="black", font=font(34))
    for r in range(len(TABLE) + 1):
        draw.line([(left, top + r * row), (left + 3 * col, top + r * row)], fill="black", width=3)
    for c in range(4):
        draw.line([(left + c * col, top), (left + c * col, top + 3 * row)], fill="black", width=3)
    return page


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ocr") / "scan.png"
    draw_page().save(path)
    return path


def run(path: Path, languages: list[str]) -> list[dict[str, Any]]:
    st = UnstructuredPartitionSettings(
        strategy="hi_res", ocr_languages=languages, infer_table_structure=True
    )
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
    stage.precheck()
    return stage.process(Document(path.name, path.name, path.name, path=path)).elements


def test_english_table_cells_are_read_by_pp_ocr_and_say_so(
    scan: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(ocr.ENGINE_ENV, raising=False)
    elements = run(scan, ["eng"])
    text = " ".join(e["text"] for e in elements)
    assert word_recall(f"{HEADING} {LINE}", text) == 1.0
    tables = [e for e in elements if e["type"] == "Table"]
    assert len(tables) == 1
    cells = {c for row in table_rows(tables[0]["metadata"]["text_as_html"]) for c in row}
    assert {"Port", "33.3", "0.716", "12.05", "4.281"} <= cells
    assert tables[0]["metadata"]["ocr_engine"] == "rapidocr-ppocrv6"
    assert "0.716" in tables[0]["text"]  # the Table's text is the cells' reading too
    page_text = [e for e in elements if e["text"].strip() and e["type"] != "Table"]
    assert page_text and {e["metadata"].get("ocr_engine") for e in page_text} == {"tesseract"}


def test_pp_ocr_is_loaded_by_the_first_table_that_needs_it(
    scan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Opening High Res with tables does not load PP-OCRv6 (a worker reading text-layer PDFs
    never needs it); the first scanned table does."""
    from tests.stages.test_partition import make_pdf

    monkeypatch.delenv(ocr.ENGINE_ENV, raising=False)
    monkeypatch.setattr(ocr, "_ENGINE", None)  # this process's engine, put back after
    st = UnstructuredPartitionSettings(strategy="hi_res", infer_table_structure=True)
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
    stage.open()
    text = tmp_path / "text.pdf"
    text.write_bytes(make_pdf(["A page with a text layer\nand no table at all"]))
    assert stage.process(Document("t", "t", text.name, path=text)).elements
    assert ocr._ENGINE is None
    elements = stage.process(Document("s", "s", scan.name, path=scan)).elements
    assert ocr._ENGINE is not None
    assert [e["metadata"]["ocr_engine"] for e in elements if e["type"] == "Table"] == [
        "rapidocr-ppocrv6"
    ]


def test_a_korean_request_still_uses_tesseract(korean: tuple[list[dict[str, Any]], list[str]]):
    elements, _ = korean
    read = [e for e in elements if e["text"].strip()]
    assert word_recall(HEADING, " ".join(e["text"] for e in read)) == 1.0
    assert read and {e["metadata"].get("ocr_engine") for e in read} == {"tesseract"}


def test_the_override_reads_whole_pages_with_pp_ocr(scan: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ocr.ENGINE_ENV, "rapidocr")
    elements = run(scan, ["eng"])
    read = [e for e in elements if e["text"].strip()]
    assert word_recall(f"{HEADING} {LINE}", " ".join(e["text"] for e in read)) == 1.0
    assert read and {e["metadata"].get("ocr_engine") for e in read} == {"rapidocr-ppocrv6"}


# --- tesseract's input files ---------------------------------------------------------------------
def tesseract_inputs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The image files the tesseract wrapper hands tesseract from now on (recorded, then run)."""
    from unstructured_pytesseract import pytesseract as wrapper

    seen: list[str] = []
    run_tesseract = wrapper.run_tesseract

    def recording(input_filename: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(input_filename)
        return run_tesseract(input_filename, *args, **kwargs)

    monkeypatch.setattr(wrapper, "run_tesseract", recording)
    return seen


@pytest.fixture(scope="module")
def korean(scan: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """One High Res run of the scan in English and Korean (the default engine choice), with the
    image files handed to tesseract recorded: read by the two tests that need that run."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(ocr.ENGINE_ENV, raising=False)
        inputs = tesseract_inputs(patch)
        elements = run(scan, ["eng", "kor"])
    return elements, inputs


def test_tesseract_reads_the_same_words_from_a_pnm_as_from_a_png(monkeypatch: pytest.MonkeyPatch):
    import unstructured_pytesseract as tess

    page = np.asarray(draw_page().convert("L"))
    inputs = tesseract_inputs(monkeypatch)
    png = tess.image_to_data(page, lang="eng", output_type=tess.Output.DICT)
    with ocr.raw_tesseract_input():
        pnm = tess.image_to_data(page, lang="eng", output_type=tess.Output.DICT)
    assert [Path(name).suffix for name in inputs] == [".PNG", ".PPM"]
    assert pnm == png
    assert HEADING.split()[0] in pnm["text"]


def test_hi_res_hands_tesseract_uncompressed_images(korean: tuple[list[dict[str, Any]], list[str]]):
    elements, inputs = korean  # page text and table cells both by tesseract
    assert word_recall(HEADING, " ".join(e["text"] for e in elements)) == 1.0
    assert len(inputs) >= 2
    assert {Path(name).suffix for name in inputs} == {".PPM"}


def test_a_heading_in_light_type_on_a_dark_band_tesseract_cannot_read_is_read():
    """Tesseract reads nothing in white type on a dark band (a chapter's title), and the
    library drops a region without text: PP-OCRv6 reads the regions the page's OCR left
    empty."""
    from PIL import Image, ImageDraw, ImageFont
    from unstructured_inference.inference.layoutelement import LayoutElements

    from ingestflow.stages.partition.hires import unread

    image = Image.new("RGB", (900, 300), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 900, 140), fill=(20, 90, 70))
    font = ImageFont.load_default(size=64)
    draw.text((60, 30), "Poems", fill="white", font=font)
    layout = SimpleNamespace(
        elements_array=LayoutElements(
            element_coords=np.array([[40.0, 20.0, 400.0, 120.0]]),
            texts=np.array([""], dtype=object),
            element_class_ids=np.array([1]),
            element_class_id_map={0: "Text", 1: "Title"},
        )
    )
    assert unread.fill_unread(layout, image, ["eng"]) == [(40.0, 20.0, 400.0, 120.0)]
    assert layout.elements_array.texts[0] == "Poems"
    layout.elements_array.texts[0] = ""
    assert unread.fill_unread(layout, image, ["kor"]) == []  # a language PP-OCRv6 does not serve
