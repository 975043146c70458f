"""Bulleted lists in High Res output: the layout model has no list class."""

from __future__ import annotations

from typing import Any

#: Element types of a text region that may hold a bulleted list.
_LIST_HOSTS = ("NarrativeText", "UncategorizedText", "Text")
#: Glyphs that start a list item. Not the middle dot (·), which separates keywords and stands in
#: formulas (`d1, · · · , dD`), nor a hyphen.
BULLETS = "•●▪◦■□‣⁃○➢➤►▶✓✔◆◇❖"


def split_list_items(elements: list[dict[str, Any]], unique_ids: bool) -> list[dict[str, Any]]:
    """Text elements that hold bulleted items (the layout model has no list class: a list comes
    as one text region) split into one ListItem per bullet, in place and in order; text before
    the first bullet keeps its type. Only the glyphs of `BULLETS` split, and only when every item
    has words. The items share the region's metadata; the first piece keeps the element's id,
    the others get ids derived from it (random ones when unique_element_ids is true)."""
    import copy

    from ingestflow.stages.ids import new_id

    out: list[dict[str, Any]] = []
    for element in elements:
        items = _bulleted(element["text"]) if element["type"] in _LIST_HOSTS else None
        if items is None:
            out.append(element)
            continue
        head, *items = items
        pieces = [(element["type"], head)] if head else []
        pieces += [("ListItem", item) for item in items]
        for number, (kind, piece) in enumerate(pieces):
            part = element if number == 0 else copy.deepcopy(element)
            part["type"], part["text"] = kind, piece
            if number:
                part["element_id"] = new_id(unique_ids, element["element_id"], number)
            out.append(part)
    return out


def _bulleted(text: str) -> list[str] | None:
    """[text before the first bullet, item, item …], or None when `text` is not a list."""
    import re

    parts = [part.strip() for part in re.split(f"[{BULLETS}]", text)]
    head, items = parts[0], parts[1:]
    if not items or (len(items) < 2 and head):
        return None
    if not all(len(re.findall(r"\w", item)) >= 2 for item in items):
        return None  # a glyph inside a formula or a decoration, not items
    return [head, *items]
