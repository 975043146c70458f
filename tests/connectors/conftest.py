"""The Milvus server's users for the tests (the server itself: `milvus_server` in tests/conftest.py,
one per test session)."""

from __future__ import annotations

from typing import Any

from tests.milvus_server import ROOT_PASSWORD, MilvusServer

SERVER_USER = "ingest"
SERVER_PASSWORD = "srv-S3cret-pw"  # tests check it never shows
SERVER_DB = "ingest_db"


def root_client(server: MilvusServer, db_name: str = "") -> Any:
    """A pymilvus client as the server's root user."""
    from pymilvus import MilvusClient

    return MilvusClient(uri=server.uri, token=f"root:{ROOT_PASSWORD}", db_name=db_name, timeout=60)
