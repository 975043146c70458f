"""`ingestflow vectordb`: create a collection with the service's schema, and search one.

Exit codes: 0 success, 2 bad input (arguments, model), 3 a connector problem (Milvus cannot be
opened, the collection is missing or does not fit). pymilvus and the embedding model are imported
inside the commands, so that `ingestflow --help` stays fast.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from ingestflow.cli.app import group

app = group(
    "vectordb", "Create and search Milvus collections (a Milvus Lite .db file or a server)."
)

PASSWORD_ENV = "INGESTFLOW_VECTORDB_PASSWORD"


class SchemaKind(StrEnum):
    """The collection schemas `create-collection` makes."""

    minimal = "minimal"
    recommended = "recommended"


Uri = Annotated[
    str,
    typer.Option(
        "--uri", help="A Milvus Lite file (./milvus.db) or a server (http(s)://host:port)."
    ),
]
Collection = Annotated[str, typer.Option("--collection", help="Collection name.")]
DbName = Annotated[str, typer.Option("--db-name", help="Database in the instance.")]
User = Annotated[str, typer.Option("--user", help="User name (servers only).")]
Password = Annotated[
    str | None,
    typer.Option(
        "--password",
        envvar=PASSWORD_ENV,
        show_default=False,
        help=f"Password (servers only); better given through ${PASSWORD_ENV}.",
    ),
]


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"✗ {message}", err=True)
    return typer.Exit(code)


@app.command("create-collection")
def create_collection_cmd(
    uri: Uri,
    collection: Collection,
    dim: Annotated[int, typer.Option("--dim", help="Embedding dimension.")] = 384,
    schema: Annotated[
        SchemaKind,
        typer.Option(
            "--schema",
            help="minimal: element_id, embeddings, record_id, text, type; recommended: plus the "
            'metadata fields (README, "Walkthrough").',
        ),
    ] = SchemaKind.minimal,
    db_name: DbName = "",
    user: User = "",
    password: Password = None,
) -> None:
    """Create a collection with the service's schema and a COSINE index on `embeddings`."""
    from ingestflow.errors import IngestflowError
    from ingestflow.service.admin import create_collection, shown_uri

    try:
        fields = create_collection(
            uri, collection, dim, schema.value, db_name=db_name, user=user, password=password
        )
    except ValueError as exc:
        raise _fail(str(exc), 2) from None
    except IngestflowError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    typer.echo(
        f"✓ created collection '{collection}' ({schema.value} schema, COSINE index on "
        f"embeddings) in {shown_uri(uri)}"
    )
    for line in fields:
        typer.echo(f"  {line}")


@app.command("search")
def search_cmd(
    query: Annotated[str, typer.Argument(help="The text to search for.")],
    uri: Uri,
    collection: Collection,
    k: Annotated[int, typer.Option("-k", "--top-k", min=1, help="How many hits to show.")] = 5,
    model: Annotated[
        str, typer.Option("--model", help="Embedding model; the local one runs offline.")
    ] = "sentence-transformers/all-minilm-l6-v2",
    db_name: DbName = "",
    user: User = "",
    password: Password = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the hits as JSON.")] = False,
) -> None:
    """Embed QUERY with the local model and print the closest elements, best first."""
    from ingestflow.errors import IngestflowError
    from ingestflow.service import admin

    LOCAL_EMBED_MODEL = admin.local_embed_model()
    if model.strip().lower() != LOCAL_EMBED_MODEL:
        raise _fail(
            f"model {model!r} cannot embed a query offline; the local model is {LOCAL_EMBED_MODEL}",
            2,
        )
    if not query.strip():
        raise _fail("the query is empty", 2)
    conn = {"db_name": db_name, "user": user, "password": password}
    try:
        hits = admin.search(uri, collection, query, k, **conn)
    except IngestflowError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    if as_json:
        import dataclasses
        import json

        typer.echo(json.dumps([dataclasses.asdict(hit) for hit in hits], indent=2))
        return
    if not hits:
        typer.echo(f"no hits: collection '{collection}' is empty")
        return
    for rank, hit in enumerate(hits, 1):
        snippet = " ".join((hit.text or "").split())
        snippet = snippet if len(snippet) <= 160 else snippet[:159] + "…"
        typer.echo(
            f"{rank:>2}. {hit.score:.4f}  record {hit.record_id}  "
            f"file {hit.filename or '-'}  element {hit.element_id}"
        )
        typer.echo(f"    {snippet}")
