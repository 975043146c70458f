"""Tables that run over a page break, merged into one Table element.

High Res reads each page alone, so a table that continues on the next page comes out as two
Table elements. Two Table elements are one table when the first is the last element of its page
and the second the first of the next page (page headers, footers and numbers aside), and

- the second repeats the first's header row (its first row has the same texts): the repeated
  row is dropped; or
- their columns line up: the same number of columns, and left and right edges within
  `EDGE_TOLERANCE` of the page's width of each other.

The merged element keeps the first's id, page number and coordinates (they refer to its first
page); its `text` and `text_as_html` hold the rows of both, and `metadata.table_continuation`
says which pages it spans and why they were joined (docs/hi_res.md).
"""

from __future__ import annotations

import html
import re
from typing import Any

#: Elements that may stand between the two parts of a table (the page's furniture).
FURNITURE = ("Header", "Footer", "PageNumber", "PageBreak")
#: How far apart (share of the page width) the two parts' left and right edges may be.
EDGE_TOLERANCE = 0.03
REPEATED_HEADER = "repeated_header"
ALIGNED_COLUMNS = "aligned_columns"

Element = dict[str, Any]
Row = list[tuple[str, int, int]]  # (text, colspan, rowspan) per cell


def merge_across_pages(elements: list[Element]) -> list[Element]:
    """The elements with each table continued on the next page merged into one element."""
    out: list[Element] = []
    last_table: int | None = None  # index in `out` of a table that may continue
    for element in elements:
        kind = element.get("type")
        if kind in FURNITURE:
            out.append(element)
            continue
        if kind == "Table" and last_table is not None:
            first = out[last_table]
            why = _continues(first, element)
            if why:
                _join(first, element, why)
                continue
        last_table = len(out) if kind == "Table" else None
        out.append(element)
    return out


def _page(element: Element) -> int | None:
    return (element.get("metadata") or {}).get("page_number")


def _continues(first: Element, second: Element) -> str | None:
    """Why `second` continues `first` (REPEATED_HEADER or ALIGNED_COLUMNS), or None."""
    pages = (first.get("metadata") or {}).get("table_continuation", {}).get("pages")
    last_page = pages[-1] if pages else _page(first)
    if last_page is None or _page(second) != last_page + 1:
        return None
    a = _rows((first.get("metadata") or {}).get("text_as_html"))
    b = _rows((second.get("metadata") or {}).get("text_as_html"))
    if not a or not b:
        return None
    if len(b) > 1 and _texts(b[0]) == _texts(a[0]) and any(_texts(b[0])):
        return REPEATED_HEADER
    if _width(a) == _width(b) and _width(a) >= 2 and _edges_align(first, second):
        return ALIGNED_COLUMNS
    return None


def _rows(markup: str | None) -> list[Row]:
    """The table's rows as (text, colspan, rowspan) cells."""
    from ingestflow.quality.teds import table_tree

    tree = table_tree(markup)
    if tree is None:
        return []
    return [[(c.text, c.colspan, c.rowspan) for c in row.children] for row in tree.children]


def _texts(row: Row) -> list[str]:
    return [re.sub(r"\W+", "", text).lower() for text, _, _ in row]


def _width(rows: list[Row]) -> int:
    """The number of columns: the widest row, counting spans (rows below a rowspan count it)."""
    taken: dict[tuple[int, int], bool] = {}
    for r, row in enumerate(rows):
        col = 0
        for _, colspan, rowspan in row:
            while taken.get((r, col)):
                col += 1
            for dr in range(rowspan):
                for dc in range(colspan):
                    taken[(r + dr, col + dc)] = True
            col += colspan
    return max((c + 1 for _, c in taken), default=0)


def _edges_align(first: Element, second: Element) -> bool:
    """True when both parts have coordinates and their left and right edges line up."""
    a, b = _span_x(first), _span_x(second)
    if a is None or b is None:
        return False
    return abs(a[0] - b[0]) <= EDGE_TOLERANCE and abs(a[1] - b[1]) <= EDGE_TOLERANCE


def _span_x(element: Element) -> tuple[float, float] | None:
    """The element's left and right edges as shares of its page's width."""
    coordinates = (element.get("metadata") or {}).get("coordinates") or {}
    points, width = coordinates.get("points"), coordinates.get("layout_width")
    if not points or not width:
        return None
    xs = [p[0] for p in points]
    return min(xs) / width, max(xs) / width


def _join(first: Element, second: Element, why: str) -> None:
    """`second`'s rows appended to `first` (in place), a repeated header row dropped."""
    metadata = first["metadata"]
    rows = _rows(metadata.get("text_as_html"))
    more = _rows(second["metadata"].get("text_as_html"))
    dropped = ""
    if why == REPEATED_HEADER:
        dropped = " ".join(text for text, _, _ in more[0])
        more = more[1:]
    metadata["text_as_html"] = _html(rows + more)
    text = second.get("text") or ""
    if dropped and text.startswith(dropped):
        text = text[len(dropped) :].lstrip()
    first["text"] = " ".join(t for t in (first.get("text") or "", text) if t)
    note = metadata.setdefault("table_continuation", {"pages": [_page(first)]})
    note["pages"].append(_page(second))
    note.setdefault("matched_by", []).append(why)


def _html(rows: list[Row]) -> str:
    """`<table>` markup of rows of (text, colspan, rowspan) cells."""
    out = ["<table>"]
    for row in rows:
        out.append("<tr>")
        for text, colspan, rowspan in row:
            attrs = (f' rowspan="{rowspan}"' if rowspan > 1 else "") + (
                f' colspan="{colspan}"' if colspan > 1 else ""
            )
            out.append(f"<td{attrs}>{html.escape(text)}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)
