"""Request bodies of the API: bounded in size (`serve --max-body-mb`), and read as JSON by the
same parse and rules as `ingestflow validate` reads a file (UTF-8, a byte order mark ignored,
duplicate keys refused at their path, nesting and Unicode checked)."""

from __future__ import annotations

from typing import Any

from ingestflow.errors import TooLarge, WorkflowInvalid
from ingestflow.service.uploads import UploadLimits, size_text
from ingestflow.spec.parsing import load_json_bytes, load_json_text
from ingestflow.spec.problems import Problem, join_path


def too_large(size: int | None, limit: int, what: str = "the request body") -> TooLarge:
    """The 413 of a body (or a form field) over `limit` bytes; `size` None when it came without
    a length (chunked) and was cut at the limit."""
    said = f"{what} is {size_text(size)}" if size is not None else f"{what} is over the limit"
    return TooLarge(
        f"{said}; at most {size_text(limit)} is accepted (raise `serve --max-body-mb` to accept "
        "larger bodies)"
    )


def json_body(raw: bytes, limits: UploadLimits) -> Any:
    """A JSON request body's value; TooLarge over the limit, WorkflowInvalid with every problem
    its text has (as `ingestflow validate` reports them)."""
    if len(raw) > limits.max_body_bytes:
        raise too_large(len(raw), limits.max_body_bytes)
    data, problems = load_json_bytes(raw)
    if problems:
        raise WorkflowInvalid(problems, what="request body")
    return data


def request_data(raw: Any, limits: UploadLimits) -> dict[str, Any]:
    """An on-demand job's `request_data` (a form field of JSON text): `{"template_id": ...}` or
    `{"job_nodes": [...]}`, bounded like a JSON body and parsed the same way."""
    data: Any = raw
    if isinstance(raw, str | bytes):
        size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
        if size > limits.max_body_bytes:
            raise too_large(size, limits.max_body_bytes, "`request_data`")
        data, problems = load_json_text(raw) if isinstance(raw, str) else load_json_bytes(raw)
        if problems:
            moved = [
                Problem(_under("request_data", p.path), p.message, p.found, p.allowed, p.hint)
                for p in problems
            ]
            raise WorkflowInvalid(moved, what="job request")
    if not isinstance(data, dict) or ("template_id" in data) == ("job_nodes" in data):
        raise WorkflowInvalid(
            [
                Problem(
                    "request_data",
                    "request_data is a JSON object with either `template_id` or `job_nodes`",
                    hint='e.g. {"template_id": "fast_partition"}',
                )
            ],
            what="job request",
        )
    return data


def _under(field: str, path: str) -> str:
    """A problem's JSON path inside a field: `$` -> `field`, `a[0].b` -> `field.a[0].b`."""
    if path in ("", "$"):
        return field
    return field + path if path.startswith("[") else join_path(field, path)
