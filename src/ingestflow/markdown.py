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
_MARKUP_START = re.compile(r"^(#{1,6}\s|[-*+]\s|\d+[.)]\s|>|\$\$|```|<table)")


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
        if kind == "Table":
            table = meta.get("text_as_html")
            if table or text:
                blocks.append(table.strip() if table else _paragraph(text))
            continue
        if not text:
            continue
        if kind == "Title":
            depth = meta.get("category_depth")
            level = min(6, 1 + (depth if isinstance(depth, int) and depth >= 0 else 0))
            blocks.append("#" * level + " " + " ".join(text.split()))
        elif kind == "Formula":
            latex = meta.get("latex") or text
            blocks.append(f"$$\n{latex.strip()}\n$$")
        elif kind in _LIST:
            item = "- " + " ".join(text.split())
            if blocks and blocks[-1].startswith("- "):  # one list, not a paragraph per item
                blocks[-1] += "\n" + item
            else:
                blocks.append(item)
        elif kind == "CodeSnippet":
            blocks.append(f"```\n{text}\n```")
        else:
            blocks.append(_paragraph(text))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def _paragraph(text: str) -> str:
    """Running text as one paragraph: its lines joined, and a start that Markdown would take
    for markup (a `#`, a list marker, a `<table`) escaped."""
    joined = " ".join(text.split())
    if _MARKUP_START.match(joined):
        joined = "\\" + joined if not joined.startswith("<") else html.escape(joined, quote=False)
    return joined


def _flattened(elements: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """Elements, with each chunk that kept its original elements replaced by them."""
    for element in elements:
        packed = (element.get("metadata") or {}).get("orig_elements")
        if element.get("type") in ("CompositeElement", "TableChunk") and packed:
            originals = _unpacked(packed)
            if originals is not None:
                yield from originals
                continue
        yield element


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
