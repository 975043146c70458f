"""Running heads typed: a High Res page's headers, footers and page numbers as Header, Footer
and PageNumber elements, whole, so that `exclude_elements`, chunking and Markdown leave them out.

The layout model finds a page-header or page-footer region for some of them; OCR reads words
outside every region as loose text (the rest of a running head's line: `Federal`, `2024/
Notices` beside the region it found), and page numbers come as text. In the page's top or
bottom margin band (`BAND` of the page's height), a short element is a page number when its text
is a page number's (`7`, `- 7 -`, `Page 3 of 9`, `xii`); a running head when it shares a line
with a header (footer) region, or is loose text (no layout region) with nothing of the page
above (below) it. Body text that happens to end a page keeps its type. Each page is judged
alone, so that a long document read in page ranges on several workers gives what one call gives
here; text repeated across pages is typed over the whole document, after its ranges are joined
(`type_repeated`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ingestflow.stages.partition.hires.repeats import box_of

#: The margin bands: this share of the page's height at its top and at its bottom.
BAND = 0.1
#: A header or footer region taller than this share of the page is a title in large type.
TITLE_HEIGHT = 0.03
#: A running head is short.
MAX_CHARS = 160
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?[-–—(\[]?\s*(?:\d{1,4}|(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})"
    r"(?:ix|iv|v?i{0,3}))\s*[-–—)\]]?"
    r"(?:\s*(?:of|/)\s*\d{1,4})?$",
    re.IGNORECASE,
)
_HEADS = {"Header", "Footer", "PageNumber"}
#: Types never taken for a running head (a table or a picture in the band is the page's).
_KEPT = {"Table", "Image", "Picture", "Figure", "Formula", "PageBreak"}


def type_running_heads(elements: list[Any]) -> list[Any]:
    """The library's elements with the running heads of each page retyped (see the module)."""
    pages: dict[Any, list[int]] = {}
    for i, element in enumerate(elements):
        pages.setdefault(element.metadata.page_number, []).append(i)
    kinds: dict[int, str] = {}
    for indices in pages.values():
        kinds.update(_on_page(elements, indices))
    if not kinds:
        return elements
    return [_retyped(e, kinds[i]) if i in kinds else e for i, e in enumerate(elements)]


def _on_page(elements: list[Any], indices: list[int]) -> dict[int, str]:
    """Index → Header / Footer / PageNumber for the page's running heads."""
    placed = [(i, b) for i in indices if (b := box_of(elements[i])) is not None]
    if not placed:
        return {}
    height = _page_height(elements[placed[0][0]]) or max(b[3] for _, b in placed)
    found: dict[int, str] = {}
    top_band, bottom_band = BAND * height, (1 - BAND) * height
    for i, box in placed:
        element = elements[i]
        kind = getattr(element, "category", "")
        text = " ".join((element.text or "").split())
        if kind in _KEPT or not text or len(text) > MAX_CHARS:
            continue
        if kind in ("Header", "Footer") and box[3] - box[1] > TITLE_HEIGHT * height:
            found[i] = "Title"  # a chapter's title in large type at the top, not a running head
            continue
        others = [b for j, b in placed if j != i and elements[j].category not in _HEADS]
        if _PAGE_NUMBER.match(text) and _last(box, others, height):
            found[i] = "PageNumber"  # below everything, apart: a page number however low the
            continue  # page's margin sits (a filing's `60` at two thirds of its height)
        if box[3] <= top_band:
            edge = "Header"
            alone = all(b[1] >= box[1] - 1 for b in others)  # nothing of the body above it
        elif box[1] >= bottom_band:
            edge = "Footer"
            alone = all(b[3] <= box[3] + 1 for b in others)
        else:
            continue
        if _PAGE_NUMBER.match(text):
            found[i] = "PageNumber"
        elif kind in _HEADS:
            continue
        elif (alone and kind == "UncategorizedText") or any(
            _same_line(box, b) for j, b in placed if elements[j].category == edge
        ):
            found[i] = edge
    return found


#: The gap above a page number at the foot of the page's content, in shares of its height.
FOOT_GAP = 0.015


def _last(box: tuple[float, ...], others: Sequence[tuple[float, ...]], height: float) -> bool:
    """Nothing of the page lies below `box`, and a gap separates it from what lies above."""
    above = [b[3] for b in others if b[3] <= box[1] + 1]
    return (
        bool(others)
        and all(b[3] <= box[1] + 1 for b in others)
        and (not above or box[1] - max(above) >= FOOT_GAP * height)
    )


def _same_line(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """The two boxes share most of their height (parts of one line)."""
    shared = min(a[3], b[3]) - max(a[1], b[1])
    return shared > 0.5 * min(a[3] - a[1], b[3] - b[1])


def _retyped(element: Any, kind: str) -> Any:
    """`element` as a `kind` element: the same text, id and metadata."""
    from unstructured.documents import elements as library

    cls = getattr(library, kind)
    return cls(text=element.text, element_id=element.id, metadata=element.metadata)


def _page_height(element: Any) -> float | None:
    system = getattr(getattr(element.metadata, "coordinates", None), "system", None)
    return float(system.height) if system is not None and system.height else None


#: Repeated text: in a margin band on this share of the document's pages or more (at least 2).
MIN_REPEATED = 1 / 3
_RETYPED_WHEN_REPEATED = {"Title", "NarrativeText", "UncategorizedText", "Text"}


def type_repeated(elements: list[dict[str, Any]]) -> None:
    """Retype, in place, the document's running heads that repeat: text (digits aside) in the
    page's top or bottom margin band on a third of the pages or more (a journal's running line
    `… | www.plosntds.org`, `Revision: 2.4`, a date footer) is Header or Footer on every page."""
    pages: dict[Any, list[tuple[dict[str, Any], str, str]]] = {}
    for element in elements:
        metadata = element.get("metadata") or {}
        text = " ".join((element.get("text") or "").split())
        edge = _edge(metadata)
        if (
            element.get("type") in _RETYPED_WHEN_REPEATED
            and edge
            and text
            and len(text) <= MAX_CHARS
            and metadata.get("partition_strategy") != "fast"
        ):
            pages.setdefault(metadata.get("page_number"), []).append((element, _key(text), edge))
    if len(pages) < 2:
        return
    counts: dict[tuple[str, str], int] = {}
    for found in pages.values():
        for seen in {(k, edge) for _, k, edge in found}:
            counts[seen] = counts.get(seen, 0) + 1
    total = len({(e.get("metadata") or {}).get("page_number") for e in elements} - {None})
    least = max(2.0, MIN_REPEATED * total)
    for found in pages.values():
        for element, key, edge in found:
            if counts[(key, edge)] >= least:
                element["type"] = (
                    "PageNumber" if _PAGE_NUMBER.match(element["text"].strip()) else edge
                )


def _edge(metadata: dict[str, Any]) -> str | None:
    """ "Header" or "Footer" when the element's box lies in the page's top or bottom band."""
    coordinates = metadata.get("coordinates") or {}
    points, height = coordinates.get("points"), coordinates.get("layout_height")
    if not points or not height:
        return None
    ys = [p[1] for p in points]
    if max(ys) <= BAND * height:
        return "Header"
    if min(ys) >= (1 - BAND) * height:
        return "Footer"
    return None


def _key(text: str) -> str:
    """Text with its figures as `#` (a page number or a date changes from page to page)."""
    return re.sub(r"\d+", "#", text.lower())
