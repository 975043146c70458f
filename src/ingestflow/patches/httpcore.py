"""httpx2 and httpcore2: a transport's connection pool given another network backend
(`providers.deadline`). httpx2 has no public way to hand its transport a network backend; its
pool (httpcore2's `ConnectionPool`, whose `network_backend` is a public argument) is `_pool`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingestflow.patches import guard
from ingestflow.patches.guard import Patch

LIBRARY = "httpcore"
#: Checked on httpx2 and httpcore2 2.16.2 (the set-up's).
SUPPORTED: dict[str, str] = {"httpx2": ">=2.16,<2.17", "httpcore2": ">=2.16,<2.17"}
PATCHES: dict[str, Patch] = {
    # replaced: a pool's `_network_backend`, which this constructor's argument sets
    "pool_network_backend": Patch(
        "httpcore2",
        "ConnectionPool.__init__",
        "(self, ssl_context=None, proxy=None, max_connections=10, "
        "max_keepalive_connections=None, keepalive_expiry=None, http1=True, http2=False, "
        "retries=0, local_address=None, uds=None, network_backend=None, socket_options=None)",
        "every socket operation of a model server's request ends by its deadline",
        LIBRARY,
    ),
}
guard.declare(LIBRARY, SUPPORTED, PATCHES)


def network_backend(transport: Any, wrap: Callable[[Any], Any]) -> Any:
    """`transport` (an httpx2 HTTPTransport), its pool's network backend now `wrap(current)`."""
    guard.check("pool_network_backend")
    pool = transport._pool
    pool._network_backend = wrap(pool._network_backend)
    return transport
