"""What a chunk keeps of its elements' enrichments: `entities` and `enriched_by`.

The library's chunkers consolidate only the metadata fields they know, and drop the rest: the
NER results (`metadata.entities`) and the record of which offline backend enriched an element
(`metadata.enriched_by`) would vanish at the chunker that SPEC.md requires after every
enrichment, and the vectordb fields `entities_items` / `entities_relationships` could never be
filled. A chunk carries instead the union of its elements' entities (items and relationships,
each kept once, in the order the elements give them) and of their `enriched_by` entries.
Descriptions and OCR texts live in the elements' text, which chunking keeps anyway.

The chunk's elements are read from the library's `orig_elements` (the element objects
themselves, rebuilt with their ad-hoc metadata); the chunker asks for them only when some
element was enriched, and they are serialised only when the node's settings ask for them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as LibElement

#: The metadata fields carried from elements to their chunks.
CARRIED = ("entities", "enriched_by")


def enriched(elements: Iterable[dict[str, Any]]) -> bool:
    """True when some element dict has a field a chunk must carry."""
    return any(
        any(field in (element.get("metadata") or {}) for field in CARRIED) for element in elements
    )


def chunk_dicts(chunks: list[LibElement], carry: bool, keep_orig: bool) -> list[dict[str, Any]]:
    """The chunks as dicts; with `carry`, each with its elements' `entities` and `enriched_by`
    (read from `orig_elements`, which the chunker was asked for); `orig_elements` itself is
    written only when `keep_orig` (the node's include_orig_elements)."""
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        origins = list(chunk.metadata.orig_elements or []) if carry else []
        if carry and not keep_orig:
            chunk.metadata.orig_elements = None
        as_dict = chunk.to_dict()
        if origins:
            metadata = as_dict.setdefault("metadata", {})
            entities = merged_entities(getattr(o.metadata, "entities", None) for o in origins)
            if entities is not None:
                metadata["entities"] = entities
            by = merged_enriched_by(getattr(o.metadata, "enriched_by", None) for o in origins)
            if by:
                metadata["enriched_by"] = by
        out.append(as_dict)
    return out


def merged_entities(values: Iterable[Any]) -> dict[str, list[Any]] | None:
    """The union of `{"items": [...], "relationships": [...]}` values, each entry kept once
    (first occurrence first); None when no value is an entities object."""
    items: list[Any] = []
    relationships: list[Any] = []
    seen: set[tuple[str, str]] = set()
    found = False
    for value in values:
        if not isinstance(value, dict):
            continue
        found = True
        for kind, into in (("items", items), ("relationships", relationships)):
            for entry in value.get(kind) or []:
                key = (kind, json.dumps(entry, sort_keys=True, ensure_ascii=False))
                if key not in seen:
                    seen.add(key)
                    into.append(entry)
    return {"items": items, "relationships": relationships} if found else None


def merged_enriched_by(values: Iterable[Any]) -> dict[str, Any]:
    """The union of `enriched_by` mappings (node name → backend), first seen first."""
    merged: dict[str, Any] = {}
    for value in values:
        if isinstance(value, dict):
            for node, backend in value.items():
                merged.setdefault(node, backend)
    return merged
