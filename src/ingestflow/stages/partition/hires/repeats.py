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
        box = _box(element)
        if not text or box is None:
            kept.append(element)
            continue
        key = (getattr(element, "category", ""), element.metadata.page_number, text)
        boxes = seen.setdefault(key, [])
        if any(_shared(box, other) >= MIN_SHARED for other in boxes):
            continue
        boxes.append(box)
        kept.append(element)
    return kept


def _box(element: Any) -> tuple[float, float, float, float] | None:
    points = getattr(getattr(element.metadata, "coordinates", None), "points", None)
    if not points:
        return None
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def _shared(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """The part of the smaller box's area the two boxes share."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return w * h / smaller if smaller > 0 else 0.0
