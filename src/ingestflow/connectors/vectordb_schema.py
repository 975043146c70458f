"""The vectordb collection schema as the writer sees it: checked once, then used to build rows.

`SchemaInfo.from_describe()` reads what `describe_collection` returns; `check_schema()` lists every
way the collection does not fit the workflow (SPEC.md's minimal schema, the embedder's dimension,
metadata field types the writer cannot fill, size policies that cannot be honoured); `RowBuilder`
turns a Document's elements into rows of exactly the collection's fields.

Sizes are counted the way a Milvus server counts them: VARCHAR `max_length` in UTF-8 bytes (Milvus
Lite counts characters; checking bytes makes the same data load into both), JSON values at most
65,536 bytes (the dynamic field `$meta` is a JSON value too). Nothing here imports pymilvus.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ingestflow.elements import Document
from ingestflow.errors import DocumentError

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
        return ["the collection has no schema (no fields); SPEC.md needs at least the minimal one"]
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


# --- values ---------------------------------------------------------------------------------

OMIT = object()  # "leave this field out of the row" (null, or the field's default)


class _Skip(Exception):
    """The value cannot be written; the reason is already noted."""


def json_bytes(value: Any) -> bytes:
    """`value` as JSON (UTF-8), the way Milvus stores it; TypeError when it is not JSON."""
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)


def cut_utf8(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, at a character boundary."""
    return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def _kind(value: Any) -> str:
    names = {bool: "a boolean", str: "a string", dict: "an object", list: "an array"}
    names.update({int: "an integer", float: "a number", tuple: "an array"})
    return names.get(type(value), type(value).__name__)


@dataclass
class Notes:
    """What happened to one document's values: problems fail it, actions become warnings."""

    problems: list[str] = field(default_factory=list)
    actions: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    skipped: int = 0

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def action(self, name: str, what: str, size: int, unit: str = "bytes") -> None:
        entry = self.actions.setdefault((name, what, unit), [0, 0])
        entry[0] += 1
        entry[1] = max(entry[1], size)

    def warnings(self, record_id: str) -> list[str]:
        out = [
            f"vectordb: record {record_id}: field '{name}' {what} in {n} value(s) by the "
            f"declared varchar_policy (largest {size:,} {unit})"
            for (name, what, unit), (n, size) in self.actions.items()
        ]
        if self.skipped:
            out.append(
                f"vectordb: record {record_id}: {self.skipped} element(s) with empty text and no "
                "embeddings were not written (a row needs a vector)"
            )
        return out


class _Writer:
    """Converts one metadata value to one field's type, applying the size policy."""

    def __init__(self, spec: FieldSpec, policy: str) -> None:
        self.spec = spec
        self.name = spec.name
        self.policy = policy
        self.limit = min(spec.max_length or VARCHAR_LIMIT, VARCHAR_LIMIT)
        self.scalar = _scalar_converter(spec.element_type if spec.type == "ARRAY" else spec.type)

    def __call__(self, value: Any, where: str, notes: Notes) -> Any:
        if value is None or value is OMIT:
            if self.spec.nullable or self.spec.has_default:
                return OMIT
            notes.problem(
                f"{where}: no value for field '{self.name}', which is not nullable and has "
                "no default (make the field nullable)"
            )
            raise _Skip
        try:
            if self.spec.type == "VARCHAR":
                return self._varchar(value, where, notes, self.limit, f"field '{self.name}'")
            if self.spec.type == "JSON":
                return self._json(value, where, notes)
            if self.spec.type == "ARRAY":
                return self._array(value, where, notes)
            return self.scalar(value)
        except (TypeError, ValueError, OverflowError) as exc:
            notes.problem(f"{where}: field '{self.name}' ({self.spec.type}): {exc}")
            raise _Skip from None

    def _varchar(self, value: Any, where: str, notes: Notes, limit: int, what: str) -> Any:
        text = value if isinstance(value, str) else json_bytes(value).decode()
        if len(text) * 4 <= limit:  # UTF-8 needs at most 4 bytes a character
            return text
        size = len(text.encode("utf-8", "surrogatepass"))
        if size <= limit:
            return text
        return self._oversize(text, size, limit, where, notes, what)

    def _oversize(self, value: Any, size: int, limit: int, where: str, notes: Notes, what: str):
        if self.policy == "truncate" and isinstance(value, str):
            notes.action(self.name, f"truncated to {limit:,} bytes", size)
            return cut_utf8(value, limit)
        if self.policy == "drop":
            notes.action(self.name, "dropped", size)
            return OMIT
        choices = [] if self.spec.type == "JSON" else ["'truncate'"]
        if self.spec.nullable or self.spec.has_default:
            choices.insert(0, "'drop'")
        hint = f"declare varchar_policy {{'{self.name}': {' or '.join(choices)}}}"
        if not choices:
            hint = f"make the field nullable and declare varchar_policy {{'{self.name}': 'drop'}}"
        if self.name in ("element_id", "record_id"):
            hint = "ids are never cut: raise the field's max_length"
        elif self.name not in SPECIAL:
            hint += ", or leave the field out of the collection"
        notes.problem(
            f"{where}: {what} is {size:,} bytes (UTF-8), over its limit of {limit:,}; {hint}"
        )
        raise _Skip

    def _json(self, value: Any, where: str, notes: Notes) -> Any:
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, (dict, list)):
            raise TypeError(
                f"a JSON field takes an object or an array, and the value is {_kind(value)} "
                "(Milvus Lite cannot store a bare scalar there); declare the field VARCHAR or a "
                "number type instead"
            )
        data = json_bytes(value)
        if len(data) > JSON_LIMIT:
            return self._oversize(data, len(data), JSON_LIMIT, where, notes, f"field '{self.name}'")
        return data.decode()

    def _array(self, value: Any, where: str, notes: Notes) -> Any:
        if isinstance(value, (str, int, float, bool)):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"an ARRAY field takes an array, and the value is {_kind(value)}")
        cap = self.spec.max_capacity
        if cap is not None and len(value) > cap:
            if self.policy == "truncate":
                notes.action(self.name, f"cut to {cap} items", len(value), "items")
                value = value[:cap]
            else:
                what = f"field '{self.name}' has {len(value)} items, over max_capacity {cap}"
                return self._too_many(what, len(value), where, notes)
        if any(item is None for item in value):
            raise TypeError("an ARRAY cannot hold null items")
        items = [self.scalar(item) for item in value]
        if self.spec.element_type == "VARCHAR":
            items = [
                self._varchar(item, where, notes, self.limit, f"an item of field '{self.name}'")
                for item in items
            ]
            if any(item is OMIT for item in items):
                return OMIT
        return items

    def _too_many(self, what: str, n: int, where: str, notes: Notes) -> Any:
        if self.policy == "drop":
            notes.action(self.name, "dropped (too many items)", n, "items")
            return OMIT
        notes.problem(
            f"{where}: {what}; declare varchar_policy {{'{self.name}': 'truncate' or "
            "'drop'}, or raise max_capacity"
        )
        raise _Skip


def _scalar_converter(type_name: str | None) -> Callable[[Any], Any]:
    if type_name in INT_RANGES:
        low, high = INT_RANGES[type_name]

        def to_int(value: Any) -> int:
            if isinstance(value, bool):
                raise TypeError(f"{type_name} takes an integer, and the value is a boolean")
            whole = isinstance(value, float) and value.is_integer()
            if whole or (isinstance(value, str) and value.strip().lstrip("+-").isdigit()):
                value = int(value)
            if not isinstance(value, int):
                raise TypeError(f"{type_name} takes an integer, and the value is {_kind(value)}")
            if not low <= value <= high:
                raise ValueError(f"{value} is out of {type_name}'s range [{low}, {high}]")
            return value

        return to_int
    if type_name in ("FLOAT", "DOUBLE"):

        def to_float(value: Any) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise TypeError(f"{type_name} takes a number, and the value is {_kind(value)}")
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(f"{value!r} is not a finite number")
            return number

        return to_float
    if type_name == "BOOL":

        def to_bool(value: Any) -> bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            raise TypeError(f"BOOL takes true or false, and the value is {value!r}")

        return to_bool
    return lambda value: value  # VARCHAR items: converted by _varchar


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
        self.ids = _Writer(fields["element_id"], "fail")
        self.record = _Writer(fields["record_id"], "fail")
        self.text = _Writer(fields["text"], self.policies.get("text", "fail"))
        self.type = None
        if "type" in fields:
            self.type = _Writer(fields["type"], self.policies.get("type", "fail"))
        self.metadata = [
            _Writer(spec, self.policies.get(spec.name, "fail"))
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
        except _Skip:
            record_id = None
        for element in doc.elements:
            if len(notes.problems) >= 20:
                break
            eid = element.get("element_id")
            eid_text = str(eid)
            try:
                row = self._row(element, eid_text, record_id, notes)
            except _Skip:
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
            raise _Skip
        if hasattr(vector, "tolist"):
            vector = vector.tolist()
        if len(vector) != self.dim:
            notes.problem(
                f"element {eid}: embeddings has {len(vector)} dimensions; the collection's "
                f"'embeddings' field has {self.dim}"
            )
            raise _Skip
        where = f"element {eid}"
        row: dict[str, Any] = {
            "element_id": self.ids(element.get("element_id"), where, notes),
            "embeddings": vector,
        }
        if record_id is None:
            raise _Skip
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
            except _Skip:
                failed = True
                continue
            if value is not OMIT:
                row[name] = value
        if failed:
            raise _Skip
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
            raise _Skip from None
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
                raise _Skip
        row.update(extra)
