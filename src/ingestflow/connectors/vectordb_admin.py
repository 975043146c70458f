"""Managing vectordb collections: create SPEC.md's schema, search one, check a connection.

These are what `ingestflow vectordb create-collection`, `ingestflow vectordb search` and
`ingestflow connectors check` call; each opens its own client and closes it. The destination that
writes documents is `ingestflow.connectors.vectordb`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from ingestflow.connectors.milvus_client import (
    MilvusTarget,
    describe,
    ensure_loaded,
    mask_uri,
    target_of,
)
from ingestflow.connectors.vectordb import VectorDBConfig
from ingestflow.connectors.vectordb_schema import SchemaInfo
from ingestflow.errors import ConnectorError, IngestflowError

if TYPE_CHECKING:
    from pymilvus import MilvusClient

    from ingestflow.connectors.check import ConnectionCheck

COLLECTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")

_META = {"nullable": True}
MINIMAL_FIELDS: list[tuple[str, str, dict[str, Any]]] = [
    ("element_id", "VARCHAR", {"max_length": 200, "is_primary": True}),
    ("embeddings", "FLOAT_VECTOR", {}),
    ("record_id", "VARCHAR", {"max_length": 200}),
    ("text", "VARCHAR", {"max_length": 65535}),
    ("type", "VARCHAR", {"max_length": 200, "nullable": True}),
]
RECOMMENDED_FIELDS: list[tuple[str, str, dict[str, Any]]] = [
    ("is_extracted", "VARCHAR", {"max_length": 5, **_META}),
    ("coordinates_points", "JSON", _META),
    ("coordinates_system", "VARCHAR", {"max_length": 256, **_META}),
    ("coordinates_layout_width", "INT32", _META),
    ("coordinates_layout_height", "INT32", _META),
    ("filetype", "VARCHAR", {"max_length": 256, **_META}),
    (
        "languages",
        "ARRAY",
        {"element_type": "VARCHAR", "max_capacity": 10, "max_length": 64, **_META},
    ),
    ("page_number", "INT32", _META),
    ("image_mime_type", "VARCHAR", {"max_length": 256, **_META}),
    ("filename", "VARCHAR", {"max_length": 4096, **_META}),
    ("data_source_url", "VARCHAR", {"max_length": 65535, **_META}),
    ("data_source_record_locator_protocol", "VARCHAR", {"max_length": 64, **_META}),
    ("data_source_record_locator_remote_file_path", "VARCHAR", {"max_length": 65535, **_META}),
    ("entities_items", "JSON", _META),
    ("entities_relationships", "JSON", _META),
]
SCHEMAS = {"minimal": MINIMAL_FIELDS, "recommended": MINIMAL_FIELDS + RECOMMENDED_FIELDS}


def create_collection(
    uri: str,
    collection: str,
    dim: int = 384,
    schema: str = "minimal",
    *,
    db_name: str = "",
    user: str = "",
    password: SecretStr | str | None = None,
    index_record_id: bool = True,
    enable_dynamic_field: bool = False,
    timeout: float | None = 60.0,
) -> list[str]:
    """Create SPEC.md's minimal (or recommended) collection with a COSINE index on `embeddings`
    (and an INVERTED one on `record_id`); returns the created fields, described.

    ValueError for a bad name, dimension or schema; ConnectorError when it exists or Milvus fails.
    """
    if not COLLECTION_NAME.match(collection):
        raise ValueError(
            f"collection name {collection!r} is invalid: letters, digits and underscores, "
            "starting with a letter or an underscore, at most 255 characters"
        )
    if not 1 <= dim <= 32_768:
        raise ValueError(f"dim must be between 1 and 32768, got {dim}")
    if schema not in SCHEMAS:
        raise ValueError(f"schema must be one of {', '.join(SCHEMAS)}, got {schema!r}")
    target = MilvusTarget.of(uri, db_name, user, password, timeout)
    client = target.connect(create_dirs=True)
    try:
        from pymilvus import DataType

        with target.rpc(f"looking up collection '{collection}'"):
            if client.has_collection(collection):
                raise ConnectorError(
                    f"vectordb: collection '{collection}' already exists in {target.shown}; "
                    "choose another name or drop it first"
                )
        fields = client.create_schema(auto_id=False, enable_dynamic_field=enable_dynamic_field)
        for name, type_name, options in SCHEMAS[schema]:
            options = dict(options)
            if "element_type" in options:
                options["element_type"] = DataType[options["element_type"]]
            if type_name == "FLOAT_VECTOR":
                options["dim"] = dim
            fields.add_field(name, DataType[type_name], **options)
        index = client.prepare_index_params()
        index.add_index("embeddings", index_type="AUTOINDEX", metric_type="COSINE")
        if index_record_id:
            index.add_index("record_id", index_type=scalar_index_type(client, target))
        with target.rpc(f"creating collection '{collection}'"):
            client.create_collection(collection, schema=fields)
        try:  # a collection that cannot be finished is dropped: nothing half-made stays behind
            with target.rpc(f"indexing and loading collection '{collection}'"):
                # Milvus Lite builds indexes at once; pymilvus's wait for them polls an RPC Lite
                # lacks (AllocTimestamp, logged as an error) and sleeps 0.5 s: skip it there.
                client.create_index(collection, index, sync=not target.lite)
                client.load_collection(collection)
                info = SchemaInfo.from_describe(client.describe_collection(collection))
            _check_nullable(client, target, collection, SCHEMAS[schema], info)
        except IngestflowError:
            with contextlib.suppress(Exception):
                client.drop_collection(collection)
            raise
        return [f"{spec.name}: {spec.describe()}" for spec in info.fields.values()]
    finally:
        client.close()


def server_version(client: MilvusClient, target: MilvusTarget) -> tuple[int, int] | None:
    """The server's (major, minor) version; None for Milvus Lite or a version it cannot read."""
    if target.lite:
        return None
    with target.rpc("reading the server version"):
        found = re.match(r"v?(\d+)\.(\d+)", str(client.get_server_version()))
    return (int(found[1]), int(found[2])) if found else None


def scalar_index_type(client: MilvusClient, target: MilvusTarget) -> str:
    """The index for `record_id` filters: INVERTED (Milvus Lite, servers from 2.4 on), or Trie on
    a Milvus 2.3 server, which has no INVERTED index and takes only Trie for VARCHAR."""
    version = server_version(client, target)
    return "Trie" if version is not None and version < (2, 4) else "INVERTED"


def _check_nullable(
    client: MilvusClient,
    target: MilvusTarget,
    collection: str,
    asked: list[tuple[str, str, dict[str, Any]]],
    info: SchemaInfo,
) -> None:
    """ConnectorError when the server made a metadata field not nullable that was asked nullable
    (servers before Milvus 2.5 ignore the flag): most elements lack most metadata, so rows would
    fail. `type` may lose it: every element has a type."""
    lost = [
        name
        for name, _, options in asked
        if options.get("nullable") and name != "type" and not info.fields[name].nullable
    ]
    if not lost:
        return
    version = server_version(client, target)
    shown = "" if version is None else f" (server version {version[0]}.{version[1]})"
    raise ConnectorError(
        f"vectordb: {target.shown}{shown} created {len(lost)} metadata field(s) without nullable "
        f"(e.g. '{lost[0]}'): this server does not support nullable fields (Milvus 2.5 and "
        "later do), and rows of elements without that metadata would fail. The collection was "
        "not kept. Use the minimal schema (--schema minimal) on this server, or a Milvus 2.5+ "
        "server for the recommended one"
    )


@dataclass(frozen=True)
class SearchHit:
    """One search result: COSINE similarity (higher is closer) and what identifies the element."""

    score: float
    element_id: str
    record_id: str | None
    filename: str | None
    text: str | None


def embeddings_dimension(uri: str, collection: str, **conn: Any) -> int | None:
    """The dimension of the collection's `embeddings` field (None without one); ConnectorError
    when the collection is missing or the server does not answer. Checked before a query
    vector is made (loading a model takes seconds)."""
    target = MilvusTarget.of(uri, **conn)
    client = target.connect()
    try:
        vec = describe(client, target, collection).fields.get("embeddings")
    finally:
        client.close()
    return None if vec is None else vec.dim


def shown_uri(uri: str) -> str:
    """A Milvus URI with any credentials masked, for messages."""
    return mask_uri(uri)


def search(
    uri: str,
    collection: str,
    query_vector: Sequence[float],
    k: int = 5,
    *,
    db_name: str = "",
    user: str = "",
    password: SecretStr | str | None = None,
    timeout: float | None = 60.0,
) -> list[SearchHit]:
    """The `k` rows whose embeddings are closest to `query_vector`, best first."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    target = MilvusTarget.of(uri, db_name, user, password, timeout)
    client = target.connect()
    try:
        info = describe(client, target, collection, len(query_vector))
        vec = info.fields.get("embeddings")
        if vec is None or vec.type != "FLOAT_VECTOR":
            raise ConnectorError(f"vectordb: collection '{collection}' has no 'embeddings' vector")
        if vec.dim != len(query_vector):
            raise ConnectorError(
                f"vectordb: collection '{collection}' holds {vec.dim}-dimensional embeddings; "
                f"the query vector has {len(query_vector)} dimensions (use the same model)"
            )
        ensure_loaded(client, target, collection)
        wanted = [f for f in ("record_id", "filename", "text") if f in info.fields or info.dynamic]
        with target.rpc(f"searching collection '{collection}'"):
            result = client.search(
                collection,
                data=[[float(x) for x in query_vector]],
                limit=k,
                anns_field="embeddings",
                output_fields=wanted,
                # a search right after a run sees what it wrote (a server's default, Bounded,
                # may serve a snapshot from before the last writes)
                consistency_level="Strong",
            )
        hits = []
        for hit in result[0] if result else []:
            entity = hit.get("entity") or {}
            hits.append(
                SearchHit(
                    score=float(hit.get("distance", 0.0)),
                    element_id=str(getattr(hit, "id", None) or hit.get("element_id")),
                    record_id=entity.get("record_id"),
                    filename=entity.get("filename"),
                    text=entity.get("text"),
                )
            )
        return hits
    finally:
        client.close()


def check_connection(config: VectorDBConfig, lite_root: Path | None = None) -> ConnectionCheck:
    """Does the instance answer, do the credentials work, and does the collection exist? A Lite
    database that is not there is reported, not created (a relative path from `lite_root`)."""
    from ingestflow.connectors.check import ConnectionCheck

    target = target_of(config, timeout=15.0, lite_root=lite_root)
    try:
        client = target.connect()
        try:
            describe(client, target, config.collection_name)
        finally:
            client.close()
    except IngestflowError as exc:
        return ConnectionCheck.failure(str(exc))
    return ConnectionCheck.success()
