"""Turn JSON text and pydantic errors into Problems with JSON paths."""

from __future__ import annotations

import difflib
import itertools
import json
import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ingestflow.errors import InputFileError
from ingestflow.spec.input_file import read_input_file
from ingestflow.spec.models import MASK, SECRET_FIELDS
from ingestflow.spec.problems import Problem, join_path
from ingestflow.spec.record import mask_url_credentials

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
    """Read a JSON file (`read_input_file`'s rules); a file that cannot be read or malformed JSON
    is a Problem (with line and column)."""
    try:
        text = read_input_file(path)
    except InputFileError as exc:
        return None, [Problem("$", str(exc))]
    return load_json_text(text)


def load_json_bytes(raw: bytes) -> tuple[Any, list[Problem]]:
    """Parse JSON from bytes as `load_json_text` does; the bytes must be UTF-8 (RFC 8259). An API
    body comes this way, a file through `read_input_file`: both obey the same rules."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [
            Problem(
                "$",
                f"the text is not UTF-8: byte {exc.start} is 0x{raw[exc.start]:02x}, which "
                "cannot appear there in UTF-8",
                hint="save or send it as UTF-8 (JSON is UTF-8)",
            )
        ]
    return load_json_text(text)


#: Deeper than this, a workflow or connector file is refused (real ones are a few levels deep).
MAX_DEPTH = 64
#: At most this many problems of the text itself (duplicate keys, lone surrogates) are listed.
MAX_PROBLEMS = 50


def load_json_text(text: str) -> tuple[Any, list[Problem]]:
    """Parse JSON text; malformed JSON is a Problem naming its line and column (secrets masked in
    the excerpt). Duplicate keys (at their JSON path), nesting deeper than MAX_DEPTH, numbers too
    long to read and text that is not valid Unicode are problems too, never exceptions. A leading
    byte order mark is ignored, as RFC 8259 allows (Windows editors write one)."""
    text = text.removeprefix("\ufeff")
    if not text.strip():
        return None, [
            Problem(
                "$",
                "the JSON text is empty",
                hint="a workflow or a connector is a JSON object: {...}",
            )
        ]
    # objects with a key twice, kept alive (a value that a later duplicate replaced would be
    # freed, and its id reused) until their paths are known
    duplicated: list[tuple[dict[str, Any], list[str]]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        twice: dict[str, None] = {}  # a dict, not a list: a hostile object repeats many keys
        for key, value in items:
            if key in out:
                twice[key] = None
            out[key] = value
        if twice:
            duplicated.append((out, list(twice)))
        return out

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        return None, [
            Problem(
                "$",
                f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                found=_line_excerpt(text, exc.lineno),
                hint="fix the JSON syntax (a missing comma, quote or bracket is the usual cause)",
            )
        ]
    except RecursionError:
        return None, [_too_deep()]
    except ValueError as exc:  # e.g. an integer longer than Python reads (4300 digits)
        said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "digits" in said:
            said = "a number has more digits than can be read (at most 4300)"
        return None, [Problem("$", f"a value cannot be read: {said}", hint="shorten it")]
    problems = shape_problems(data)
    if duplicated and problems != [_too_deep()]:
        problems = _duplicate_problems(data, duplicated) + problems
    if len(problems) > MAX_PROBLEMS:  # a text made of broken values is not echoed whole
        more = len(problems) - MAX_PROBLEMS
        rest = Problem(
            "$", f"and {more} more problem(s) of the kinds above", hint="fix those first"
        )
        problems = [*problems[:MAX_PROBLEMS], rest]
    return (None if problems else data), problems


def _duplicate_problems(
    data: Any, duplicated: list[tuple[dict[str, Any], list[str]]]
) -> list[Problem]:
    """A problem at the JSON path of each key given twice in one object."""
    twice = {id(obj): keys for obj, keys in duplicated}
    problems: list[Problem] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for key in twice.get(id(value), ()):
                said = key if _unicode(key) else "?"  # a lone surrogate cannot be sent back
                problems.append(
                    Problem(
                        join_path(*path, said) or "$",
                        f"key `{said}` appears twice in one object: which one counts would be "
                        "a guess",
                        found=said,
                        hint="keep one of them",
                    )
                )
            stack += [
                (child, (*path, key if _unicode(key) else "?"))
                for key, child in reversed(value.items())
            ]
        elif isinstance(value, list):
            stack += [(child, (*path, i)) for i, child in reversed(list(enumerate(value)))]
    # an object that a later duplicate replaced is not in `data`: its outer key is reported
    return problems


def _too_deep() -> Problem:
    return Problem(
        "$", f"the JSON is nested more than {MAX_DEPTH} levels deep", hint="a workflow is a few"
    )


def shape_problems(data: Any) -> list[Problem]:
    """Nesting deeper than MAX_DEPTH, and strings that are not valid Unicode (lone surrogates)."""
    problems: list[Problem] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            return [_too_deep()]
        items: list[tuple[str | int, Any]] = []
        if isinstance(value, dict):
            items = list(value.items())
            for key in value:
                if not _unicode(key):
                    problems.append(_not_unicode(join_path(*path) or "$", "a key"))
        elif isinstance(value, list):
            items = list(enumerate(value))
        elif isinstance(value, str) and not _unicode(value):
            problems.append(_not_unicode(join_path(*path) or "$", "the value"))
        for key, child in items:
            stack.append((child, (*path, key if _unicode(str(key)) else "?")))
    return problems


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _not_unicode(path: str, what: str) -> Problem:
    return Problem(
        path,
        f"{what} is not valid Unicode text (it holds a lone surrogate, e.g. \\udc80)",
        hint="write the character itself, or a surrogate pair",
    )


def _line_excerpt(text: str, lineno: int) -> str:
    """The offending line, cut short, with every secret value masked. The text is read as JSON
    tokens from the start (not matched by pattern), so a value is known to be a secret's even when
    it holds escaped quotes or sits on a line of its own; a string whose end cannot be found
    there is masked to the end of the line."""
    lines = text.splitlines(keepends=True)
    if not 0 < lineno <= len(lines):
        return ""
    start = sum(len(line) for line in lines[: lineno - 1])
    end = start + len(lines[lineno - 1])
    secret = [False] * (end - start)
    for first, last in _secret_spans(text, end):
        for i in range(max(first, start), min(last, end)):
            secret[i - start] = True
    # each run of secret characters becomes one MASK; the line's own characters (a NUL too)
    # stay as they are
    pieces, at = [], start
    for hidden, run in itertools.groupby(secret):
        size = len(list(run))
        pieces.append(MASK if hidden else text[at : at + size])
        at += size
    return "".join(pieces).strip()[:120]


def _secret_spans(text: str, stop: int) -> list[tuple[int, int]]:
    """Character spans (up to `stop`) of the values of secret keys, and of unterminated strings."""
    spans: list[tuple[int, int]] = []
    i, last_key, expecting_value = 0, None, False
    pending: tuple[int, int] | None = None  # the last string read, not yet known key or value
    while i < stop:
        char = text[i]
        if char == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= len(text) or (j >= stop and "\n" in text[i:j]):
                spans.append((i + 1, len(text)))  # unterminated: who knows what it holds
                break
            if expecting_value and last_key in SECRET_FIELDS:
                spans.append((i + 1, j))  # the text between the quotes
                expecting_value = False
            else:
                pending = (i, j + 1)
            i = j + 1
            continue
        if char == ":" and pending is not None:
            last_key = text[pending[0] + 1 : pending[1] - 1]
            expecting_value, pending = True, None
        elif char in ",{}[]":
            expecting_value, pending = False, None
        elif not char.isspace() and expecting_value and last_key in SECRET_FIELDS:
            j = i
            while j < len(text) and text[j] not in ",}]\n":
                j += 1
            spans.append((i, j))  # a bare (malformed) value of a secret
            expecting_value = False
            i = j
            continue
        i += 1
    return spans


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
    elif isinstance(found, str):
        found = mask_url_credentials(found)
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
        bounds = {k: v for k, v in ctx.items() if k in ("gt", "ge", "lt", "le")}
        return Problem(path, f"`{field}` {err['msg'].lower()}", found=found, allowed=bounds)
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
