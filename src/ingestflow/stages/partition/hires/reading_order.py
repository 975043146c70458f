"""A High Res page's reading order: columns read whole, one after the other, even where their
paragraphs end at the same height.

The library orders a page's regions by a recursive XY-cut (`unstructured.partition.utils.
sorting`): columns first where a gutter runs through the whole page, else bands. A running head
or a title across the columns blocks the page-wide gutter, so the page is cut into bands at every
height where all its columns happen to have a gap between paragraphs, and the columns are read
across, band by band (the left column's first paragraphs, the right's, then the left's next...).

Here the bands are cut the same way, but consecutive bands that share a gutter (the same columns
continue) are put back together before their columns are cut, so a band is kept apart only where
something spans the columns (a running head, a title or a figure across them) or the column
layout changes. Pages without columns come out as the library orders them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Interval = tuple[int, int]


def xy_cut(boxes: Any, indices: Any, res: list[int]) -> None:
    """`recursive_xy_cut_swapped`'s signature: append `indices` in reading order to `res`
    (`boxes`: N×4 integer x0, y0, x1, y1, as the library shrinks them)."""
    rows = [tuple(int(v) for v in box) for box in boxes]
    res.extend(int(indices[i]) for i in order(rows))


def order(boxes: Sequence[tuple[int, ...]]) -> list[int]:
    """The indices of `boxes` in reading order."""
    return _cut(list(range(len(boxes))), boxes, 0)


def _cut(ids: list[int], boxes: Sequence[tuple[int, ...]], depth: int) -> list[int]:
    if len(ids) <= 1 or depth > 30:
        return sorted(ids, key=lambda i: (boxes[i][1], boxes[i][0]))
    columns = _split(ids, boxes, axis=0)
    if len(columns) > 1:
        return [i for c in columns for i in _cut(c, boxes, depth + 1)]
    bands = _split(ids, boxes, axis=1)
    if len(bands) == 1:  # boxes overlap both ways: top to bottom, then left to right
        return sorted(ids, key=lambda i: (boxes[i][1], boxes[i][0]))
    groups: list[tuple[list[int], list[Interval], int]] = []  # boxes, gutters, bands
    for band in bands:
        if groups and groups[-1][1]:
            ids_so_far, gutters, count = groups[-1]
            free = _free(gutters, [(boxes[i][0], boxes[i][2]) for i in band])
            # no box of the band crosses the columns' gutter: the columns go on (a band with
            # no gutter of its own only where two bands already made the columns)
            if free and (_gaps(band, boxes, axis=0) or count >= 2):
                groups[-1] = (ids_so_far + band, free, count + 1)
                continue
        groups.append((band, _gaps(band, boxes, axis=0), 1))
    if len(groups) == 1:  # nothing spans the columns after all (only narrow gaps): as bands
        return [i for band in bands for i in _cut(band, boxes, depth + 1)]
    return [i for group, _, _ in groups for i in _cut(group, boxes, depth + 1)]


def _gaps(ids: list[int], boxes: Sequence[tuple[int, ...]], axis: int) -> list[Interval]:
    """The free intervals between the boxes along `axis` (0: x, 1: y), outer margins excluded."""
    spans = sorted((boxes[i][axis], boxes[i][axis + 2]) for i in ids)
    gaps: list[Interval] = []
    reach = spans[0][1]
    for start, end in spans[1:]:
        if start > reach:
            gaps.append((reach, start))
        reach = max(reach, end)
    return gaps


def _split(ids: list[int], boxes: Sequence[tuple[int, ...]], axis: int) -> list[list[int]]:
    """`ids` in groups between the free intervals along `axis`, in order."""
    gaps = _gaps(ids, boxes, axis)
    if not gaps:
        return [ids]
    cuts = [(a + b) / 2 for a, b in gaps]
    groups: list[list[int]] = [[] for _ in range(len(cuts) + 1)]
    for i in sorted(ids, key=lambda i: (boxes[i][axis], boxes[i][1 - axis])):
        middle = (boxes[i][axis] + boxes[i][axis + 2]) / 2
        groups[sum(1 for c in cuts if middle > c)].append(i)
    return [g for g in groups if g]


def _free(gaps: list[Interval], spans: list[Interval]) -> list[Interval]:
    """The parts of `gaps` that none of `spans` covers."""
    free = list(gaps)
    for s0, s1 in spans:
        rest: list[Interval] = []
        for g0, g1 in free:
            if s1 <= g0 or s0 >= g1:
                rest.append((g0, g1))
                continue
            if s0 > g0:
                rest.append((g0, s0))
            if s1 < g1:
                rest.append((s1, g1))
        free = rest
    return free
