"""Tables inside a larger region: the blocks of a figure's text-layer words laid out as a table.

The layout model may take a whole page, or a two-page spread, for one figure; a table inside it
then reads as no table when the figure is read whole (`table_finding`). On a page with a text
layer, the figure's words say where a table may be: a run of lines whose words fall into two or
more phrases with wide gaps between them, in one column of the page. `blocks` returns the boxes
of such runs (with the header lines above them whose words sit over the table's later columns);
`table_finding` reads each with the table model and keeps those that read as a table.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from ingestflow.stages.partition.hires.tables import grid as tables
from ingestflow.stages.partition.hires.tables.parts import Word

Box = tuple[float, float, float, float]
#: Lines in a run, at least: a table has a header and rows.
MIN_LINES = 3
#: A gap between phrases of a table's line is this many text heights (as `columned`).
PHRASE_GAP = 1.5
#: A gap between the columns of a page (a spread's halves, a two-column page) is wider.
COLUMN_GAP = 4.0


def blocks(words: list[Word]) -> list[Box]:
    """Boxes (in the words' pixels) of the runs of table-like lines among `words`."""
    if len(words) < 6:
        return []
    height = median(w.y1 - w.y0 for w in words) or 1.0
    out: list[Box] = []
    for strip in _strips(words, COLUMN_GAP * height):
        out.extend(_runs(strip, height))
    return out


def _strips(words: list[Word], gap: float) -> list[list[Word]]:
    """The words split at vertical gaps at least `gap` wide that no word crosses (the columns
    of a page or the halves of a spread)."""
    ordered = sorted(words, key=lambda w: w.x0)
    strips: list[list[Word]] = [[ordered[0]]]
    right = ordered[0].x1
    for word in ordered[1:]:
        if word.x0 - right >= gap:
            strips.append([word])
        else:
            strips[-1].append(word)
        right = max(right, word.x1)
    return strips


def _runs(words: list[Word], height: float) -> list[Box]:
    """The runs of at least MIN_LINES consecutive lines of two or more phrases, each with the
    lines just above it whose words all lie right of the run's first column (its header)."""
    lines = tables.lines_of(words)
    phrases = [tables.phrases_of(line, PHRASE_GAP * height) for line in lines]
    found: list[Box] = []
    i = 0
    while i < len(lines):
        if len(phrases[i]) < 2:
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and len(phrases[j + 1]) >= 2:
            j += 1
        if j - i + 1 >= MIN_LINES:
            first_column = max(p[0][-1].x1 for p in phrases[i : j + 1])
            start = i
            while start > 0 and min(w.x0 for w in lines[start - 1]) > first_column:
                start -= 1
            run = [w for line in lines[start : j + 1] for w in line]
            found.append(
                (
                    min(w.x0 for w in run),
                    min(w.y0 for w in run),
                    max(w.x1 for w in run),
                    max(w.y1 for w in run),
                )
            )
        i = j + 1
    return found


def grow(box: Box, words: list[Word]) -> Box:
    """`box` widened over the words on its lines that continue it sideways (gaps narrower than
    a page's column gap): a figure region that cuts a table's last column off."""
    if not words:
        return box
    height = median(w.y1 - w.y0 for w in words) or 1.0
    x0, y0, x1, y1 = box
    same = [w for w in words if y0 <= w.cy <= y1]
    changed = True
    while changed:
        changed = False
        for w in same:
            if w.x0 >= x1 and w.x0 - x1 < COLUMN_GAP * height:
                x1, changed = w.x1, True
            elif w.x1 <= x0 and x0 - w.x1 < COLUMN_GAP * height:
                x0, changed = w.x0, True
    return (x0, y0, x1, y1)


def parts(
    region: Box, page_words: list[Word], width: float, height: float
) -> list[tuple[Box, Box]]:
    """The table-like blocks of a figure region (`region`, page pixels) as (box, crop): the
    block's words' extent, widened over words the region cut off (`grow`), and the crop to read
    (a text height around it: the model reads a crop cut at the text less surely)."""
    inside = [
        Word(w.text, w.x0 - region[0], w.y0 - region[1], w.x1 - region[0], w.y1 - region[1])
        for w in page_words
        if region[0] <= w.cx <= region[2] and region[1] <= w.cy <= region[3]
    ]
    if not inside:
        return []
    pad = median(w.y1 - w.y0 for w in inside)
    out = []
    for x0, y0, x1, y1 in blocks(inside):
        box = grow((x0 + region[0], y0 + region[1], x1 + region[0], y1 + region[1]), page_words)
        crop = (
            max(0.0, box[0] - pad),
            max(0.0, box[1] - pad),
            min(width, box[2] + pad),
            min(height, box[3] + pad),
        )
        out.append((box, crop))
    return out


def append(layout: Any, found: list[tuple[Box, str, str, float]]) -> None:
    """Table regions (box, text, HTML, score) added to the page's regions, after the others
    (the figure around them stays: it holds more than the table)."""
    import numpy as np
    from unstructured_inference.constants import Source
    from unstructured_inference.inference.layoutelement import LayoutElements

    added = LayoutElements(
        element_coords=np.array([list(box) for box, _, _, _ in found], dtype=float),
        texts=np.array([text for _, text, _, _ in found], dtype=object),
        element_probs=np.array([score for _, _, _, score in found]),
        element_class_ids=np.array([0] * len(found)),
        element_class_id_map={0: "Table"},
        sources=np.array([Source.YOLOX] * len(found)),
        text_as_html=np.array([markup or None for _, _, markup, _ in found], dtype=object),
    )
    layout.elements_array = LayoutElements.concatenate([layout.elements_array, added])
