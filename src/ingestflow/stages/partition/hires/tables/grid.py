"""Table structure for High Res: rows, columns and merged cells from word boxes and ruling lines.

The library's table-structure model (Table Transformer) downloads from a model hub, so ingestflow
recovers structure itself, from what a page already gives: the words of the table region (from
the PDF's text layer, or OCR where there is none) and the rules drawn on the page image.

- Rows are lines of words, except where horizontal rules say otherwise: in a table ruled
  between its rows (a grid), a row is what lies between two rules, so a cell's text may wrap;
  in a table ruled only at its top, under its header and at its bottom, wrapped column titles
  above the header rule make one header row.
- Columns are the vertical rules drawn inside the table when it has any; otherwise the vertical
  gaps that no body row's words cross (rows with fewer cells, such as a header over several
  columns, do not hide a gap).
- Merged cells: in a row where a column boundary is absent (no rule crosses the row, or a phrase
  of the row runs across the gap), the columns on either side are one cell with a `colspan`; in
  a grid, an empty cell with no rule above it belongs to the cell above (a `rowspan`).

`table_html(words, gray)` returns `<table><tr><td>…</td></tr>…</table>`; cells keep their words
in reading order.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from itertools import pairwise
from statistics import median
from typing import Any

from ingestflow.stages.partition.hires.tables.parts import Cell, Word


@dataclass(frozen=True)
class _Flat:
    """A horizontal rule segment: its y and the x range it covers."""

    y: float
    x0: float
    x1: float


@dataclass(frozen=True)
class _Rule:
    """A vertical rule segment: its x and the y range it covers."""

    x: float
    y0: float
    y1: float


def table_html(words: list[Word], gray: Any | None = None) -> str:
    """The table as HTML; empty string when there are no words to place."""
    words = [w for w in words if not is_rule_glyph(w.text)]
    if not words:
        return ""
    return render_html(table_cells(words, gray))


def table_cells(words: list[Word], gray: Any | None = None) -> list[Cell]:
    """The cells of a table from its words and, when given, its grey image (for the rules)."""
    height = median(w.y1 - w.y0 for w in words) or 1.0
    lines = lines_of(words)
    phrases = [phrases_of(line, height) for line in lines]
    left = min(w.x0 for w in words)
    right = max(w.x1 for w in words)
    rules = vertical_rules(gray, height, left, right) if gray is not None else []
    flat = horizontal_rules(gray, height, left, right) if gray is not None else []
    if rules:
        xs = sorted({r.x for r in rules})
        bounds = [left - 1, *xs, right + 1]

        def present(row: list[Word], boundary: int) -> bool:
            top, bottom = min(w.y0 for w in row), max(w.y1 for w in row)
            return any(
                r.x == xs[boundary - 1] and r.y0 <= top + height / 2 and bottom - height / 2 <= r.y1
                for r in rules
            )
    else:
        bounds = gap_bounds(lines, phrases, left, right, height)

        def present(row: list[Word], boundary: int) -> bool:
            return True

    n_cols = len(bounds) - 1
    groups, grid = row_groups(lines, phrases, bounds, flat, left, right)
    cells: list[Cell] = []
    for r, group in enumerate(groups):
        row = [w for i in group for w in lines[i]]
        cut = [present(row, b) for b in range(1, n_cols)]
        column = {id(w): _interval(bounds, w.cx) for w in row}
        if not rules:
            _place_phrases([p for i in group for p in phrases[i]], bounds, cut, column)
        start = 0
        for c in range(1, n_cols + 1):
            if c == n_cols or cut[c - 1]:
                inside = [w for w in row if start <= column[id(w)] < c]
                cells.append(Cell(r, start, 1, c - start, joined(inside)))
                start = c
    if grid:
        cells = _row_spans(cells, lines, groups, flat, bounds)
    return cells


def _place_phrases(
    phrases: list[list[Word]], bounds: list[float], cut: list[bool], column: dict[int, int]
) -> None:
    """Columns without rules: a phrase that runs across a gap spans the columns it covers
    (`cut` loses those boundaries) unless another phrase of the row sits in one of them; then it
    only overhangs, and all its words go to the column of its middle."""
    middles = [_interval(bounds, (p[0].x0 + p[-1].x1) / 2) for p in phrases]
    for index, phrase in enumerate(phrases):
        first = _interval(bounds, phrase[0].x0 + 1)
        last = _interval(bounds, phrase[-1].x1 - 1)
        if first == last:
            continue
        others = {m for j, m in enumerate(middles) if j != index}
        if others & set(range(first, last + 1)):
            for word in phrase:
                column[id(word)] = middles[index]
            continue
        for b in range(first + 1, last + 1):
            cut[b - 1] = False


def erase_rules(gray: Any) -> Any:
    """The grey image with its long horizontal and vertical rules painted white (for OCR)."""
    import cv2
    import numpy as np

    img = np.array(gray, copy=True)
    for kernel in ((max(25, img.shape[1] // 8), 1), (1, max(25, img.shape[0] // 4))):
        lines = _rule_mask(gray, kernel)
        if lines is None:
            return img
        img[cv2.dilate(lines, np.ones((3, 3), np.uint8)) > 0] = 255
    return img


def is_rule_glyph(text: str) -> bool:
    """True for what OCR reads from a drawn rule (`|`, `_`, `—` …) rather than a word."""
    return not text.strip(" |_-—–[]!()'\"\\/:;.,")


def render_html(cells: list[Cell]) -> str:
    """`<table>` markup of cells (a cell covered by another's span is left out)."""
    rows: dict[int, list[Cell]] = {}
    for cell in cells:
        rows.setdefault(cell.row, []).append(cell)
    out = ["<table>"]
    for row in sorted(rows):
        out.append("<tr>")
        for cell in sorted(rows[row], key=lambda c: c.col):
            attrs = ""
            if cell.rowspan > 1:
                attrs += f' rowspan="{cell.rowspan}"'
            if cell.colspan > 1:
                attrs += f' colspan="{cell.colspan}"'
            out.append(f"<td{attrs}>{html.escape(cell.text)}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _rule_mask(gray: Any, kernel: tuple[int, int]) -> Any:
    """The ink of a grey (or RGB) image that survives an opening by a `kernel`-sized line
    (width, height): the rules in that direction. None for an image too small to hold any."""
    import cv2
    import numpy as np

    img = np.asarray(gray)
    if img.ndim == 3:
        img = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    if img.shape[0] < 10 or img.shape[1] < 10:
        return None
    ink = cv2.adaptiveThreshold(img, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, 15, 10)
    return cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, kernel))


# --- rows ---------------------------------------------------------------------------------------
def horizontal_rules(gray: Any, height: float, left: float, right: float) -> list[_Flat]:
    """Horizontal rule segments at least three text heights long, inside the table's width."""
    import cv2

    mask = _rule_mask(gray, (max(20, int(3 * height)), 1))
    if mask is None:
        return []
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask)
    found = []
    for i in range(1, count):
        x, y, w, h = (int(v) for v in stats[i][:4])
        if h <= max(4, height / 3):
            found.append(_Flat(y + h / 2, max(float(x), left), min(float(x + w), right)))
    return [f for f in found if f.x1 > f.x0]


def _between(lines: list[list[Word]], i: int, flat: list[_Flat]) -> list[_Flat]:
    """The horizontal rules between line `i` and line `i + 1`."""
    above = max(w.y1 for w in lines[i])
    below = min(w.y0 for w in lines[i + 1])
    middle_above = median(w.cy for w in lines[i])
    middle_below = median(w.cy for w in lines[i + 1])
    low, high = min(above, middle_below), max(below, middle_above)
    return [f for f in flat if low - 2 <= f.y <= high + 2]


def _covers(rules: list[_Flat], x0: float, x1: float, share: float) -> bool:
    """True when the rules cover at least `share` of the span x0..x1."""
    covered = sum(max(0.0, min(f.x1, x1) - max(f.x0, x0)) for f in rules)
    return covered >= share * max(x1 - x0, 1.0)


def row_groups(
    lines: list[list[Word]],
    phrases: list[list[list[Word]]],
    bounds: list[float],
    flat: list[_Flat],
    left: float,
    right: float,
) -> tuple[list[list[int]], bool]:
    """The lines of each row, and whether the table is ruled between its rows (a grid).

    In a grid, a row is what lies between two rules (a cell's text may wrap onto several lines).
    In a table ruled only at its top, under its header and at its bottom, the lines above the
    header rule are one header row when the later ones only continue the first one's cells
    (wrapped column titles). Otherwise a row is a line."""
    n = len(lines)
    single = [[i] for i in range(n)]
    if n < 2 or not flat:
        return single, False
    between = [_between(lines, i, flat) for i in range(n - 1)]
    ruled = [bool(b) for b in between]
    if sum(ruled) >= 2 and sum(ruled) >= 0.6 * (n - 1) - 0.5:
        groups = [[0]]
        for i in range(1, n):
            if ruled[i - 1]:
                groups.append([i])
            else:
                groups[-1].append(i)
        return groups, len(groups) > 1
    full = [_covers(b, left, right, 0.8) for b in between]
    header_end = next((i for i in range(n - 1) if full[i]), None)
    if header_end is None or header_end == 0:
        return single, False
    head = [_filled(phrases[i], bounds) for i in range(header_end + 1)]
    if all(later <= head[0] for later in head[1:]):
        return [list(range(header_end + 1)), *single[header_end + 1 :]], False
    return single, False


def _filled(line_phrases: list[list[Word]], bounds: list[float]) -> set[int]:
    """The columns a line has words in."""
    return {_interval(bounds, w.cx) for phrase in line_phrases for w in phrase}


def _row_spans(
    cells: list[Cell],
    lines: list[list[Word]],
    groups: list[list[int]],
    flat: list[_Flat],
    bounds: list[float],
) -> list[Cell]:
    """In a ruled grid, an empty cell with no rule above it belongs to the cell above: that one
    spans the rows (`rowspan`)."""
    at = {(c.row, c.col): c for c in cells}
    kept = list(cells)
    for r in range(1, len(groups)):
        rules = _between(lines, groups[r - 1][-1], flat)
        for cell in [c for c in cells if c.row == r]:
            x0, x1 = bounds[cell.col], bounds[cell.col + cell.colspan]
            if cell.text or _covers(rules, x0 + 2, x1 - 2, 0.5):
                continue
            above = at.get((r - 1, cell.col))
            if above is None or above.colspan != cell.colspan or above.col != cell.col:
                continue
            above.rowspan += 1
            kept.remove(cell)
            at[(r, cell.col)] = above
    return kept


# --- columns ------------------------------------------------------------------------------------
def vertical_rules(gray: Any, height: float, left: float, right: float) -> list[_Rule]:
    """Vertical rules drawn between the table's words (outer borders left out)."""
    import cv2

    mask = _rule_mask(gray, (1, max(12, int(1.6 * height))))  # longer than a letter's stroke
    if mask is None:
        return []
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask)
    segments = []
    for i in range(1, count):
        x, y, w, h = (int(v) for v in stats[i][:4])
        if w <= max(4, height / 3) and left + height / 2 < x + w / 2 < right - height / 2:
            segments.append(_Rule(x + w / 2, float(y), float(y + h)))
    merged: list[_Rule] = []  # one x per rule: segments of one rule share it
    for seg in sorted(segments, key=lambda s: s.x):
        same = [m for m in merged if abs(m.x - seg.x) <= 4]
        merged.append(_Rule(same[0].x, seg.y0, seg.y1) if same else seg)
    return merged


def gap_bounds(
    lines: list[list[Word]],
    phrases: list[list[list[Word]]],
    left: float,
    right: float,
    height: float,
) -> list[float]:
    """Column boundaries at the vertical gaps no body row crosses."""
    width = int(right - left) + 2
    crossing = [0] * width
    # Columns are read from the lines with the most cells: a header spanning several columns
    # (fewer phrases) must not hide the gaps between them.
    typical = median(len(p) for p in phrases)
    body = [line for line, p in zip(lines, phrases, strict=True) if len(p) >= typical]
    for line in body:
        row_cover = [False] * width
        for w in line:
            for x in range(int(w.x0 - left), int(w.x1 - left) + 1):
                row_cover[x] = True
        for x, on in enumerate(row_cover):
            crossing[x] += on
    limit = len(body) // 10  # a stray word (a footnote mark) may cross a gap
    gaps: list[tuple[float, float]] = []
    start = None
    for x, count in enumerate([*crossing, len(body) + 1]):
        if count <= limit and start is None:
            start = x
        elif count > limit and start is not None:
            if x - start >= 0.6 * height and start > 0 and x < width:  # not at either edge
                gaps.append((left + start, left + x))
            start = None
    return [left - 1, *((a + b) / 2 for a, b in gaps), right + 1]


def _interval(bounds: list[float], value: float) -> int:
    """Index of the interval of `bounds` holding `value` (clamped to the outer ones)."""
    for i in range(len(bounds) - 1):
        if value < bounds[i + 1]:
            return i
    return len(bounds) - 2


# --- rows and words -----------------------------------------------------------------------------
def lines_of(words: list[Word]) -> list[list[Word]]:
    """Words grouped into lines by vertical overlap, top to bottom, each left to right."""
    lines: list[list[Word]] = []
    for word in sorted(words, key=lambda w: (w.cy, w.x0)):
        if lines:
            last = lines[-1]
            top = median(w.y0 for w in last)
            bottom = median(w.y1 for w in last)
            overlap = min(bottom, word.y1) - max(top, word.y0)
            if overlap > 0.5 * min(bottom - top, word.y1 - word.y0):
                last.append(word)
                continue
        lines.append([word])
    return [sorted(line, key=lambda w: w.x0) for line in lines]


def phrases_of(line: list[Word], height: float) -> list[list[Word]]:
    """A line's words split where the gap between two words is wider than a word space."""
    phrases: list[list[Word]] = [[line[0]]]
    for prev, word in pairwise(line):
        if word.x0 - prev.x1 > 0.6 * height:
            phrases.append([word])
        else:
            phrases[-1].append(word)
    return phrases


def joined(words: list[Word]) -> str:
    """Words in reading order: lines top to bottom, words left to right."""
    return " ".join(w.text for line in lines_of(words) for w in line) if words else ""
