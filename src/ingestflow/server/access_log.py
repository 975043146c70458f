"""One log line per request: method, path, status, milliseconds.

uvicorn's own access log is turned off by `ingestflow serve`: it writes the query string (where
a client may put a token) and no duration. This one writes the path alone — never the query
string, a header or a body, so no key, token or secret reaches the log. An ASGI middleware
(not Starlette's `BaseHTTPMiddleware`) so that streamed downloads are timed to their end.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ingestflow.errors import printable

log = logging.getLogger("ingestflow.server.access")


class AccessLog:
    """Writes `METHOD /path STATUS 12.3 ms` once each HTTP request has been answered: to
    `write` when given (`serve`: stderr), else to the `ingestflow.server.access` logger."""

    def __init__(self, app: ASGIApp, write: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.write = write or log.info

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: list[int] = []

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            took = (time.perf_counter() - started) * 1000
            # no status sent: the app failed before answering, and the server answers 500
            code = status[0] if status else 500
            self.write(
                f"{printable(scope['method'])} {printable(scope['path'])} {code} {took:.1f} ms"
            )


def to_stderr(line: str) -> None:
    """Print a request line to stderr with the time, whatever the logging settings (`serve`
    keeps the libraries' log lines off, and these must still show)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} {line}", file=sys.stderr, flush=True)
