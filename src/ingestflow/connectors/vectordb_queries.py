"""The vectordb destination's reads of a collection: filter expressions, scans that page past a
server's query window, element owners and whole rows (`vectordb_destination` writes)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pymilvus import MilvusClient

LOOKUP_CHUNK = 1000  # ids in one `element_id in [...]` expression
QUERY_WINDOW = 16_384  # the most rows a Milvus server returns for one query (offset + limit)
STRONG = {"consistency_level": "Strong"}


def literal(text: str) -> str:
    """A string literal for a filter expression (Milvus and Milvus Lite escapes)."""
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def ids_filter(ids: Sequence[str]) -> str:
    """A filter expression for rows with these element ids."""
    return f"element_id in [{', '.join(literal(i) for i in ids)}]"


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """`items` in slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def scan(
    client: MilvusClient, collection: str, fields: list[str], expr: str, lite: bool
) -> Iterable[dict[str, Any]]:
    """Every row matching `expr`: one query on Lite, pages of a query iterator on a server."""
    if lite and not expr:
        return client.query(collection, filter="", output_fields=fields)
    if expr:
        first = client.query(
            collection, filter=expr, output_fields=fields, limit=QUERY_WINDOW, **STRONG
        )
        if len(first) < QUERY_WINDOW:
            return first
    return _iterate(client, collection, fields, expr)


def _iterate(
    client: MilvusClient, collection: str, fields: list[str], expr: str
) -> Iterator[dict[str, Any]]:
    """The rows matching `expr`, page by page through a query iterator."""
    pages = client.query_iterator(
        collection, batch_size=4096, filter=expr, output_fields=fields, **STRONG
    )
    try:
        while page := pages.next():
            yield from page
    finally:
        pages.close()


def owners(client: MilvusClient, collection: str, ids: list[str]) -> dict[str, str]:
    """element id -> record id, for the ids that are stored already (queried)."""
    found: dict[str, str] = {}
    for chunk in chunks(ids, LOOKUP_CHUNK):
        rows = client.query(
            collection, filter=ids_filter(chunk), output_fields=["record_id"], **STRONG
        )
        found.update({row["element_id"]: row["record_id"] for row in rows})
    return found


def fetch(
    client: MilvusClient, collection: str, ids: list[str], skip: set[str]
) -> list[dict[str, Any]]:
    """Whole stored rows (vectors and dynamic fields included, fields in `skip` left out), to
    write back on undo."""
    rows: list[dict[str, Any]] = []
    for chunk in chunks(ids, LOOKUP_CHUNK):
        got = client.query(  # "*" plus the vector, named (older servers omit it)
            collection,
            filter=ids_filter(chunk),
            output_fields=["*", "embeddings"],
            **STRONG,
        )
        rows += [{k: v for k, v in row.items() if k not in skip} for row in got]
    return rows
