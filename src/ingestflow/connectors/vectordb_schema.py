"""The vectordb collection schema as the writer sees it: read once, then checked.

`SchemaInfo.from_describe()` reads what `describe_collection` returns; `check_schema()` lists every
way the collection does not fit the workflow (SPEC.md's minimal schema, the embedder's dimension,
metadata field types the writer cannot fill, size policies that cannot be honoured). Building rows
from a Document is `vectordb_rows`; converting and sizing values is `vectordb_values`.

Sizes are counted the way a Milvus server counts them: VARCHAR `max_length` in UTF-8 bytes (Milvus
Lite counts characters; checking bytes makes the same data load into both), JSON values at most
65,536 bytes (the dynamic field `$meta` is a JSON value too). Nothing here imports pymilvus.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

VARCHAR_LIMIT = 65_535
JSON_LIMIT = 65_536
POLICIES = ("fail", "drop", "truncate")
SPECIAL = ("element_id", "embeddings", "record_id", "text", "type")
INT_RANGES = {
    "INT8": (-(2**7), 2**7 - 1),
    "INT16": (-(2**15), 2**15 - 1),
    "INT32": (-(2**31), 2**31 - 1),
    "INT64": (-(2**63), 2**63 - 1),
}
SCALARS = ("BOOL", *INT_RANGES, "FLOAT", "DOUBLE", "VARCHAR")
FILLABLE = (*SCALARS, "JSON", "ARRAY")

# What the metadata fields named in SPEC.md (and other common `unstructured` ones) hold, by the
# flattened field name, and which collection types can take such a value.
_KIND_TYPES = {
    "a string": ("VARCHAR",),
    "a string flag": ("VARCHAR", "BOOL"),
    "an integer": (*INT_RANGES, "FLOAT", "DOUBLE", "VARCHAR"),
    "an array of strings": ("ARRAY", "JSON", "VARCHAR"),
    "an array": ("JSON", "VARCHAR"),
    "an object": ("JSON", "VARCHAR"),
}
KNOWN_METADATA: dict[str, tuple[str, str]] = {
    "is_extracted": ("is_extracted", "a string flag"),
    "coordinates": ("coordinates", "an object"),
    "coordinates_points": ("coordinates.points", "an array"),
    "coordinates_system": ("coordinates.system", "a string"),
    "coordinates_layout_width": ("coordinates.layout_width", "an integer"),
    "coordinates_layout_height": ("coordinates.layout_height", "an integer"),
    "filetype": ("filetype", "a string"),
    "languages": ("languages", "an array of strings"),
    "page_number": ("page_number", "an integer"),
    "image_mime_type": ("image_mime_type", "a string"),
    "image_base64": ("image_base64", "a string"),
    "filename": ("filename", "a string"),
    "text_as_html": ("text_as_html", "a string"),
    "orig_elements": ("orig_elements", "a string"),
    "parent_id": ("parent_id", "a string"),
    "category_depth": ("category_depth", "an integer"),
    "data_source": ("data_source", "an object"),
    "data_source_url": ("data_source.url", "a string"),
    "data_source_record_locator": ("data_source.record_locator", "an object"),
    "data_source_record_locator_protocol": ("data_source.record_locator.protocol", "a string"),
    "data_source_record_locator_remote_file_path": (
        "data_source.record_locator.remote_file_path",
        "a string",
    ),
    "data_source_permissions_data": ("data_source.permissions_data", "an array"),
    "entities": ("entities", "an object"),
    "entities_items": ("entities.items", "an array"),
    "entities_relationships": ("entities.relationships", "an array"),
}


@dataclass(frozen=True)
class FieldSpec:
    """One collection field, as `describe_collection` reports it (types by DataType name)."""

    name: str
    type: str
    nullable: bool = False
    has_default: bool = False
    max_length: int | None = None
    max_capacity: int | None = None
    element_type: str | None = None
    dim: int | None = None
    is_primary: bool = False
    auto_id: bool = False
    function_output: bool = False

    @classmethod
    def from_describe(cls, raw: Mapping[str, Any], collection_auto_id: bool = False) -> FieldSpec:
        """Build from one entry of `describe_collection()["fields"]`."""
        params = raw.get("params") or {}

        def _int(key: str) -> int | None:
            value = params.get(key, raw.get(key))
            return None if value in (None, "") else int(value)

        element = raw.get("element_type")
        is_primary = bool(raw.get("is_primary"))
        return cls(
            name=str(raw["name"]),
            type=_type_name(raw.get("type")),
            nullable=bool(raw.get("nullable")),
            has_default=raw.get("default_value") is not None,
            max_length=_int("max_length"),
            max_capacity=_int("max_capacity"),
            element_type=None if element is None else _type_name(element),
            dim=_int("dim"),
            is_primary=is_primary,
            auto_id=bool(raw.get("auto_id")) or (is_primary and collection_auto_id),
            function_output=bool(raw.get("is_function_output")),
        )

    def describe(self) -> str:
        """A short human form: `VARCHAR(max_length=200), nullable`."""
        if self.type == "VARCHAR":
            text = f"VARCHAR(max_length={self.max_length})"
        elif self.type == "FLOAT_VECTOR":
            text = f"FLOAT_VECTOR(dim={self.dim})"
        elif self.type == "ARRAY":
            text = f"ARRAY<{self.element_type}>(max_capacity={self.max_capacity})"
        else:
            text = self.type
        if self.is_primary:
            text += ", primary key" + (" with auto_id" if self.auto_id else "")
        return text + (", nullable" if self.nullable else "")


def _type_name(value: Any) -> str:
    return str(getattr(value, "name", value)).upper()


@dataclass(frozen=True)
class SchemaInfo:
    """A collection's fields by name, and whether it takes dynamic fields."""

    fields: dict[str, FieldSpec]
    dynamic: bool = False

    @classmethod
    def from_describe(cls, raw: Mapping[str, Any]) -> SchemaInfo:
        """Build from `describe_collection()`."""
        auto_id = bool(raw.get("auto_id"))
        specs = [FieldSpec.from_describe(f, auto_id) for f in raw.get("fields") or []]
        return cls({f.name: f for f in specs}, bool(raw.get("enable_dynamic_field")))


_REQUIRED = {
    "element_id": "VARCHAR(max_length=200), primary key",
    "embeddings": "FLOAT_VECTOR with the embedder's dimension",
    "record_id": "VARCHAR(max_length=200)",
    "text": "VARCHAR(max_length=65535)",
}


def check_schema(
    info: SchemaInfo, embedding_dimension: int | None, policies: Mapping[str, str]
) -> list[str]:
    """Every way the collection does not fit; an empty list when it does."""
    fields = info.fields
    if not fields:
        return ["the collection has no schema (no fields); it needs at least the minimal one"]
    problems = [
        f"field '{name}' is missing; it should be {want}"
        for name, want in _REQUIRED.items()
        if name not in fields
    ]
    pk = fields.get("element_id")
    if pk is not None and (pk.type != "VARCHAR" or not pk.is_primary or pk.auto_id):
        problems.append(
            f"field 'element_id' is {pk.describe()}; it should be {_REQUIRED['element_id']} "
            "without auto_id (the writer stores each element's own id)"
        )
    for name in ("record_id", "text", "type"):
        spec = fields.get(name)
        if spec is not None and spec.type != "VARCHAR":
            problems.append(f"field '{name}' is {spec.describe()}; it should be VARCHAR")
    vec = fields.get("embeddings")
    if vec is not None:
        if vec.type != "FLOAT_VECTOR":
            problems.append(f"field 'embeddings' is {vec.describe()}; it should be FLOAT_VECTOR")
        elif embedding_dimension is None:
            problems.append(
                f"field 'embeddings' is {vec.describe()}, but the workflow has no embedder: every "
                "row needs a vector; add an embed node to the workflow"
            )
        elif vec.dim != embedding_dimension:
            problems.append(
                f"field 'embeddings' has dimension {vec.dim}, but the workflow's embedder makes "
                f"{embedding_dimension}-dimensional vectors; they must be equal"
            )
    for spec in fields.values():
        if spec.name not in SPECIAL and not spec.function_output:
            problems.extend(_check_metadata_field(spec))
    problems.extend(_check_policies(info, policies))
    return problems


def _check_metadata_field(spec: FieldSpec) -> list[str]:
    if spec.is_primary:
        return [f"field '{spec.name}' is the primary key; the primary key must be 'element_id'"]
    if spec.type not in FILLABLE:
        return [
            f"field '{spec.name}' is {spec.describe()}, a type the writer cannot fill from "
            f"element metadata; it should be one of {', '.join(FILLABLE)}"
        ]
    if spec.type == "ARRAY" and spec.element_type not in SCALARS:
        return [
            f"field '{spec.name}' is {spec.describe()}; the writer fills arrays of "
            f"{', '.join(SCALARS)} only"
        ]
    known = KNOWN_METADATA.get(spec.name)
    if known is not None:
        path, kind = known
        allowed = _KIND_TYPES[kind]
        strings = kind == "an array of strings"
        if spec.type not in allowed or (
            spec.type == "ARRAY" and strings and spec.element_type != "VARCHAR"
        ):
            want = " or ".join("ARRAY<VARCHAR>" if t == "ARRAY" else t for t in allowed)
            return [
                f"field '{spec.name}' is {spec.describe()}, but metadata.{path} is {kind}; "
                f"it should be {want} (nullable)"
            ]
    return []


def _check_policies(info: SchemaInfo, policies: Mapping[str, str]) -> list[str]:
    problems = []
    for name, policy in policies.items():
        spec = info.fields.get(name)
        where = f"varchar_policy for '{name}'"
        if policy not in POLICIES:
            problems.append(f"{where} is {policy!r}; it should be one of {', '.join(POLICIES)}")
        elif name in ("element_id", "record_id", "embeddings"):
            problems.append(f"{where}: '{name}' identifies the row; it cannot be cut or dropped")
        elif spec is None:
            if not info.dynamic:
                problems.append(f"{where}: the collection has no such field (and no dynamic ones)")
        elif spec.type not in ("VARCHAR", "ARRAY", "JSON"):
            problems.append(f"{where}: field '{name}' is {spec.type}, which has no size limit")
        elif policy == "truncate" and spec.type == "JSON":
            problems.append(f"{where}: a JSON value cannot be truncated; use 'drop' or 'fail'")
        elif policy == "drop" and not (spec.nullable or spec.has_default):
            problems.append(
                f"{where}: field '{name}' is not nullable, so its value cannot be dropped; "
                "make the field nullable or use 'truncate'"
            )
    return problems
