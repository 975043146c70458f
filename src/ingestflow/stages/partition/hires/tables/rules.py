"""The table model's grid fitted to the rules drawn in the table.

SLANet-1M (`table_model`) reads rows and cells from a table's image, but in a table drawn with
rules it errs in ways the rules correct: its cell boxes drift in tall rows (a word then lands in
the row above), it reads a cell wrapped over two lines as two rows, and its first row may take
in the caption printed above the table. Where the table draws horizontal rules:

- a row boundary with a rule between the rows ends the cells' boxes at the rule, so a word
  belongs to the row between the rules around it;
- in a table whose rows are ruled (rules between at least 40% of its rows, two or more of them
  across the whole table), adjacent rows with no rule between them are one row: its cells are
  multi-line cells, merged column by column (a row under a partial rule, as a column group's
  title, stays a row of its own);
- the table's top and bottom rules bound it: words above or below them (a caption) are outside;
- a column (or row) boundary that some cell spans in every row (column) is no boundary.

Tables without rules are left as the model read them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import median
from typing import Any

from ingestflow.stages.partition.hires.tables.grid import horizontal_rules
from ingestflow.stages.partition.hires.tables.parts import Word
from ingestflow.stages.partition.hires.tables.structure import ModelCell, Structure

#: A rule covering this share of the table's width runs across the whole table.
FULL = 0.8
#: Share of the row boundaries with a rule from which the rules, not the lines, make the rows.
RULED_ROWS = 0.4


@dataclass(frozen=True)
class _Rule:
    """A horizontal rule: its y and whether it runs across the whole table."""

    y: float
    full: bool


def fit(structure: Structure, gray: Any, words: list[Word]) -> Structure:
    """The structure with its rows fitted to the table's horizontal rules (module docstring);
    unchanged when the table has none or the model gave no cell boxes."""
    placed = [c for c in structure.cells if c.box is not None]
    if len(placed) < 2 or gray is None or getattr(gray, "size", 0) == 0:
        return structure
    boxes = [c.box for c in placed if c.box is not None]
    left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
    height = (
        median(w.y1 - w.y0 for w in words) if words else median(b[3] - b[1] for b in boxes)
    ) or 1.0
    rules = _rules(gray, height, left, right)
    if not rules:
        return structure
    centres = _centres(structure)
    between = [_between(rules, centres[r], centres[r + 1]) for r in range(structure.rows - 1)]
    top = _edge(rules, centres[0], above=True) if centres and centres[0] is not None else None
    bottom = _edge(rules, centres[-1], above=False) if centres and centres[-1] is not None else None
    full_inside = sum(1 for b in between if b is not None and any(r.full for r in b))
    ruled = sum(1 for b in between if b)  # an unknown boundary (None) counts as not ruled
    merge = full_inside >= 2 and ruled >= RULED_ROWS * len(between)
    index = [0]  # the new row of each old row
    cuts: list[float | None] = []  # the rule y between consecutive new rows (None: no rule)
    for r, b in enumerate(between):
        if merge and b == []:
            index.append(index[-1])
            continue
        index.append(index[-1] + 1)
        full = [x for x in (b or []) if x.full]
        cuts.append(_nearest(full, centres[r], centres[r + 1]) if full else None)
    cells = _merge_rows(structure.cells, index)
    edges = [top, *cuts, bottom]
    cells = [_snap(c, edges) for c in cells]
    cells = _collapse(cells)
    return Structure(cells, structure.score)


def _rules(gray: Any, height: float, left: float, right: float) -> list[_Rule]:
    """The horizontal rules over the table's width, segments at one height joined, top down."""
    segments = sorted(horizontal_rules(gray, height, 0.0, float(gray.shape[1])), key=lambda f: f.y)
    groups: list[list[Any]] = []
    for seg in segments:
        if seg.x1 <= left or seg.x0 >= right:
            continue  # beside the table
        if groups and seg.y - groups[-1][-1].y <= 3:
            groups[-1].append(seg)
        else:
            groups.append([seg])
    width = max(right - left, 1.0)
    out = []
    for group in groups:
        covered = sum(max(0.0, min(s.x1, right) - max(s.x0, left)) for s in group)
        out.append(_Rule(median(s.y for s in group), covered >= FULL * width))
    return out


def _centres(structure: Structure) -> list[float | None]:
    """Each row's middle: the median middle of its own (single-row) cells' boxes."""
    out: list[float | None] = []
    for r in range(structure.rows):
        mids = [
            (c.box[1] + c.box[3]) / 2
            for c in structure.cells
            if c.row == r and c.rowspan == 1 and c.box is not None
        ]
        out.append(median(mids) if mids else None)
    return out


def _between(rules: list[_Rule], upper: float | None, lower: float | None) -> list[_Rule] | None:
    """The rules between two rows' middles (None when either row has no middle)."""
    if upper is None or lower is None:
        return None
    return [r for r in rules if upper < r.y < lower]


def _nearest(rules: list[_Rule], upper: float | None, lower: float | None) -> float:
    """The y of the rule nearest the middle between two rows."""
    middle = ((upper or 0.0) + (lower or 0.0)) / 2
    return min(rules, key=lambda r: abs(r.y - middle)).y


def _edge(rules: list[_Rule], centre: float, above: bool) -> float | None:
    """The table's top (bottom) rule: the nearest full rule above (below) the first (last)
    row's middle."""
    side = [r.y for r in rules if r.full and (r.y < centre if above else r.y > centre)]
    if not side:
        return None
    return max(side) if above else min(side)


def _merge_rows(cells: list[ModelCell], index: list[int]) -> list[ModelCell]:
    """Cells renumbered onto the merged rows; cells of one merged row that share columns
    become one (their boxes joined)."""
    out: list[ModelCell] = []
    for cell in sorted(cells, key=lambda c: (c.row, c.col)):
        first = index[cell.row]
        last = index[min(cell.row + cell.rowspan - 1, len(index) - 1)]
        moved = replace(cell, row=first, rowspan=last - first + 1)
        hit = next(
            (
                o
                for o in out
                if o.row == first
                and o.col < moved.col + moved.colspan
                and moved.col < o.col + o.colspan
            ),
            None,
        )
        if hit is None:
            out.append(moved)
            continue
        start = min(hit.col, moved.col)
        end = max(hit.col + hit.colspan, moved.col + moved.colspan)
        hit.col, hit.colspan = start, end - start
        hit.rowspan = max(hit.rowspan, moved.rowspan)
        hit.box = _union(hit.box, moved.box)
    return out


def _union(
    a: tuple[float, float, float, float] | None, b: tuple[float, float, float, float] | None
) -> tuple[float, float, float, float] | None:
    if a is None or b is None:
        return a or b
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _snap(cell: ModelCell, edges: list[float | None]) -> ModelCell:
    """The cell's box ended at the rules above its first row and below its last."""
    if cell.box is None:
        return cell
    x0, y0, x1, y1 = cell.box
    upper = edges[cell.row] if cell.row < len(edges) else None
    lower_at = cell.row + cell.rowspan
    lower = edges[lower_at] if lower_at < len(edges) else None
    return replace(
        cell,
        box=(x0, y0 if upper is None else upper, x1, y1 if lower is None else lower),
    )


def _collapse(cells: list[ModelCell]) -> list[ModelCell]:
    """Columns and rows that no cell starts at (a span covers them in every row) removed."""
    return _drop_unstarted(_drop_unstarted(cells, "col", "colspan"), "row", "rowspan")


def _drop_unstarted(cells: list[ModelCell], at: str, span: str) -> list[ModelCell]:
    """Along one axis (`at`/`span`: "col"/"colspan" or "row"/"rowspan"), the lines that no cell
    starts at removed: the cells after one move back, the spans over it shrink."""
    if not cells:
        return cells
    starts = {getattr(c, at) for c in cells}
    for k in range(max(getattr(c, at) + getattr(c, span) for c in cells) - 1, 0, -1):
        if k not in starts:
            cells = [
                replace(c, **{at: getattr(c, at) - 1})
                if getattr(c, at) > k
                else replace(c, **{span: getattr(c, span) - 1})
                if getattr(c, at) < k < getattr(c, at) + getattr(c, span)
                else c
                for c in cells
            ]
    return cells
