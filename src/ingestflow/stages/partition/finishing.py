"""The settings and metadata applied to a whole document's elements (after its ranges joined)."""

from __future__ import annotations

import copy

from ingestflow.elements import Document, Element
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.ids import stable_id
from ingestflow.stages.partition import headings
from ingestflow.stages.partition.hires.running_heads import type_repeated
from ingestflow.stages.partition.hires.tables import merge as table_merge
from ingestflow.stages.partition.page_ranges import set_hierarchy


def finish(
    settings: UnstructuredPartitionSettings, elements: list[Element], doc: Document
) -> list[Element]:
    """Apply exclude_elements, coordinates and data_source; keep ids unique."""
    st = settings
    tables = st.infer_table_structure or st.pdf_infer_table_structure
    if st.partition_strategy.lays_out_pages and tables:
        elements = table_merge.merge_across_pages(elements)  # over every page range
    if st.partition_strategy.lays_out_pages:
        type_repeated(elements)  # running heads repeated across the document's pages
        headings.set_levels(elements)  # over the whole document: sizes compared across pages
        set_hierarchy(elements)  # the titles' parents by their new levels
    excluded = set(st.exclude_elements or ())
    kept = [element for element in elements if element["type"] not in excluded]
    for element in kept:
        metadata = element["metadata"]
        if not st.coordinates:
            metadata.pop("coordinates", None)
        if doc.data_source:
            merged = dict(metadata.get("data_source") or {})
            merged.update(copy.deepcopy(doc.data_source))
            metadata["data_source"] = merged
    if not st.unique_element_ids:
        dedupe_ids(kept)
    return kept


def dedupe_ids(elements: list[Element]) -> None:
    """Give a repeated deterministic id (identical attachments) a new one from its position."""
    seen: set[str] = set()
    for position, element in enumerate(elements):
        if element["element_id"] in seen:
            element["element_id"] = stable_id(element["element_id"], position)
        seen.add(element["element_id"])
