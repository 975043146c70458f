"""Shared fixtures: paths to the project's fixtures and the third-party corpus, a Milvus server
(one a session, for the connector and Ray tests); the files' order."""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.milvus_server import MilvusServer

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
CORPUS = (REPO.parent / "shared" / "corpus").resolve()


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The third-party corpus beside the clone; tests that use it skip cleanly when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"third-party corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusServer]:
    """A standalone Milvus server on loopback with authorization on, its data in a temporary
    folder; a user (SERVER_USER) with a password and a database (SERVER_DB) of its own."""
    import platform
    import sys

    from tests.connectors.conftest import SERVER_DB, SERVER_PASSWORD, SERVER_USER, root_client
    from tests.milvus_server import MilvusServer

    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("the milvus wheel's server binary exists for Linux x86-64 only")
    server = MilvusServer(tmp_path_factory.mktemp("milvus-server"), _cache())
    server.start()
    try:
        root = root_client(server)
        root.create_database(SERVER_DB)
        root.create_user(SERVER_USER, SERVER_PASSWORD)
        root.grant_role(SERVER_USER, "admin")
        root.close()
        yield server
    finally:
        server.stop()


def _cache() -> Path:
    """Where the Milvus server's binaries are unpacked once and reused by later sessions."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ingestflow-tests"


def pytest_configure(config: pytest.Config) -> None:
    """A SIGTERM (CI's time limit, a `kill`) ends the session as a normal exit does: the test
    in progress stops, every fixture's teardown runs (the session's Ray cluster, the Milvus
    server), then pytest exits with 143. A second SIGTERM ends it at once (docs/testing.md)."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    pytest.exit("stopped by SIGTERM (the fixtures were torn down)", returncode=128 + signum)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Stop when two items share a node id: pytest-xdist hands tests out by id and would run one
    of them (docs/testing.md)."""
    counts = Counter(item.nodeid for item in session.items)
    shared = sorted(nodeid for nodeid, count in counts.items() if count > 1)
    if shared:
        raise pytest.UsageError(f"tests share a node id (one would run): {', '.join(shared[:5])}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a `slow` test first, each file's tests in their own order: the workers
    (`--dist loadfile`, `--no-loadscope-reorder`) start the long files early and the quick ones
    fill in behind, instead of one long file left running alone at the end."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: the order within a file stays
