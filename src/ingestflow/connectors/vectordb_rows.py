"""A Document's elements as rows of a vectordb collection, built before anything is written.

`RowBuilder` makes one row per element with exactly the collection's fields (every metadata leaf
too, in `$meta`, when the collection takes dynamic fields): metadata is flattened by `_`-joined
path, each value goes through its field's `FieldWriter`, and a document whose values don't fit
fails as a whole with every problem listed and nothing changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingestflow.connectors.vectordb_schema import JSON_LIMIT, SPECIAL, SchemaInfo
from ingestflow.connectors.vectordb_values import (
    OMIT,
    FieldWriter,
    Notes,
    Skip,
    cut_utf8,
    json_bytes,
)
from ingestflow.elements import Document
from ingestflow.errors import DocumentError


def flatten_metadata(metadata: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every child of `metadata` (leaves and nested objects) by its `_`-joined path (rule 4)."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        name = f"{prefix}{key}"
        out[name] = value
        if isinstance(value, dict):
            out.update(flatten_metadata(value, name + "_"))
    return out


class RowBuilder:
    """Builds a document's rows: only the collection's fields, or everything when it is dynamic."""

    def __init__(self, info: SchemaInfo, policies: Mapping[str, str]) -> None:
        self.info = info
        self.policies = dict(policies)
        fields = info.fields
        self.dim = fields["embeddings"].dim
        self.ids = FieldWriter(fields["element_id"], "fail")
        self.record = FieldWriter(fields["record_id"], "fail")
        self.text = FieldWriter(fields["text"], self.policies.get("text", "fail"))
        self.type = None
        if "type" in fields:
            self.type = FieldWriter(fields["type"], self.policies.get("type", "fail"))
        self.metadata = [
            FieldWriter(spec, self.policies.get(spec.name, "fail"))
            for spec in fields.values()
            if spec.name not in SPECIAL and not spec.function_output
        ]
        self.names = set(fields)

    def build(self, doc: Document) -> tuple[list[dict[str, Any]], list[int], Notes]:
        """Rows, their rough sizes (characters) and notes; DocumentError when values don't fit."""
        notes = Notes()
        rows: list[dict[str, Any]] = []
        sizes: list[int] = []
        seen: dict[str, int] = {}
        try:
            record_id = self.record(doc.record_id, "the record id", notes)
        except Skip:
            record_id = None
        for element in doc.elements:
            if len(notes.problems) >= 20:
                break
            eid = element.get("element_id")
            eid_text = str(eid)
            try:
                row = self._row(element, eid_text, record_id, notes)
            except Skip:
                continue
            if row is None:
                notes.skipped += 1
                continue
            seen[row["element_id"]] = seen.get(row["element_id"], 0) + 1
            rows.append(row)
            sizes.append(sum(len(v) for v in row.values() if isinstance(v, str)) + 4 * len(row))
        for eid, count in seen.items():
            if count > 1:
                notes.problem(f"element_id {eid} appears {count} times; element ids must be unique")
        if notes.problems:
            shown = notes.problems[:10]
            more = len(notes.problems) - len(shown)
            raise DocumentError(
                f"vectordb: record {doc.record_id} ({doc.filename}) cannot be written, nothing "
                f"was changed: " + "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
            )
        return rows, sizes, notes

    def _row(
        self, element: Mapping[str, Any], eid: str, record_id: Any, notes: Notes
    ) -> dict[str, Any] | None:
        vector = element.get("embeddings")
        if vector is None:
            if not str(element.get("text") or "").strip():
                return None
            notes.problem(f"element {eid}: has text but no embeddings")
            raise Skip
        if hasattr(vector, "tolist"):
            vector = vector.tolist()
        if len(vector) != self.dim:
            notes.problem(
                f"element {eid}: embeddings has {len(vector)} dimensions; the collection's "
                f"'embeddings' field has {self.dim}"
            )
            raise Skip
        where = f"element {eid}"
        row: dict[str, Any] = {
            "element_id": self.ids(element.get("element_id"), where, notes),
            "embeddings": vector,
        }
        if record_id is None:
            raise Skip
        row["record_id"] = record_id
        metadata = element.get("metadata") or {}
        flat = flatten_metadata(metadata) if metadata else {}
        values = [("text", self.text, element.get("text"))]
        if self.type is not None:
            values.append(("type", self.type, element.get("type")))
        values += [(w.name, w, flat.get(w.name)) for w in self.metadata]
        failed = False
        for name, writer, raw in values:
            try:
                value = writer(raw, where, notes)
            except Skip:
                failed = True
                continue
            if value is not OMIT:
                row[name] = value
        if failed:
            raise Skip
        if self.info.dynamic:
            self._dynamic(row, element, flat, eid, notes)
        return row

    def _dynamic(
        self,
        row: dict[str, Any],
        element: Mapping[str, Any],
        flat: Mapping[str, Any],
        eid: str,
        notes: Notes,
    ) -> None:
        """Add every metadata leaf the schema lacks; `$meta` must stay within JSON_LIMIT."""
        extra = {
            k: v
            for k, v in flat.items()
            if k not in self.names and v is not None and not isinstance(v, dict)
        }
        if "type" not in self.names and element.get("type") is not None:
            extra["type"] = element["type"]
        if not extra:
            return
        try:
            size = len(json_bytes(extra))
        except TypeError as exc:
            notes.problem(f"element {eid}: a metadata value is not JSON: {exc}")
            raise Skip from None
        if size > JSON_LIMIT:
            sized = sorted(extra, key=lambda k: -len(json_bytes(extra[k])))
            for key in sized:
                policy = self.policies.get(key, "fail")
                if size <= JSON_LIMIT or policy == "fail":
                    continue
                value_size = len(json_bytes(extra[key]))
                if policy == "truncate" and isinstance(extra[key], str):
                    keep = max(0, len(extra[key].encode()) - (size - JSON_LIMIT) - 64)
                    extra[key] = cut_utf8(extra[key], keep)
                    notes.action(key, f"truncated to {keep:,} bytes (dynamic field)", value_size)
                else:
                    del extra[key]
                    notes.action(key, "dropped (dynamic field)", value_size)
                size = len(json_bytes(extra))
            if size > JSON_LIMIT:
                largest = ", ".join(f"'{k}'" for k in sized[:3] if k in extra)
                notes.problem(
                    f"element {eid}: its dynamic fields take {size:,} bytes of JSON, over "
                    f"{JSON_LIMIT:,} (largest: {largest}); declare varchar_policy 'drop' or "
                    "'truncate' for them"
                )
                raise Skip
        row.update(extra)
