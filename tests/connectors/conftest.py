"""A real Milvus server for the connector tests: one per test session, started and stopped here."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.milvus_server import ROOT_PASSWORD, MilvusServer

SERVER_USER = "ingest"
SERVER_PASSWORD = "srv-S3cret-pw"  # tests check it never shows
SERVER_DB = "ingest_db"


def _cache() -> Path:
    """Where the server's binaries are unpacked once and reused by later sessions."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ingestflow-tests"


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusServer]:
    """A standalone Milvus server on loopback with authorization on, its data in a temporary
    folder; a user (SERVER_USER) with a password and a database (SERVER_DB) of its own."""
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


def root_client(server: MilvusServer, db_name: str = "") -> Any:
    """A pymilvus client as the server's root user."""
    from pymilvus import MilvusClient

    return MilvusClient(uri=server.uri, token=f"root:{ROOT_PASSWORD}", db_name=db_name, timeout=60)
