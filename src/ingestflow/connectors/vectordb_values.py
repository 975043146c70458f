"""Metadata values as a vectordb field takes them: type conversion and the size policies.

`FieldWriter` converts one value to one collection field's type and applies the field's
`varchar_policy` (`fail`, `drop` or `truncate`) to a value over its size; `Notes` collects what
happened to one document's values: problems fail the document, policy actions become warnings.
Sizes are counted in UTF-8 bytes, the way a Milvus server counts them (see `vectordb_schema`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ingestflow.connectors.vectordb_schema import (
    INT_RANGES,
    JSON_LIMIT,
    SPECIAL,
    VARCHAR_LIMIT,
    FieldSpec,
)

OMIT = object()  # "leave this field out of the row" (null, or the field's default)


class Skip(Exception):
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


class FieldWriter:
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
            raise Skip
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
            raise Skip from None

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
        raise Skip

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
        raise Skip


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
