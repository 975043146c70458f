"""One element where the layout model found one region two or three times."""

from __future__ import annotations

from typing import Any

#: Two regions are one when they share at least this part of the smaller one's area.
MIN_SHARED = 0.5


def drop_repeats(elements: list[Any]) -> list[Any]:
    """The library's elements less each one that repeats an earlier one: the same type and text
    on the same page, over the same place (`MIN_SHARED`). The layout model may find a small
    region several times over, at lower confidence (a page number on a straightened scan:
    three Headers '454'); OCR reads the same words into each. Elements without text or
    coordinates are kept as they are."""
    kept: list[Any] = []
    seen: dict[tuple[str, Any, str], list[tuple[float, float, float, float]]] = {}
    for element in elements:
        text = (getattr(element, "text", "") or "").strip()
        box = box_of(element)
        if not text or box is None:
            kept.append(element)
            continue
        key = (getattr(element, "category", ""), element.metadata.page_number, text)
        boxes = seen.setdefault(key, [])
        if any(overlap(box, other) >= MIN_SHARED for other in boxes):
            continue
        boxes.append(box)
        kept.append(element)
    return kept


#: A region inside another one (this share of its area) whose text the other one's holds is
#: dropped (`drop_contained`).
MIN_INSIDE = 0.8
#: Types whose text is not read as the page's (a picture's OCR): they never stand for another.
_PICTURES = {"Image", "Picture", "Figure"}


def drop_contained(elements: list[Any]) -> list[Any]:
    """The elements less each one whose region lies inside another's on the same page
    (`MIN_INSIDE`) and whose text that one's text already holds: the layout model may find a
    block and its parts (an equation's number alone and with the next one: `(13)`, `(13)
    (14)`, `(14)`), and OCR reads the same words into each, so the text came out twice."""
    boxes = [box_of(e) for e in elements]
    texts = [" ".join((getattr(e, "text", "") or "").split()) for e in elements]
    drop: set[int] = set()
    for i, inner in enumerate(elements):
        box = boxes[i]
        if box is None or not texts[i]:
            continue
        for j, outer in enumerate(elements):
            other = boxes[j]
            if (
                j == i
                or j in drop
                or other is None
                or getattr(outer, "category", "") in _PICTURES
                or outer.metadata.page_number != inner.metadata.page_number
                or len(texts[j]) < len(texts[i])
                or (len(texts[j]) == len(texts[i]) and j > i)  # of two alike, the first stays
            ):
                continue
            if _inside(box, other) >= MIN_INSIDE and texts[i] in texts[j]:
                drop.add(i)
                break
    return [e for k, e in enumerate(elements) if k not in drop]


def _inside(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """The part of box `a`'s area inside box `b`."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    area = (a[2] - a[0]) * (a[3] - a[1])
    return w * h / area if w > 0 and h > 0 and area > 0 else 0.0


def box_of(element: Any) -> tuple[float, float, float, float] | None:
    points = getattr(getattr(element.metadata, "coordinates", None), "points", None)
    if not points:
        return None
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """The part of the smaller box's area the two boxes share."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return w * h / smaller if smaller > 0 else 0.0
