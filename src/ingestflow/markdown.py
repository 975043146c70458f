"""A document's elements as Markdown, as a reader wants the page: headings by depth, lists,
tables as HTML, display formulas as `$$…$$`, running heads (headers, footers, page numbers)
left out. What `ingestflow jobs download --format markdown` writes and the page benchmark
scores."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

#: Types a reader skips: running heads, and the markers between pages.
LEFT_OUT = {"Header", "Footer", "PageNumber", "PageBreak"}
#: Types whose text is not the page's text (a picture's own OCR stays with the picture).
PICTURES = {"Image", "Picture", "Figure"}
_LIST = {"ListItem", "List-item"}
_CHUNKS = {"CompositeElement", "TableChunk"}
#: A line start Markdown reads as markup: a heading, a list item, a quote, a fence, a rule.
_MARKUP_START = re.compile(r"^(#{1,6}(\s|$)|[-*+](\s|$)|>|\$\$|```|~~~|(?:[-*_]\s*){3,}$)")
#: An ordered list's start (`1. `, `2) `): escaped at its dot, as `\1` is no escape.
_NUMBERED = re.compile(r"^(\d{1,9})([.)])(\s|$)")
#: A line start that opens an HTML block (`<table`, `<div>`, `<!--`, `</p>`).
_HTML_START = re.compile(r"^<[A-Za-z/!?]")


def to_markdown(elements: Iterable[dict[str, Any]]) -> str:
    """The Markdown of one document's elements, in their order (chunks are written as the
    elements they were made of, when they kept them)."""
    blocks: list[str] = []
    for element in _flattened(elements):
        kind = element.get("type", "")
        text = (element.get("text") or "").strip()
        meta = element.get("metadata") or {}
        if kind in LEFT_OUT or kind in PICTURES:
            continue
        if kind in ("Table", "TableChunk"):
            table = meta.get("text_as_html")
            if isinstance(table, str) and table.strip():
                # a blank line would end the HTML block mid-table
                blocks.append(re.sub(r"\n\s*\n", "\n", table.strip()))
            elif text:
                blocks.append(_paragraph(text))
            continue
        if not text:
            continue
        if kind == "Title":
            depth = meta.get("category_depth")
            level = min(6, 1 + (depth if isinstance(depth, int) and depth >= 0 else 0))
            # a closing run of `#` would be read as the heading's end marker
            heading = re.sub(r"(^|\s)(#+)$", r"\1\\\2", " ".join(text.split()))
            blocks.append("#" * level + " " + heading)
        elif kind == "Formula":
            latex = meta.get("latex") or text
            blocks.append(f"$$\n{latex.strip()}\n$$")
        elif kind in _LIST:
            item = "- " + _paragraph(text)
            if blocks and blocks[-1].startswith("- "):  # one list, not a paragraph per item
                blocks[-1] += "\n" + item
            else:
                blocks.append(item)
        elif kind == "CodeSnippet":
            blocks.append(f"```\n{text}\n```")
        elif kind in _CHUNKS:  # a chunk without its elements: its parts as paragraphs
            blocks.extend(_paragraph(part) for part in re.split(r"\n\s*\n", text) if part.strip())
        else:
            blocks.append(_paragraph(text))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def _paragraph(text: str) -> str:
    """Running text as one paragraph: its lines joined, and a start that Markdown would take
    for markup (a `#`, a list marker, a rule, an HTML tag) escaped."""
    joined = " ".join(text.split())
    if _HTML_START.match(joined):
        return html.escape(joined, quote=False)
    if _NUMBERED.match(joined):
        return _NUMBERED.sub(r"\1\\\2\3", joined, count=1)
    if _MARKUP_START.match(joined):
        return "\\" + joined
    return joined


def _flattened(elements: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """Elements, with each chunk that kept its original elements replaced by them. An element
    too long for one chunk is in each of the chunks it was split over: written once."""
    last_id = None  # the element the previous chunk ended with
    for element in elements:
        packed = (element.get("metadata") or {}).get("orig_elements")
        # a chunk that is one whole table has the type Table, and HTML of the chunker's making
        originals = _unpacked(packed) if packed else None
        if originals is None:
            last_id = None
            yield element
            continue
        if originals and last_id is not None and originals[0].get("element_id") == last_id:
            originals = originals[1:]  # the rest of an element the previous chunk began
        if originals:
            last_id = originals[-1].get("element_id")
        yield from originals


def _unpacked(packed: Any) -> list[dict[str, Any]] | None:
    """`orig_elements` as written (gzipped JSON in base64, the library's form), or None."""
    if isinstance(packed, list):
        return [e for e in packed if isinstance(e, dict)]
    if not isinstance(packed, str):
        return None
    import base64
    import binascii
    import json
    import zlib

    try:
        data = json.loads(zlib.decompress(base64.b64decode(packed)))
    except (binascii.Error, zlib.error, ValueError):
        return None
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else None
