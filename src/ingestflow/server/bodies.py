"""JSON request bodies: read bounded (`serve --max-body-mb`), then parsed by the service the way
`ingestflow validate` parses a file. A declared length over the limit is refused before anything
is read; a body without one (chunked) is cut as soon as it passes the limit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.types import Message

from ingestflow.errors import WorkflowInvalid
from ingestflow.service.bodies import json_body, too_large
from ingestflow.service.validation import Problem

_JSON_TYPES = ("application/json",)


def bounded(request: Request, limit: int, over: Callable[[int | None], Exception]) -> Request:
    """The request, whose body may be at most `limit` bytes: `over(declared length)` is raised
    now when the Content-Length says more, `over(None)` while reading once more has come."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise over(int(declared))
    seen = 0
    receive = request.receive

    async def counted() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise over(None)
        return message

    return Request(request.scope, counted)


async def read_json(request: Request) -> Any:
    """The request's JSON body, bounded and parsed as `ingestflow validate` parses a file;
    413 over the limit, 422 with every problem of the text."""
    limits = request.app.state.ingestflow.limits
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind and not (kind in _JSON_TYPES or kind.endswith("+json")):
        raise WorkflowInvalid(
            [
                Problem(
                    "$",
                    "the body must be JSON, sent as content-type application/json",
                    found=kind,
                )
            ],
            what="request",
        )
    limit = limits.max_body_bytes
    raw = await bounded(request, limit, lambda size: too_large(size, limit)).body()
    # parsing a body of megabytes takes a while: not on the event loop
    return await run_in_threadpool(json_body, raw, limits)


JsonBody = Annotated[Any, Depends(read_json)]


def json_doc(description: str, examples: dict[str, Any] | None = None) -> dict[str, Any]:
    """The OpenAPI requestBody of a route that reads a JSON object with `read_json`."""
    media: dict[str, Any] = {"schema": {"type": "object"}}
    if examples:
        media["examples"] = examples
    return {
        "requestBody": {
            "required": True,
            "description": description,
            "content": {"application/json": media},
        }
    }
