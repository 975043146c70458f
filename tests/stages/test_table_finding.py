"""Tables wherever they are (issue 22 point 2): a table the layout model calls a figure or text,
an image that is a table, and a table over two pages (`table_finding`, `table_merge`).

Bounds (benchmarks/RESULTS.md, "Tables wherever they are"): the tables drawn here are clean
renderings like the fidelity set's, which the model reads with TEDS-struct 1.0 once found, so
their rows are asserted exactly; the plausibility rule is checked at the values measured there
(tables: token score ≥ 0.982, `gapped` 1.0; the prose and figures read as grids: 0.953–0.975,
`gapped` 0.0).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ingestflow.elements import Document
from ingestflow.quality import table_rows
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage
from ingestflow.stages.partition.hires.tables import finding as table_finding
from ingestflow.stages.partition.hires.tables import merge as table_merge
from ingestflow.stages.partition.hires.tables import promotion as table_promotion
from ingestflow.stages.partition.hires.tables.grid import Word

#: A table with no rules at all, two columns of names and values (the layout model finds
#: nothing in such an image, or a figure).
KEY_VALUE = [
    ["Title", "Image-based table recognition"],
    ["Venue", "European Conference on Computer Vision"],
    ["Year", "2020"],
    ["Pages", "564-580"],
    ["Dataset", "Scientific articles"],
]


def partition(path: Path, **settings: Any) -> list[dict[str, Any]]:
    st = UnstructuredPartitionSettings(strategy="hi_res", coordinates=True, **settings)
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", st, RunContext())
    return stage.process(Document(path.name, path.name, path.name, path=path)).elements


def draw_key_value(path: Path) -> Path:
    """KEY_VALUE drawn without rules on white, as a 96 dpi screenshot would show it."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", 22)
    image = Image.new("RGB", (820, 60 + 44 * len(KEY_VALUE)), "white")
    draw = ImageDraw.Draw(image)
    for r, (key, value) in enumerate(KEY_VALUE):
        draw.text((30, 30 + 44 * r), key, fill="black", font=font)
        draw.text((220, 30 + 44 * r), value, fill="black", font=font)
    image.save(path)
    return path


# --- the rules, on words made here ---------------------------------------------------------------
def test_prose_is_not_columned_nor_gapped_and_a_borderless_table_is():
    prose = [
        Word(w, 10 + 60 * i, 20 * line, 60 + 60 * i, 20 * line + 14)
        for line in range(5)
        for i, w in enumerate(["the", "table", "below", "was", "written", "in", "plain", "text"])
    ]
    assert not table_finding.columned(prose)
    assert table_finding.gapped(prose) == 0.0
    table = [
        Word(w, x, 20 * line, x + 50, 20 * line + 14)
        for line in range(5)
        for w, x in ((f"item{line}", 10), (str(line * 3), 200), (f"{line}.50", 320))
    ]
    assert table_finding.columned(table)
    assert table_finding.gapped(table) == 1.0


def test_a_text_layers_prose_never_reaches_the_table_model(monkeypatch: pytest.MonkeyPatch):
    import numpy as np

    from ingestflow.stages.partition.hires.tables import model as table_model

    def no_model() -> Any:
        raise AssertionError("the table model was asked to read prose")

    monkeypatch.setattr(table_model, "get_model", no_model)
    prose = [
        Word(w, 10 + 60 * i, 20 * line, 60 + 60 * i, 20 * line + 14)
        for line in range(5)
        for i, w in enumerate(["the", "table", "below", "was", "written", "in", "plain", "text"])
    ]
    assert table_finding.read(np.full((120, 500, 3), 255, np.uint8), prose) is None


def test_a_grid_needs_two_rows_two_columns_and_words_in_its_cells():
    reading = table_finding.Reading(
        cells=[], html="", rows=5, cols=2, score=0.99, filled=1.0, multi_rows=1.0,
        words_in=1.0, gapped=1.0, box=(0, 0, 1, 1),
    )  # fmt: skip
    assert table_finding.plausible(reading)
    changes: list[dict[str, float]] = [
        {"cols": 1}, {"rows": 1}, {"score": 0.955}, {"filled": 0.3}, {"multi_rows": 0.2},
    ]  # fmt: skip
    changes.append({"gapped": 0.0})  # prose read as a grid (a page of text, measured 0.0)
    for change in changes:
        assert not table_finding.plausible(table_finding.Reading(**{**vars(reading), **change}))


PROSE = [
    "Table recognition reads the rows and columns of a table",
    "from its image, but a paragraph of running text has no",
    "columns at all: each of its lines is one run of words",
    "from the left margin to the right one, like these.",
]


def draw_prose(path: Path) -> Path:
    """PROSE drawn as a paragraph, in the print of `draw_key_value`."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", 22)
    image = Image.new("RGB", (820, 60 + 44 * len(PROSE)), "white")
    draw = ImageDraw.Draw(image)
    for r, line in enumerate(PROSE):
        draw.text((30, 30 + 44 * r), line, fill="black", font=font)
    image.save(path)
    return path


@pytest.mark.slow
def test_prose_is_not_read_by_ocr_when_looking_for_a_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import numpy as np
    from PIL import Image

    from ingestflow.stages.partition.hires import ocr

    read: list[int] = []
    read_words = ocr.read_words

    def counted(image: Any) -> list[Word]:
        read.append(1)
        return read_words(image)

    monkeypatch.setattr(ocr, "read_words", counted)
    call = SimpleNamespace(table_ocr_engine=ocr.RAPIDOCR, language="eng")

    def words(path: Path) -> list[str]:
        rgb = np.asarray(Image.open(path).convert("RGB"))
        bgr = np.ascontiguousarray(rgb[:, :, ::-1])
        gray = np.asarray(Image.open(path).convert("L"))
        return [w.text for w in table_finding.ocr_words(gray, bgr, call, rgb.shape[1])]

    prose = draw_prose(tmp_path / "prose.png")
    lines = ocr.line_boxes(Image.open(prose))
    assert len(lines) == len(PROSE)  # one box per line: nothing is split into cells
    assert table_finding.split_lines(lines) == 0.0
    assert words(prose) == []
    assert read == []  # the words of prose were never read
    assert {"Venue", "2020", "564-580"} <= set(words(draw_key_value(tmp_path / "kv.png")))
    assert read == [1]


# --- merging across pages ------------------------------------------------------------------------
def table(page: int, html: str, x0: float = 100, x1: float = 900) -> dict[str, Any]:
    points = [[x0, 100], [x0, 500], [x1, 500], [x1, 100]]
    return {
        "type": "Table",
        "element_id": f"t{page}",
        "text": " ".join(" ".join(r) for r in table_rows(html)),
        "metadata": {
            "page_number": page,
            "text_as_html": html,
            "coordinates": {"points": points, "layout_width": 1000, "layout_height": 1300},
        },
    }


def html_of(rows: list[list[str]]) -> str:
    return "<table>" + "".join(
        "<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows
    ) + "</table>"  # fmt: skip


HEAD = ["Item", "Quantity", "Total"]


def test_a_table_whose_header_repeats_on_the_next_page_is_one_table():
    first = table(1, html_of([HEAD, ["a", "1", "2"], ["b", "3", "4"]]))
    second = table(2, html_of([HEAD, ["c", "5", "6"]]), x0=300)  # not aligned: the header says
    footer = {"type": "Footer", "text": "1", "metadata": {"page_number": 1}}
    merged = table_merge.merge_across_pages([first, footer, second])
    assert [e["type"] for e in merged] == ["Table", "Footer"]
    assert table_rows(merged[0]["metadata"]["text_as_html"]) == [
        HEAD, ["a", "1", "2"], ["b", "3", "4"], ["c", "5", "6"],
    ]  # fmt: skip
    assert merged[0]["metadata"]["table_continuation"] == {
        "pages": [1, 2],
        "matched_by": ["repeated_header"],
    }
    assert merged[0]["text"] == "Item Quantity Total a 1 2 b 3 4 c 5 6"


def test_aligned_columns_join_and_anything_else_keeps_two_tables():
    first = table(3, html_of([HEAD, ["a", "1", "2"]]))
    more = table(4, html_of([["c", "5", "6"]]), x0=110, x1=890)
    merged = table_merge.merge_across_pages([first, more])
    assert len(merged) == 1
    assert merged[0]["metadata"]["table_continuation"]["matched_by"] == ["aligned_columns"]
    # not the next page, other columns, text in between, or edges apart: two tables
    body = html_of([HEAD, ["a", "1", "2"]])
    text = {"type": "NarrativeText", "text": "x", "metadata": {"page_number": 4}}
    cases = [
        [table(5, html_of([["c", "5", "6"]]))],
        [table(4, html_of([["c", "5"]]))],
        [text, table(4, html_of([["c", "5", "6"]]))],
        [table(4, html_of([["c", "5", "6"]]), x0=400)],
    ]
    for rest in cases:
        elements = [table(3, body), *rest]
        assert len(table_merge.merge_across_pages(elements)) == len(elements)


# --- High Res end to end -------------------------------------------------------------------------
@pytest.mark.slow
def test_an_image_that_is_a_table_comes_out_as_one_table(tmp_path: Path):
    elements = partition(draw_key_value(tmp_path / "key_value.png"), infer_table_structure=True)
    assert [e["type"] for e in elements] == ["Table"]
    assert table_rows(elements[0]["metadata"]["text_as_html"]) == KEY_VALUE


@pytest.mark.slow
def test_without_table_inference_nothing_is_read_as_a_table(tmp_path: Path):
    elements = partition(draw_key_value(tmp_path / "key_value.png"))
    assert "Table" not in [e["type"] for e in elements]


#: A table too long for one page: page 1 holds the header and rows 1–ROWS_1, page 2 repeats
#: the header and holds the rest.
ROWS = [
    [f"Sample {n}", f"{n * 7 % 50}.{n % 10}", f"{n * 13 % 90}", f"batch {n % 4}"]
    for n in range(1, 31)
]
ROWS_1 = 22
HEADER = ["Sample", "Weight (g)", "Count", "Batch"]


def two_page_table_pdf() -> bytes:
    """Two US Letter pages: a heading, a paragraph and the first rows of a table ruled at its
    top, under its header and at its bottom; then the rest of the table under its header
    again, and a closing line (Helvetica, a text layer)."""
    pages = []
    for part, rows in enumerate((ROWS[:ROWS_1], ROWS[ROWS_1:])):
        ops = []
        top = 720
        if part == 0:
            ops.append("BT /F1 18 Tf 72 720 Td (Measurements of the samples) Tj ET")
            ops.append("BT /F1 11 Tf 72 690 Td (Each sample was weighed and counted twice.) Tj ET")
            top = 660
        xs = [72, 222, 332, 432, 540]
        ops.append("0.8 w")
        y = top
        ops.append(f"{xs[0]} {y} m {xs[-1]} {y} l S")
        for r, row in enumerate([HEADER, *rows]):
            for c, text in enumerate(row):
                ops.append(f"BT /F1 10 Tf {xs[c] + 6} {y - 16} Td ({text}) Tj ET")
            y -= 24
            if r == 0:
                ops.append(f"{xs[0]} {y} m {xs[-1]} {y} l S")
        ops.append(f"{xs[0]} {y} m {xs[-1]} {y} l S")
        if part == 1:
            ops.append(f"BT /F1 11 Tf 72 {y - 40} Td (All samples were kept cold.) Tj ET")
        pages.append(("\n".join(ops) + "\n").encode())
    return _pdf(pages)


def _pdf(streams: list[bytes]) -> bytes:
    """A PDF of one page per content stream (US Letter, Helvetica as /F1)."""
    n = len(streams)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, stream in enumerate(streams):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i)
        )
        objects.append(b"<< /Length %d >>\nstream\n%sendstream" % (len(stream), stream))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@pytest.mark.slow
def test_a_table_over_two_pages_comes_out_as_one_table(tmp_path: Path):
    path = tmp_path / "samples.pdf"
    path.write_bytes(two_page_table_pdf())
    elements = partition(path, infer_table_structure=True)
    tables = [e for e in elements if e["type"] == "Table"]
    assert len(tables) == 1, [(e["type"], e["metadata"]["page_number"]) for e in elements]
    assert tables[0]["metadata"]["page_number"] == 1
    assert tables[0]["metadata"]["table_continuation"] == {
        "pages": [1, 2],
        "matched_by": ["repeated_header"],
    }
    assert table_rows(tables[0]["metadata"]["text_as_html"]) == [HEADER, *ROWS]


#: A table with no rules at all on a text PDF, between two paragraphs.
BORDERLESS = [
    ["Item", "Quantity", "Unit price", "Total"],
    ["Notebook", "12", "2.50", "30.00"],
    ["Pencil", "40", "0.35", "14.00"],
    ["Stapler", "2", "7.90", "15.80"],
    ["Folder", "25", "0.80", "20.00"],
]


def borderless_pdf() -> bytes:
    """One page: a heading, a paragraph, BORDERLESS without any rule, a closing paragraph."""
    ops = ["BT /F1 18 Tf 72 720 Td (Office supplies) Tj ET"]
    paragraph = [
        "The supplies bought this quarter are listed below with their quantities and prices;",
        "the total of each line is the quantity times the unit price, before any discount.",
    ]
    for i, line in enumerate(paragraph):
        ops.append(f"BT /F1 11 Tf 72 {690 - 15 * i} Td ({line}) Tj ET")
    xs = [72, 200, 300, 400]
    for r, row in enumerate(BORDERLESS):
        for c, text in enumerate(row):
            ops.append(f"BT /F1 11 Tf {xs[c]} {620 - 22 * r} Td ({text}) Tj ET")
    ops.append("BT /F1 11 Tf 72 480 Td (Prices include the delivery to the office.) Tj ET")
    return _pdf([("\n".join(ops) + "\n").encode()])


def test_a_pages_words_are_read_once_and_a_new_file_of_that_name_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import os

    import pypdfium2 as pdfium

    from ingestflow.stages.partition.hires import page_words

    opened: list[str] = []
    document = pdfium.PdfDocument

    def counted(p: str) -> Any:
        opened.append(p)
        return document(p)

    monkeypatch.setattr(pdfium, "PdfDocument", counted)
    path = tmp_path / "supplies.pdf"
    path.write_bytes(borderless_pdf())
    first = page_words.pdf_words(path, 0, 1700)
    assert page_words.pdf_words(path, 0, 1700) == first  # table finding, then the builder
    assert len(opened) == 1
    assert {"Notebook", "30.00"} <= {w.text for w in first}
    path.write_bytes(two_page_table_pdf())
    os.utime(path, ns=(1, 1))  # another file by the same name (a reused temporary name)
    assert "Notebook" not in {w.text for w in page_words.pdf_words(path, 0, 1700)}
    assert len(opened) == 2


def page_layout(path: Path, regions: list[tuple[str, tuple[float, ...]]]) -> tuple[Any, Any]:
    """The PDF's first page rendered as High Res renders it, and a page layout holding
    `regions` (layout class, box in points from the top left) as the layout model gives them."""
    import numpy as np
    import pypdfium2 as pdfium
    from unstructured_inference.constants import Source
    from unstructured_inference.inference.layoutelement import LayoutElements

    from ingestflow.stages.partition import hires
    from ingestflow.stages.partition.hires.layout_model import CDLA_CLASSES

    pdf = pdfium.PdfDocument(str(path))
    image = pdf[0].render(scale=hires.DPI / 72).to_pil().convert("RGB")
    pdf.close()
    class_map = {i: layout for i, (_, layout) in enumerate(CDLA_CLASSES)}
    ids = {layout: i for i, layout in reversed(list(class_map.items()))}
    scale = hires.DPI / 72
    elements = LayoutElements(
        element_coords=np.array([[v * scale for v in box] for _, box in regions], dtype=float),
        texts=np.array([None] * len(regions), dtype=object),
        element_probs=np.array([0.9] * len(regions)),
        element_class_ids=np.array([ids[kind] for kind, _ in regions]),
        element_class_id_map=class_map,
        sources=np.array([Source.YOLOX] * len(regions)),
    )
    return SimpleNamespace(elements_array=elements, number=1), image


@pytest.mark.slow
def test_a_borderless_table_the_layout_model_calls_text_becomes_a_table(tmp_path: Path):
    from ingestflow.stages.partition import hires

    path = tmp_path / "supplies.pdf"
    path.write_bytes(borderless_pdf())
    # the regions as the layout model gave them for such a table (the fidelity set's no_rules
    # PDF): a paragraph and the table, both called text
    layout, image = page_layout(path, [("Text", (70, 98, 540, 120)), ("Text", (70, 160, 460, 270))])
    call = hires.Call(path, is_image=False, tables=True, language="eng")
    checks = table_finding.find(layout, image, call, has_text=True)
    assert [c["region"] for c in checks] == ["Text"]  # prose is not read by the model at all
    elements = layout.elements_array
    kinds = [elements.element_class_id_map[int(c)] for c in elements.element_class_ids]
    assert kinds == ["Text", "Table"]
    assert table_rows(elements.text_as_html[1]) == BORDERLESS


def test_a_table_region_without_text_takes_its_cells_text():
    # small print at 96 dpi: OCR of the whole page reads nothing in the table, OCR of its
    # enlarged crop reads the cells; without text the library drops the element
    import numpy as np
    from unstructured_inference.inference.layoutelement import LayoutElements

    elements = LayoutElements(
        element_coords=np.array([[0, 0, 10, 10], [0, 20, 10, 30]], dtype=float),
        texts=np.array(["", "a caption"], dtype=object),
        element_class_ids=np.array([4, 3]),
        element_class_id_map={3: "Caption", 4: "Table"},
        text_as_html=np.array([html_of([HEAD, ["a", "1", "2"]]), None], dtype=object),
    )
    layout = SimpleNamespace(elements_array=elements, number=1)
    table_promotion.fill_texts(layout)
    assert list(layout.elements_array.texts) == ["Item Quantity Total a 1 2", "a caption"]
