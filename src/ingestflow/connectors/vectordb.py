"""The `vectordb` connector type (vendor spelling `milvus`): its config and registry entry.

The destination is `vectordb_destination.py` (Milvus through pymilvus, on a Lite `.db` file or a
server); this module stays light (pydantic only), since validating a connector body imports it.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, SecretStr

from ingestflow.connectors.entry import ConnectorType
from ingestflow.spec.models import Model
from ingestflow.spec.validate import url_credential_problems


class VectorDBConfig(Model):
    """Config of a `vectordb` destination connector (Milvus; a Lite path or a server URI)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    user: str
    uri: str = Field(min_length=1)
    db_name: str
    password: SecretStr
    collection_name: str = Field(min_length=1)


SERVER_SCHEMES = ("http://", "https://", "tcp://", "unix:")


def is_lite(uri: str) -> bool:
    """True for a Milvus Lite file path, False for a server address."""
    return not uri.strip().lower().startswith(SERVER_SCHEMES)


def _local_file(config: VectorDBConfig) -> str | None:
    """The Milvus Lite database file a config opens (or creates), or None for a server."""
    return config.uri if is_lite(config.uri) else None


def _identity(config: VectorDBConfig) -> str:
    return f"vectordb:{config.uri}:{config.db_name}:{config.collection_name}"


ENTRY = ConnectorType(
    "vectordb",
    VectorDBConfig,
    _identity,
    destination="ingestflow.connectors.vectordb_destination:VectorDBDestination",
    checker="ingestflow.connectors.vectordb_admin:check_connection",
    aliases=("milvus",),
    config_rules=url_credential_problems,
    endpoint_fields=("uri", "user"),
    local_file=_local_file,
)
