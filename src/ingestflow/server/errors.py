"""Error answers: the service's errors as HTTP statuses with FastAPI's body shapes.

422 `{"detail": [{"loc", "msg", "type"}]}` carries the same problems `ingestflow validate`
reports; other errors are `{"detail": "..."}`. Nothing echoes a request's values back whole (a
secret could be among them), and no traceback reaches a body or the log.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.responses import Response

from ingestflow.errors import (
    Conflict,
    ConnectorError,
    IngestflowError,
    NotFound,
    TooLarge,
    WorkflowInvalid,
    WorkspaceDamaged,
    one_line,
)
from ingestflow.service.requests import RequestInvalid, relabel

log = logging.getLogger("ingestflow.server")
DAMAGED = (
    "the server's workspace database is damaged; the server's log says how to recover "
    "(restart the server once it is repaired)"
)
_INDEX = re.compile(r"\[(\d+)\]")


def problem_loc(path: str, where: str) -> list[str | int]:
    """A Problem's JSON path (`workflow_nodes[2].settings.x`) as a FastAPI `loc`."""
    loc: list[str | int] = [where]
    for part in path.replace("$", "").split("."):
        if not part:
            continue
        name, *indices = _INDEX.split(part)
        if name:
            loc.append(name)
        loc.extend(int(i) for i in indices if i.isdigit())
    return loc


#: A run request's fields as the API's request fields (`service.requests`: problems name the
#: request's fields; the others the API names alike).
FIELDS = {"inputs": "input_files"}


def invalid_detail(exc: WorkflowInvalid) -> list[dict[str, Any]]:
    """The 422 detail list of a WorkflowInvalid (a run request's fields as the API's)."""
    if isinstance(exc, RequestInvalid):
        exc = relabel(exc, FIELDS, quote="`")
    where = "query" if "list request" in str(exc.args[0]).splitlines()[0] else "body"
    return [
        {
            "loc": problem_loc(p.path, where),
            "msg": p.one_line().split(": ", 1)[-1] if p.path else p.one_line(),
            "type": "value_error",
        }
        for p in exc.problems
    ]


def _status(exc: IngestflowError) -> int:
    if isinstance(exc, WorkflowInvalid):
        return 422
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    if isinstance(exc, TooLarge):
        return 413
    if isinstance(exc, ConnectorError):
        return 422
    return 400


class CatchAll(BaseHTTPMiddleware):
    """The last resort: an unexpected exception is a 500 with one generic line (its text may
    hold a path of this machine, or worse), and is logged as one line where the operator looks."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        try:
            return await call_next(request)
        except Exception as exc:
            log.error("%s %s: %s", request.method, request.url.path, one_line(exc))
            return JSONResponse({"detail": INTERNAL}, status_code=500)


INTERNAL = (
    "internal error: the server failed unexpectedly; the server's log has the reason "
    "(report it with the time of the request)"
)


class ErrorMessage(BaseModel):
    """An error answer other than 422: `{"detail": "what failed and how to fix it"}`."""

    detail: str


class ProblemItem(BaseModel):
    """One broken rule of a 422: where (`loc`), what (`msg`), its kind (`type`)."""

    loc: list[str | int]
    msg: str
    type: str


class Invalid(BaseModel):
    """A 422: every problem found, as `ingestflow validate` reports them."""

    detail: list[ProblemItem]


_MEANINGS = {
    404: "Not found: no such resource (workflow, job, file, node, connector or template).",
    409: "Conflict with the resource's state: a job scheduled or running, a connector in use, "
    "a job already finished.",
    422: "Invalid: every problem of the body, as `ingestflow validate` reports them.",
    413: "Too large: the body, a form field or an upload is over the server's limits "
    "(`serve --max-body-mb`, `--max-file-mb`, `--max-files`).",
}


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` of the error statuses a route answers (422 for a route whose
    body FastAPI does not read itself, so does not declare)."""
    return {
        s: {"model": Invalid if s == 422 else ErrorMessage, "description": _MEANINGS[s]}
        for s in statuses
    }


def install(app: FastAPI) -> None:
    """Register the error handlers on an app."""

    @app.exception_handler(IngestflowError)
    async def _ingestflow(request: Request, exc: IngestflowError) -> JSONResponse:
        if isinstance(exc, WorkflowInvalid):
            return JSONResponse({"detail": invalid_detail(exc)}, status_code=422)
        if isinstance(exc, WorkspaceDamaged):  # the way out names server paths: the log has it
            log.error("%s", exc)
            return JSONResponse({"detail": DAMAGED}, status_code=503)
        return JSONResponse({"detail": str(exc).splitlines()[0]}, status_code=_status(exc))

    @app.exception_handler(RequestValidationError)
    async def _request(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        return JSONResponse({"detail": detail}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail
        if exc.status_code == 404 and request.url.path.startswith("/api/v1/api/v1"):
            detail = (
                "Not Found: the path has /api/v1 twice; give the client the server's bare URL "
                "(http://HOST:PORT), every operation adds /api/v1 itself"
            )
        elif exc.status_code == 404 and request.url.path.startswith("/ui"):
            detail = "Not Found: no such page of the web UI; start at /ui/"
        elif exc.status_code == 404 and not request.url.path.startswith("/api/v1"):
            detail = "Not Found: the API is served under /api/v1 (see /docs)"
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)
