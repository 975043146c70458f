"""The vectordb destination: Milvus through pymilvus, on a Milvus Lite `.db` file or a server.

`uri` is a Milvus Lite path (anything not starting with http(s)://, tcp:// or unix:, ending in
`.db`) or a server address (`user`/`password` become the token). `precheck()` reads the collection's
schema once (SPEC.md's minimal fields, the embedder's dimension, the metadata fields' types);
`write()` builds every row and checks every size before touching the collection (see
`vectordb_rows`), so most bad documents fail with nothing changed. Reaching Milvus is
`milvus_client`; creating, searching and checking collections is `vectordb_admin` (its names
are importable from here too); the lookups' queries are `vectordb_queries`.

One document, one unit. Milvus has no transactions, and the two back ends differ: Milvus Lite
replaces a row whose primary key exists (and its `upsert` merges old dynamic fields in), a server
keeps duplicates on insert. So `write(doc)` never relies on either and does, in order:
  1. look up which of the new element ids are stored already, and for which record (an element id
     stored for another record fails the document: writing it would take that record's row);
  2. look up the record's stored ids (`record_id == ...`), and snapshot the stored rows whose ids
     come back (only those: they are about to be overwritten);
  3. insert the rows with new ids, then replace the rows with stored ids (Lite: insert, which
     replaces; server: upsert, which replaces), in batches;
  4. delete the record's stored rows whose ids are not among the new ones, by primary key.
A failure in 3 or 4 undoes the write: the new-id rows are deleted and the snapshot is written
back, so the record keeps its earlier rows, and the document fails with a DocumentError. What is
left open: a crash of the process between 3 and 4, or a failed undo, can leave old and new rows
side by side; the message says so, and writing the document again repairs it. A delete of more
than 1,000 stale ids goes in several requests; a failure between them can leave some old rows.

Milvus Lite scans every row for any filter but a primary-key list (its memtable holds vectors as
Python lists), so per-document `record_id` queries would make a job quadratic. For Lite (one
process per `.db`) the destination therefore reads the collection's (element_id, record_id) pairs
once and keeps them up to date as it writes (`row_index`); writers in the same process that do not
go through this destination are not seen. On a server every lookup is a query (consistency Strong).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.batching import bounded_batches
from ingestflow.connectors import vectordb_queries as queries
from ingestflow.connectors.base import Destination
from ingestflow.connectors.milvus_client import (
    MilvusTarget,
    create_command,
    describe,
    ensure_loaded,
    index_problems,
    mask_uri,
    quiet_pymilvus_logs,
    target_of,
)
from ingestflow.connectors.vectordb import SERVER_SCHEMES, VectorDBConfig, is_lite
from ingestflow.connectors.vectordb_admin import (
    COLLECTION_NAME,
    MINIMAL_FIELDS,
    RECOMMENDED_FIELDS,
    SCHEMAS,
    SearchHit,
    check_connection,
    create_collection,
    search,
)
from ingestflow.connectors.vectordb_rows import RowBuilder
from ingestflow.connectors.vectordb_schema import SchemaInfo, check_schema
from ingestflow.elements import Document
from ingestflow.errors import ConnectorError, DocumentError
from ingestflow.spec.models import MASK

if TYPE_CHECKING:
    from pymilvus import MilvusClient

__all__ = [
    "COLLECTION_NAME",
    "DEFAULT_BATCH_SIZE",
    "MAX_BATCH_CHARS",
    "MINIMAL_FIELDS",
    "RECOMMENDED_FIELDS",
    "SCHEMAS",
    "SERVER_SCHEMES",
    "MilvusTarget",
    "SearchHit",
    "VectorDBDestination",
    "check_connection",
    "create_collection",
    "create_command",
    "describe",
    "is_lite",
    "mask_uri",
    "quiet_pymilvus_logs",
    "search",
    "target_of",
]

DEFAULT_BATCH_SIZE = 1000
MAX_BATCH_CHARS = 32 * 1024 * 1024  # keeps one insert well under a server's message size limit


class VectorDBDestination(Destination):
    """Writes each document's elements as rows of a Milvus collection, replacing its earlier rows.

    `varchar_policy` maps a field to `fail` (the default: the document fails), `drop` or
    `truncate` for values over the field's size; dropped and cut values come back as warnings.
    Not thread-safe: one writer at a time.
    """

    name = "vectordb"
    one_writer_only = "Milvus Lite: a file only one process may open"  # (`for_workers`)

    def __init__(
        self,
        config: VectorDBConfig,
        *,
        varchar_policy: Mapping[str, str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        row_index: bool | None = None,
        timeout: float | None = 60.0,
        lite_root: Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.milvus = target_of(config, timeout, lite_root)
        self._made = (config, timeout, lite_root)  # what `for_workers` makes its copies from
        self.collection = config.collection_name
        self.policies = dict(varchar_policy or {})
        self.batch_size = batch_size
        self.row_index = self.milvus.lite if row_index is None else row_index
        self._client: MilvusClient | None = None
        self._builder: RowBuilder | None = None
        self._schema: SchemaInfo | None = None
        self._by_record: dict[str, set[str]] | None = None
        self._owner: dict[str, str] = {}

    def __repr__(self) -> str:
        return (
            f"VectorDBDestination(uri={mask_uri(self.milvus.uri)!r}, "
            f"db_name={self.milvus.db_name!r}, collection={self.collection!r}, "
            f"user={self.milvus.user!r}, password={MASK!r})"
        )

    def for_workers(self) -> Destination | None:
        """A copy for worker processes, each with a client of its own (a server: `http://…`);
        None for Milvus Lite, a file only one process may open: the run writes it."""
        if self.milvus.lite:
            return None
        config, timeout, lite_root = self._made
        return VectorDBDestination(
            config,
            varchar_policy=self.policies,
            batch_size=self.batch_size,
            row_index=False,  # other writers: every lookup asks the server
            timeout=timeout,
            lite_root=lite_root,
        )

    # --- precheck ------------------------------------------------------------------------

    def precheck(self, embedding_dimension: int | None) -> None:
        """Connect and check the collection fits: exists, minimal schema, dimension, field types."""
        if self._client is None:
            self._client = self.milvus.connect()
        client = self._client
        info = describe(client, self.milvus, self.collection, embedding_dimension or 384)
        problems = check_schema(info, embedding_dimension, self.policies)
        if "embeddings" in info.fields and info.fields["embeddings"].type == "FLOAT_VECTOR":
            problems += index_problems(client, self.milvus, self.collection)
        if problems:
            listed = "\n".join(f"  - {p}" for p in problems)
            raise ConnectorError(
                f"vectordb: collection '{self.collection}' in {self.milvus.shown} does not fit "
                f"the workflow ({len(problems)} problem(s)):\n{listed}\n  hint: a collection "
                "with the minimal schema is made by:\n    "
                + create_command(
                    self.milvus.uri,
                    f"{self.collection}_new",
                    embedding_dimension or 384,
                    self.milvus.db_name,
                )
            )
        ensure_loaded(client, self.milvus, self.collection)
        self._schema = info
        self._builder = RowBuilder(info, self.policies)
        self._by_record = None

    # --- write ---------------------------------------------------------------------------

    def write(self, doc: Document) -> list[str]:
        """Replace the document's rows with its elements, as a unit (see the module docstring).

        A server that restarted since the precheck comes back with the collection released
        (every query fails, "collection not loaded"): the collection is loaded again and the
        document written once more; a write is a replace, so a second try repairs a first one
        that failed midway. A server that is down fails the document, with one line."""
        if self._builder is None or self._client is None:
            raise ConnectorError("vectordb: precheck() must succeed before write()")
        try:
            return self._write(doc)
        except DocumentError:
            if not self._reloaded():
                raise
        return self._write(doc)

    def _reloaded(self) -> bool:
        """True when the collection was released on the server and is now loaded again."""
        if self.milvus.lite or self._client is None:
            return False  # Lite lives in this process: it cannot restart under the writer
        try:
            state = self._client.get_load_state(self.collection).get("state")
            if getattr(state, "name", str(state)) == "Loaded":
                return False
            self._client.load_collection(self.collection)
        except Exception:  # down, or still starting: the document fails as it did
            return False
        return True

    def _write(self, doc: Document) -> list[str]:
        assert self._builder is not None
        rows, sizes, notes = self._builder.build(doc)
        label = f"vectordb: record {doc.record_id} ({doc.filename})"
        new_ids = [row["element_id"] for row in rows]
        what = f"record {doc.record_id} ({doc.filename}): reading stored rows (nothing was changed)"
        with self.milvus.rpc(what, DocumentError):
            owners = self._owners(new_ids)
            foreign = {eid: rec for eid, rec in owners.items() if rec != doc.record_id}
            if foreign:
                eid, rec = next(iter(foreign.items()))
                raise DocumentError(
                    f"{label}: {len(foreign)} element id(s) are already stored for another "
                    f"record (e.g. {eid} for record {rec}); element ids must be unique across "
                    "documents (set unique_element_ids, or delete the other record's rows). "
                    "Nothing was changed"
                )
            stored = self._stored_ids(doc.record_id) | owners.keys()
            keep = set(new_ids)
            snapshot = self._fetch(sorted(stored & keep))
        fresh = [(r, s) for r, s in zip(rows, sizes, strict=True) if r["element_id"] not in stored]
        again = [(r, s) for r, s in zip(rows, sizes, strict=True) if r["element_id"] in stored]
        stale = sorted(stored - keep)
        attempted: list[str] = []
        try:
            for batch in self._batches(fresh):
                attempted += [row["element_id"] for row in batch]
                self._insert(batch)
            for batch in self._batches(again):
                self._replace(batch)
            for chunk in queries.chunks(stale, queries.LOOKUP_CHUNK):
                self._delete(chunk)
        except Exception as exc:
            self._by_record = None  # rebuilt from the collection on the next write
            raise DocumentError(self._undo(label, exc, attempted, snapshot)) from None
        if self._by_record is not None:
            for eid in self._by_record.pop(doc.record_id, set()):
                self._owner.pop(eid, None)
            if new_ids:
                self._by_record[doc.record_id] = set(new_ids)
                self._owner.update(dict.fromkeys(new_ids, doc.record_id))
        return notes.warnings(doc.record_id)

    def delete(self, record_id: str, filename: str | None) -> None:
        """Remove every row of a record whose document left the source."""
        if self._client is None:
            raise ConnectorError("vectordb: precheck() must succeed before delete()")
        label = f"vectordb: record {record_id} ({filename or 'name not recorded'})"
        try:
            with self.milvus.rpc(f"{label}: removing its rows", DocumentError):
                for chunk in queries.chunks(
                    sorted(self._stored_ids(record_id)), queries.LOOKUP_CHUNK
                ):
                    self._delete(chunk)
        except DocumentError:
            self._by_record = None  # some rows may be gone: read again on the next write
            raise
        if self._by_record is not None:
            for eid in self._by_record.pop(record_id, set()):
                self._owner.pop(eid, None)

    def _undo(
        self, label: str, exc: BaseException, attempted: list[str], snapshot: list[dict[str, Any]]
    ) -> str:
        """Remove the new-id rows and write the overwritten ones back; the message to raise."""
        reason = self.milvus.explain(exc)
        try:
            for chunk in queries.chunks(attempted, queries.LOOKUP_CHUNK):
                self._delete(chunk)
            for start in range(0, len(snapshot), self.batch_size):
                self._replace(snapshot[start : start + self.batch_size])
        except Exception as undo_exc:
            return (
                f"{label}: the write failed ({reason}) and undoing it failed too "
                f"({self.milvus.explain(undo_exc)}): the collection may hold old and new rows of "
                "this record side by side; writing the document again repairs it"
            )
        return f"{label}: the write failed ({reason}); the record's earlier rows were kept"

    def _batches(self, pairs: list[tuple[dict[str, Any], int]]) -> Iterator[list[dict[str, Any]]]:
        return bounded_batches(pairs, self.batch_size, MAX_BATCH_CHARS)

    def _insert(self, rows: list[dict[str, Any]]) -> None:
        assert self._client is not None
        self._client.insert(self.collection, rows)

    def _replace(self, rows: list[dict[str, Any]]) -> None:
        """Overwrite rows with stored ids: Lite's insert replaces (its upsert would merge the old
        dynamic fields in); a server's upsert replaces (its insert would keep a duplicate)."""
        assert self._client is not None
        if self.milvus.lite:
            self._client.insert(self.collection, rows)
        else:
            self._client.upsert(self.collection, rows)

    def _delete(self, ids: Sequence[str]) -> None:
        assert self._client is not None
        self._client.delete(self.collection, filter=queries.ids_filter(ids))

    # --- lookups -------------------------------------------------------------------------

    def _load_index(self) -> dict[str, set[str]]:
        """The (record_id -> element ids) of the whole collection, read once (Lite)."""
        if self._by_record is None:
            assert self._client is not None
            by_record: dict[str, set[str]] = {}
            owner: dict[str, str] = {}
            for row in self._scan(["record_id"]):
                by_record.setdefault(row["record_id"], set()).add(row["element_id"])
                owner[row["element_id"]] = row["record_id"]
            self._by_record, self._owner = by_record, owner
        return self._by_record

    def _scan(self, fields: list[str], expr: str = "") -> Iterable[dict[str, Any]]:
        """Every row matching `expr` (`vectordb_queries.scan`)."""
        assert self._client is not None
        return queries.scan(self._client, self.collection, fields, expr, self.milvus.lite)

    def _owners(self, ids: list[str]) -> dict[str, str]:
        """element id -> record id, for the ids that are stored already."""
        if self.row_index:
            self._load_index()
            return {eid: self._owner[eid] for eid in ids if eid in self._owner}
        assert self._client is not None
        return queries.owners(self._client, self.collection, ids)

    def has(self, doc: Document) -> bool | None:
        """True when the collection holds rows of the document's record (a recreated or
        emptied collection does not); None when it cannot be asked."""
        if self._client is None:
            return None
        try:
            return bool(self._stored_ids(doc.record_id))
        except Exception:  # the answer is only an optimisation: process the document again
            return None

    def _stored_ids(self, record_id: str) -> set[str]:
        """The element ids stored for `record_id`."""
        if self.row_index:
            return set(self._load_index().get(record_id, ()))
        rows = self._scan(["element_id"], f"record_id == {queries.literal(record_id)}")
        return {row["element_id"] for row in rows}

    def _fetch(self, ids: list[str]) -> list[dict[str, Any]]:
        """Whole stored rows (vectors and dynamic fields included), to write back on undo."""
        assert self._client is not None and self._schema is not None
        skip = {n for n, spec in self._schema.fields.items() if spec.function_output}
        return queries.fetch(self._client, self.collection, ids, skip)

    def close(self) -> None:
        """Release the client (Milvus Lite keeps its own write-ahead log; no flush is needed)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
        self._client = None
        self._builder = None
        self._by_record = None
