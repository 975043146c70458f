"""One deadline for a whole request to a model server.

httpx2 (what the official `openai` and `anthropic` clients send requests with) bounds each
connect, write and read on its own, never a request: a server that sends one byte a second never
trips a 60 s read timeout, and holds the request for as long as it likes. `http_client()` makes
an httpx2 client whose every socket operation ends by the deadline `within()` sets for the
calling thread: connecting, sending the body, and the whole response (status, headers and body,
streamed or not). Past it, the operation fails as httpx2's own timeouts do, which the clients
report as `APITimeoutError`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore2
import httpx2

from ingestflow.patches import httpcore as httpcore_patches

_DEADLINE: ContextVar[float | None] = ContextVar("ingestflow_request_deadline", default=None)
#: Bytes sent per socket write, so that a server that reads slowly meets the deadline too.
_WRITE_PIECE = 64 << 10


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Every request made by an `http_client()` in this block (this thread) ends within
    `seconds` from now, or fails as a timeout."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def http_client(timeout: float, connections: int) -> httpx2.Client:
    """An httpx2 client for the official clients (`http_client=`) that honours `within()`:
    their defaults (redirects followed, proxies from the environment), at most `connections`
    kept open."""
    return _DeadlineClient(
        timeout=timeout,
        follow_redirects=True,
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=connections),
    )


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """`timeout` cut to the time left before the deadline; `error` when none is left."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore2.NetworkStream):
    """A connection whose reads and writes end by the deadline."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        for start in range(0, len(view), _WRITE_PIECE):
            piece = bytes(view[start : start + _WRITE_PIECE])
            self._inner.write(piece, _bounded(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    """Connections that end by the deadline, over another backend's."""

    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _DeadlineClient(httpx2.Client):
    """httpx2.Client whose transports (the direct one and those of environment proxies) use
    `_Backend`."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> Any:
        return _guard(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> Any:
        return _guard(super()._init_proxy_transport(*args, **kwargs))


def _guard(transport: Any) -> Any:
    # httpx2 has no public way to hand its transport a network backend (`patches.httpcore`,
    # which checks the versions first; tests/stages/test_prompter.py's trickle tests)
    return httpcore_patches.network_backend(transport, _Backend)
