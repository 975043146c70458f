"""Administration the front ends offer beside the resources: vector collections and model servers.

Thin on purpose: it names, for the CLI, the connector and provider functions it may call, so
that front ends depend on the service layer alone.
"""

from __future__ import annotations

from typing import Any

from ingestflow.errors import ConnectorError

LOCAL_QUERY_DIMENSION = 384


def create_collection(uri: str, collection: str, dim: int, schema: str, **conn: Any) -> list[str]:
    """Create a collection with the spec's schema and a COSINE index; returns its field lines."""
    from ingestflow.connectors.vectordb_admin import create_collection as create

    return create(uri, collection, dim, schema, **conn)


def shown_uri(uri: str) -> str:
    """A Milvus URI with any credentials masked, for messages."""
    from ingestflow.connectors.vectordb_admin import shown_uri as shown

    return shown(uri)


def local_embed_model() -> str:
    """The embedding model that runs offline (queries are embedded with it)."""
    from ingestflow.spec.catalog import LOCAL_EMBED_MODEL

    return LOCAL_EMBED_MODEL


def search(uri: str, collection: str, query: str, k: int, **conn: Any) -> list[Any]:
    """The `k` elements closest to `query` (embedded with the local model), best first. The
    collection is checked before the model loads."""
    from ingestflow.connectors import vectordb_admin

    dim = vectordb_admin.embeddings_dimension(uri, collection, **conn)
    if dim != LOCAL_QUERY_DIMENSION:
        found = "no 'embeddings' field" if dim is None else f"{dim}-dimensional embeddings"
        raise ConnectorError(
            f"vectordb: collection '{collection}' has {found}; the local model makes "
            f"{LOCAL_QUERY_DIMENSION}-dimensional vectors"
        )
    return vectordb_admin.search(uri, collection, embed_query(query), k, **conn)


def embed_query(text: str) -> list[float]:
    """The query's unit-norm vector from the local all-MiniLM-L6-v2, by the embed node kind that
    embeds with it offline (`ibm`, that model), as a workflow's embedder would make it: the
    service names a kind from the registry, never a stage."""
    from ingestflow.elements import Document
    from ingestflow.spec import registry
    from ingestflow.spec.catalog import LOCAL_EMBED_MODEL
    from ingestflow.spec.settings import EmbedSettings
    from ingestflow.stages.base import RunContext

    kind = registry.lookup("embed", "ibm")
    assert kind is not None, "the built-in embed kinds are registered"
    settings = EmbedSettings(model_name=LOCAL_EMBED_MODEL)
    stage = registry.stage_class(kind, settings)("query", kind.subtype, settings, RunContext())
    stage.open()
    try:
        element = {"type": "NarrativeText", "element_id": "query", "text": text, "metadata": {}}
        done = stage.process(Document("query", "query", "query", elements=[element]))
    finally:
        stage.close()
    return [float(x) for x in done.elements[0]["embeddings"]]


def provider_endpoints() -> dict[str, Any]:
    """The model-server endpoints the environment configures (EnvironmentProblem if malformed)."""
    from ingestflow.providers.config import endpoints_from_env

    return endpoints_from_env()


def check_providers(endpoints: dict[str, Any]) -> list[Any]:
    """Call each endpoint once; what answered and what did not."""
    from ingestflow.providers.check import check_all

    return check_all(endpoints)
