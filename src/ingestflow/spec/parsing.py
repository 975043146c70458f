"""Turn JSON text and pydantic errors into Problems with JSON paths."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ingestflow.spec.models import MASK, SECRET_FIELDS
from ingestflow.spec.problems import Problem, join_path

M = TypeVar("M", bound=BaseModel)

_TYPE_WORDS = {
    "bool_type": "a boolean (true or false)",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def load_json_file(path: Path) -> tuple[Any, list[Problem]]:
    """Read a JSON file; a missing file or malformed JSON is a Problem (with line and column)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem("$", f"file not found: {path}", hint="check the path")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem("$", f"cannot read {path}: {exc.__class__.__name__}: {exc}")]
    return load_json_text(text)


def load_json_text(text: str) -> tuple[Any, list[Problem]]:
    """Parse JSON text; malformed JSON is a Problem naming its line and column."""
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        return None, [
            Problem(
                "$",
                f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                found=_line_excerpt(text, exc.lineno),
                hint="fix the JSON syntax (a missing comma, quote or bracket is the usual cause)",
            )
        ]


_SECRET_VALUE = re.compile(
    r'("(?:password|token|api_key|provider_api_key|unstructured_api_key)"\s*:\s*)"[^"]*"?'
)


def _line_excerpt(text: str, lineno: int) -> str:
    """The offending line, cut short, with any secret value on it masked."""
    lines = text.splitlines()
    line = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
    return _SECRET_VALUE.sub(rf'\1"{MASK}"', line)[:120]


def parse_model(
    model: type[M], data: Any, prefix: tuple[str | int, ...] = (), what: str | None = None
) -> tuple[M | None, list[Problem]]:
    """Validate `data` against `model`; every error becomes a Problem under `prefix`."""
    if not isinstance(data, dict):
        return None, [
            Problem(
                join_path(*prefix) or "$",
                f"must be an object ({what or model.__name__})",
                found=type(data).__name__ if data is not None else None,
            )
        ]
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, [_problem(model, err, prefix, what) for err in exc.errors()]


def _problem(
    model: type[BaseModel], err: Any, prefix: tuple[str | int, ...], what: str | None
) -> Problem:
    loc = tuple(err["loc"])
    path = join_path(*prefix, *loc) or "$"
    kind = err["type"]
    field = next((part for part in reversed(loc) if isinstance(part, str)), "")
    found = err.get("input")
    if field in SECRET_FIELDS and found is not None:
        found = MASK
    name = what or model.__name__
    if kind == "missing":
        info = _field_info(model, loc)
        meaning = f" ({info.description})" if info is not None and info.description else ""
        return Problem(path, f"`{field}` is required", hint=f"add `{field}` to the {name}{meaning}")
    if kind == "extra_forbidden":
        fields = list(_fields_at(model, loc[:-1]))
        close = difflib.get_close_matches(str(field), fields, n=1)
        hint = f"did you mean `{close[0]}`?" if close else "remove it"
        return Problem(
            path, f"`{field}` is not a field of {name}", found=field, allowed=fields, hint=hint
        )
    if kind in ("literal_error", "enum"):
        allowed = re.findall(r"'([^']*)'", err.get("ctx", {}).get("expected", ""))
        close = (
            difflib.get_close_matches(str(found), allowed, n=1) if isinstance(found, str) else []
        )
        return Problem(
            path,
            f"`{field}` has a value that is not allowed",
            found=found,
            allowed=allowed,
            hint=f"did you mean `{close[0]}`?" if close else None,
        )
    if kind in _TYPE_WORDS:
        return Problem(path, f"`{field}` must be {_TYPE_WORDS[kind]}", found=found)
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        ctx = err.get("ctx", {})
        allowed = {k: v for k, v in ctx.items() if k in ("gt", "ge", "lt", "le")}
        return Problem(path, f"`{field}` {err['msg'].lower()}", found=found, allowed=allowed)
    message = err["msg"].removeprefix("Value error, ")
    return Problem(path, f"`{field}` {message}" if field else message, found=found)


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the (sub)model found at `loc` inside `model`, for did-you-mean hints."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not (
            isinstance(current, type) and issubclass(current, BaseModel)
        ):
            continue
        info = current.model_fields.get(part)
        if info is None:
            return []
        current = _model_in(info.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _field_info(model: type[BaseModel], loc: tuple[Any, ...]) -> Any:
    """The FieldInfo at `loc`, when it names a field of a (sub)model."""
    if not loc or not isinstance(loc[-1], str):
        return None
    parent = _fields_at(model, loc[:-1])
    if loc[-1] not in parent:
        return None
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, str):
            current = _model_in(current.model_fields[part].annotation)
    return current.model_fields[loc[-1]]


def _model_in(annotation: Any) -> Any:
    """The BaseModel inside an annotation such as `X | None` or `list[X]`, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
