"""Tables the layout model did not call tables, found by reading candidate regions as tables.

The layout model (`layout_model`) calls many tables something else: a table crop or screenshot
becomes a figure (Picture) or nothing at all, and a table without rules on a born-digital page
becomes a text region. With `infer_table_structure`, High Res checks such regions with the
table-structure model (`table_model`) and keeps them as Table regions when the grid it reads is
plausible — at least two rows and two columns whose cells hold the region's words
(`plausible`, thresholds measured on tables and on real figures: benchmarks/RESULTS.md, "Tables
wherever they are"):

- every Picture region of a page, and each Formula region whose text reads as words and figures
  (a small table taken for a formula, `MIN_FORMULA_WORDS`);
- on a page with a text layer, a text region whose lines fall into aligned columns (a cheap test
  on the text layer's words comes first, so prose never reaches the model);
- an image file in which the layout model finds no table: the whole image, when it reads as one
  table covering most of the image (a screenshot or a crop of a table); the regions inside it
  (its lines read as text, its header read as a title) are replaced by it.

The words come from the PDF's text layer where the page has one, from OCR of the region
otherwise (after the model has read a plausible grid from the image alone, so a photo or a chart
costs no OCR, and, with PP-OCRv6, after its detector found lines broken into cells: prose is never
read, `ocr_words`). Text-layer words with no gaps between cells never reach the model (`read`).
"""

from __future__ import annotations

import logging
from itertools import pairwise
from statistics import median
from typing import Any

from ingestflow.stages.partition.hires import ocr as ocr_engines
from ingestflow.stages.partition.hires import page_words as words_of
from ingestflow.stages.partition.hires import prose
from ingestflow.stages.partition.hires.tables import blocks as table_blocks
from ingestflow.stages.partition.hires.tables import model as table_model
from ingestflow.stages.partition.hires.tables import promotion as table_promotion
from ingestflow.stages.partition.hires.tables import rules as table_rules
from ingestflow.stages.partition.hires.tables.grid import is_rule_glyph, render_html
from ingestflow.stages.partition.hires.tables.parts import Word
from ingestflow.stages.partition.hires.tables.reading import Reading

_LOG = logging.getLogger(__name__)
#: Layout classes checked for a table.
FIGURE_CLASSES = ("Picture", "Image", "Figure")
TEXT_CLASSES = ("Text", "NarrativeText", "UncategorizedText")
#: The plausibility thresholds (`plausible`), from the measurements in benchmarks/RESULTS.md.
MIN_ROWS = 2
MIN_COLS = 2
MIN_SCORE = 0.97  # tables 0.982 and up; a boxed paragraph 0.953, text on a cover 0.955
MIN_FILLED = 0.6  # share of the grid's cells that hold words
MIN_MULTI_ROWS = 0.6  # share of rows with words in two cells or more
MIN_WORDS_IN = 0.8  # share of the region's words that land in a cell
MIN_GAPPED = 0.5  # share of its lines with a gap between cells (tables 1.0, prose 0.0: `gapped`)
#: Before OCR reads a region's words (High Res without a text layer, PP-OCRv6 for table cells),
#: its text lines are detected: below this share of lines made of two boxes or more (a table's
#: cells), it is prose and its words are not read (`split_lines`: tables 1.0, prose 0.0;
#: benchmarks/RESULTS.md, "High Res speed").
MIN_SPLIT_LINES = 0.25
#: A whole image is one table when the table's cells span this share of its content's width and
#: height (the words' extent).
MIN_COVER = 0.8
#: Padding around a region's crop, in pixels (as for the layout model's own table regions).
PAD = 6


def grid_plausible(rows: int, cols: int, score: float) -> bool:
    """The structure alone could be a table (checked before any OCR)."""
    return rows >= MIN_ROWS and cols >= MIN_COLS and score >= MIN_SCORE


def plausible(reading: Reading) -> bool:
    """True when the grid read from a region is a table: rows and columns, cells with words,
    lines with gaps between the cells."""
    return (
        grid_plausible(reading.rows, reading.cols, reading.score)
        and reading.filled >= MIN_FILLED
        and reading.multi_rows >= MIN_MULTI_ROWS
        and reading.words_in >= MIN_WORDS_IN
        and reading.gapped >= MIN_GAPPED
    )


def read(bgr: Any, words: list[Word] | None, ocr: Any = None) -> Reading | None:
    """The crop read as a table (None when the model finds no plausible grid before OCR);
    `words` in crop pixels, or None to get them from `ocr(crop)` once the grid is plausible.
    Words known beforehand (a text layer's) that `gapped` rejects are not shown to the model:
    whatever grid it read, `plausible` would reject them."""
    if words is not None:
        words = [w for w in words if not is_rule_glyph(w.text)]
        if gapped(words) < MIN_GAPPED:
            return None  # prose, a figure's labels: ~0.2 CPU s of the model spared
    structure = table_model.get_model().structure(bgr)
    if not grid_plausible(structure.rows, structure.cols, structure.score):
        return None
    if words is None:
        words = ocr() if ocr is not None else []
    words = [w for w in words if not is_rule_glyph(w.text)]
    if prose.is_prose(words):  # running text in columns (a newspaper page): never a table
        return Reading([], "", 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, (0.0, 0.0, 0.0, 0.0), words)
    structure = table_rules.fit(structure, table_model.to_gray(bgr), words)
    cells = table_model.fill(structure, words)
    kept = sum(len(c.text.split()) for c in cells)
    by_row: dict[int, int] = {}
    for cell in cells:
        if cell.text:
            by_row[cell.row] = by_row.get(cell.row, 0) + 1
    boxes = [c.box for c in structure.cells if c.box is not None]
    box = (
        (
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        )
        if boxes
        else (0.0, 0.0, 0.0, 0.0)
    )
    return Reading(
        cells=cells,
        html=render_html(cells) if words else "",
        rows=structure.rows,
        cols=structure.cols,
        score=structure.score,
        filled=sum(1 for c in cells if c.text) / len(cells) if cells else 0.0,
        multi_rows=sum(1 for n in by_row.values() if n >= 2) / structure.rows,
        words_in=min(1.0, kept / len(words)) if words else 0.0,
        gapped=gapped(words),
        box=box,
    )


def gapped(words: list[Word]) -> float:
    """Share of the lines (of two words or more) with a gap wider than a word's height between
    two of their words: a table's rows have them between their cells, prose lines do not."""
    from ingestflow.stages.partition.hires.tables import grid as tables

    if len(words) < 2:
        return 0.0
    height = median(w.y1 - w.y0 for w in words) or 1.0
    lines = [line for line in tables.lines_of(words) if len(line) >= 2]
    if not lines:
        return 0.0
    wide = sum(1 for line in lines if len(tables.phrases_of(line, height / 0.6)) >= 2)
    return wide / len(lines)


def split_lines(boxes: list[Word]) -> float:
    """Share of the text lines that hold two boxes or more (0.0 when there is no line): a table's
    rows break into one box per cell, a line of prose is one box."""
    from ingestflow.stages.partition.hires.tables import grid as tables

    lines = tables.lines_of(boxes) if boxes else []
    return sum(1 for line in lines if len(line) >= 2) / len(lines) if lines else 0.0


def columned(words: list[Word]) -> bool:
    """True when words fall into lines of two or more phrases at aligned positions — a table
    without rules rather than prose (the cheap test before the model reads a text region)."""
    from ingestflow.stages.partition.hires.tables import grid as tables

    if len(words) < 6:
        return False
    height = median(w.y1 - w.y0 for w in words) or 1.0
    lines = tables.lines_of(words)
    if len(lines) < 3:
        return False
    phrases = [tables.phrases_of(line, 1.5 * height) for line in lines]
    split = [p for p in phrases if len(p) >= 2]
    if len(split) < max(3, 0.6 * len(lines)):
        return False
    # a gap shared by most split lines: a column boundary, not a wide space in one sentence
    return _shared_gap(split, height)


def _shared_gap(lines: list[list[list[Word]]], height: float) -> bool:
    """True when one vertical gap (x interval free of words) runs through most lines."""
    left = min(p[0][0].x0 for p in lines)
    right = max(p[-1][-1].x1 for p in lines)
    steps = max(1, int((right - left) / (height / 2)))
    best = 0
    for i in range(1, steps):
        x = left + i * (right - left) / steps
        free = sum(1 for line in lines if any(a[-1].x1 < x < b[0].x0 for a, b in pairwise(line)))
        best = max(best, free)
    return best >= 0.8 * len(lines)


# --- the hook in High Res ------------------------------------------------------------------------
def find(layout: Any, image: Any, call: Any, has_text: bool) -> list[dict[str, Any]]:
    """Turn the page's regions that read as tables into Table regions with their HTML (in
    place; see the module docstring); one record per region checked (for the benchmark)."""
    import numpy as np

    elements = layout.elements_array
    class_map = elements.element_class_id_map
    names = [class_map.get(int(c), "") for c in elements.element_class_ids]
    text_layer = has_text and not call.is_image
    candidates = [i for i, n in enumerate(names) if n in FIGURE_CLASSES]
    candidates += [  # a small table taken for a formula: words, not a formula's symbols
        i for i, n in enumerate(names) if n == "Formula" and _wordy(elements.texts[i])
    ]
    if text_layer and any(n in TEXT_CLASSES for n in names):
        runs = words_of.pdf_runs(
            call.path, layout.number - 1, image.width, words_of.image_turn(image)
        )
        candidates += [
            i
            for i, n in enumerate(names)
            if n in TEXT_CLASSES and columned(_inside(runs, _box(elements, i, image)))
        ]
    whole = call.is_image and "Table" not in names
    if not candidates and not whole:
        return []  # nothing to check: no page image conversions either
    page_words = (
        words_of.pdf_words(call.path, layout.number - 1, image.width, words_of.image_turn(image))
        if text_layer and candidates
        else None
    )
    rgb = np.asarray(image.convert("RGB"))
    gray = np.asarray(image.convert("L"))
    records: list[dict[str, Any]] = []
    found: list[tuple[int, Reading]] = []
    inner: list[tuple[Any, str, str, float]] = []  # tables inside a figure (table_blocks)
    for index in sorted(candidates):
        box = _box(elements, index, image)
        reading = _read_box(box, rgb, gray, page_words, call, image.width)
        records.append(_record(names[index], layout.number, box, reading))
        if reading is not None and plausible(reading):
            found.append((index, reading))
            if page_words is None:  # its cells were OCRed: the element says by which engine
                _ocr_region(layout, call, box)
        elif page_words is not None and names[index] in FIGURE_CLASSES:
            for part, crop in table_blocks.parts(box, page_words, image.width, image.height):
                reading = _read_box(crop, rgb, gray, page_words, call, image.width)
                records.append(_record("figure part", layout.number, crop, reading))
                if reading is not None and plausible(reading):
                    inner.append(
                        (
                            part,
                            table_promotion.table_text(reading.cells),
                            reading.html,
                            reading.score,
                        )
                    )
    if whole and not found:
        box = (0.0, 0.0, float(image.width), float(image.height))
        reading = _read_box(box, rgb, gray, None, call, image.width, pad=0)
        record = _record("whole image", layout.number, box, reading)
        records.append(record)
        if reading is not None and plausible(reading) and _covers(reading, rgb):
            table_promotion.replace_all(layout, reading)
            _ocr_region(layout, call, box)
            return records
        if reading is not None and reading.running_text:  # a page of columns: its paragraphs
            prose.replace_page(layout, reading.running_text)
            return records
    if found:
        table_promotion.promote(layout, found)
    if inner:
        table_promotion.ensure_html(layout.elements_array)
        table_blocks.append(layout, inner)
    return records


#: A Formula region whose text has this many words of letters or figures is checked as a table.
MIN_FORMULA_WORDS = 8


def _wordy(text: Any) -> bool:
    """True when a region's text reads as words and figures rather than a formula's symbols."""
    if not isinstance(text, str):
        return False
    tokens = text.split()
    words = [
        t
        for t in tokens
        if (any(c.isdigit() for c in t) or sum(c.isalpha() for c in t) >= 2)
        and sum(c.isalnum() for c in t) >= 0.5 * len(t)
    ]
    return len(words) >= MIN_FORMULA_WORDS and len(words) >= 0.6 * len(tokens)


def _ocr_region(layout: Any, call: Any, box: tuple[float, float, float, float]) -> None:
    """Note the region whose words the table-cell engine read (metadata.ocr_engine)."""
    regions = getattr(call, "ocr_regions", None)
    if regions is not None:
        page = words_of.page_number(layout, call)
        regions.append((page, box, getattr(call, "table_ocr_engine", ocr_engines.TESSERACT)))


def _box(elements: Any, index: int, image: Any) -> tuple[float, float, float, float]:
    """Region `index`'s box with PAD around it, inside the image."""
    x0, y0, x1, y1 = (float(v) for v in elements.element_coords[index])
    return (
        max(0.0, x0 - PAD),
        max(0.0, y0 - PAD),
        min(float(image.width), x1 + PAD),
        min(float(image.height), y1 + PAD),
    )


def _inside(words: list[Word], box: tuple[float, float, float, float]) -> list[Word]:
    """The words whose centre lies in `box`, in the box's own pixels."""
    return [
        Word(w.text, w.x0 - box[0], w.y0 - box[1], w.x1 - box[0], w.y1 - box[1])
        for w in words
        if box[0] <= w.cx <= box[2] and box[1] <= w.cy <= box[3]
    ]


def _read_box(
    box: tuple[float, float, float, float],
    rgb: Any,
    gray: Any,
    page_words: list[Word] | None,
    call: Any,
    width: int,
    pad: int = PAD,
) -> Reading | None:
    """The region read as a table, its words from the text layer or OCR of its crop."""
    top, bottom, left, right = int(box[1]), int(box[3]), int(box[0]), int(box[2])
    crop = gray[top:bottom, left:right]
    if crop.size == 0:
        return None
    bgr = rgb[top:bottom, left:right, ::-1]
    words = _inside(page_words, box) if page_words is not None else None
    if words is not None and not words:
        return None  # a figure with no text in the text layer: no table to read

    reading = read(bgr, words, lambda: ocr_words(crop, bgr, call, width))
    if reading is not None:
        reading.running_text = [
            Word(w.text, w.x0 + box[0], w.y0 + box[1], w.x1 + box[0], w.y1 + box[1])
            for w in reading.running_text
        ]
        reading.box = (
            reading.box[0] + box[0],
            reading.box[1] + box[1],
            reading.box[2] + box[0],
            reading.box[3] + box[1],
        )
    return reading


def ocr_words(crop: Any, bgr: Any, call: Any, width: int) -> list[Word]:
    """A region's words by the engine chosen for table cells (module `ocr`); none when PP-OCRv6's
    detector finds prose (`MIN_SPLIT_LINES`), which cannot be a table: reading it would cost
    about ten times the detection."""
    engine = getattr(call, "table_ocr_engine", ocr_engines.TESSERACT)
    if engine == ocr_engines.TESSERACT:
        return words_of.ocr_words(crop, call.language, max(1.0, 1600 / width))
    if split_lines(ocr_engines.line_boxes(bgr)) < MIN_SPLIT_LINES:
        return []
    return ocr_engines.read_words(bgr)


def _covers(reading: Reading, rgb: Any) -> bool:
    """True when the table's cells span most of the image's ink (the image is the table)."""
    import numpy as np

    ink = np.argwhere(rgb.min(axis=2) < 200)
    if not len(ink):
        return False
    (y0, x0), (y1, x1) = ink.min(axis=0), ink.max(axis=0)
    b = reading.box
    width = max(0.0, min(b[2], x1) - max(b[0], x0))
    height = max(0.0, min(b[3], y1) - max(b[1], y0))
    return width >= MIN_COVER * (x1 - x0) and height >= MIN_COVER * (y1 - y0)


def _record(
    kind: str, page: int, box: tuple[float, ...], reading: Reading | None
) -> dict[str, Any]:
    """What one check read, logged at DEBUG (the benchmark counts them)."""
    record = {
        "region": kind,
        "page": page,
        "box": [round(v) for v in box],
        "table": bool(reading is not None and plausible(reading)),
        **(reading.features() if reading is not None else {"rows": 0, "cols": 0}),
    }
    _LOG.debug("table check: %s", record)
    return record
