"""The vectordb destination: Milvus through pymilvus, on a Milvus Lite `.db` file or a server.

`uri` is a Milvus Lite path (anything not starting with http(s)://, tcp:// or unix:, ending in
`.db`) or a server address (`user`/`password` become the token). `precheck()` reads the collection's
schema once (SPEC.md's minimal fields, the embedder's dimension, the metadata fields' types);
`write()` builds every row and checks every size before touching the collection (see
`vectordb_schema`), so most bad documents fail with nothing changed.

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
import logging
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from ingestflow.connectors.base import Destination
from ingestflow.connectors.vectordb_schema import RowBuilder, SchemaInfo, check_schema
from ingestflow.elements import Document
from ingestflow.errors import ConnectorError, DocumentError, EnvironmentProblem, IngestflowError
from ingestflow.spec.models import MASK, VectorDBConfig

if TYPE_CHECKING:
    from pymilvus import MilvusClient

    from ingestflow.connectors.check import ConnectionCheck

DEFAULT_BATCH_SIZE = 1000
MAX_BATCH_CHARS = 32 * 1024 * 1024  # keeps one insert well under a server's message size limit
LOOKUP_CHUNK = 1000  # ids in one `element_id in [...]` expression
QUERY_WINDOW = 16_384  # the most rows a Milvus server returns for one query (offset + limit)
SERVER_SCHEMES = ("http://", "https://", "tcp://", "unix:")
COLLECTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
_STRONG = {"consistency_level": "Strong"}


def quiet_pymilvus_logs() -> None:
    """Silence pymilvus's ERROR log of every failed RPC (a traceback each) and Milvus Lite's own;
    ingestflow reports each failure once, in its own words."""
    for name in ("pymilvus.decorators", "milvus_lite"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def is_lite(uri: str) -> bool:
    """True for a Milvus Lite file path, False for a server address."""
    return not uri.strip().lower().startswith(SERVER_SCHEMES)


def create_command(uri: str, collection: str, dim: int = 384, db_name: str = "") -> str:
    """The `ingestflow vectordb create-collection` command that creates SPEC.md's minimal schema."""
    parts = ["ingestflow", "vectordb", "create-collection", "--uri", mask_uri(uri)]
    parts += ["--collection", collection, "--dim", str(dim)]
    if db_name:
        parts += ["--db-name", db_name]
    return " ".join(shlex.quote(p) for p in parts)


def mask_uri(uri: str) -> str:
    """`uri` with any password in its user-info part masked."""
    return re.sub(r"(?<=://)([^/@:]*):[^/@]*@", rf"\1:{MASK}@", uri)


def _literal(text: str) -> str:
    """A string literal for a filter expression (Milvus and Milvus Lite escapes)."""
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def _ids_filter(ids: Sequence[str]) -> str:
    return f"element_id in [{', '.join(_literal(i) for i in ids)}]"


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass(frozen=True, repr=False)
class MilvusTarget:
    """Where a collection lives and how to reach it; secrets stay out of messages and reprs."""

    uri: str
    db_name: str = ""
    user: str = ""
    password: SecretStr | None = None
    timeout: float | None = 60.0

    @classmethod
    def of(
        cls,
        uri: str,
        db_name: str = "",
        user: str = "",
        password: SecretStr | str | None = None,
        timeout: float | None = 60.0,
    ) -> MilvusTarget:
        """A target from plain arguments (a str password is wrapped, never kept in the clear)."""
        secret = SecretStr(password) if isinstance(password, str) else password
        return cls(uri, db_name, user, secret, timeout)

    def __repr__(self) -> str:
        return f"MilvusTarget({self.shown!r}, user={self.user!r}, password={MASK!r})"

    @property
    def lite(self) -> bool:
        return is_lite(self.uri)

    @property
    def shown(self) -> str:
        """The location as messages show it."""
        where = (
            f"Milvus Lite database {self.uri}" if self.lite else f"Milvus at {mask_uri(self.uri)}"
        )
        return where + (f" (database '{self.db_name}')" if self.db_name else "")

    def _secrets(self) -> list[str]:
        secret = self.password.get_secret_value() if self.password else ""
        return [s for s in (f"{self.user}:{secret}" if secret else "", secret) if s]

    def explain(self, exc: BaseException) -> str:
        """The failure as one line, with any secret masked."""
        text = str(getattr(exc, "message", "") or exc or type(exc).__name__)
        code = getattr(exc, "code", None)
        if isinstance(code, int) and code not in (-1, 0):
            text += f" (code {code})"
        for secret in self._secrets():
            text = text.replace(secret, MASK)
        return mask_uri(" ".join(text.split()))

    @contextlib.contextmanager
    def rpc(self, what: str, error: type[IngestflowError] = ConnectorError) -> Iterator[None]:
        """Turn a pymilvus failure into `error`, saying what failed where."""
        try:
            yield
        except IngestflowError:
            raise
        except Exception as exc:
            raise error(f"vectordb: {what} failed at {self.shown}: {self.explain(exc)}") from None

    def connect(self, create_dirs: bool = False) -> MilvusClient:
        """A client; ConnectorError with the reason when it cannot open."""
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # pragma: no cover - set-up problem
            raise EnvironmentProblem(f"the vectordb destination needs pymilvus: {exc}") from None
        quiet_pymilvus_logs()
        kwargs: dict[str, Any] = {"db_name": self.db_name, "timeout": self.timeout}
        if self.lite:
            path = Path(self.uri).expanduser()
            if path.suffix != ".db":
                raise ConnectorError(
                    f"vectordb: uri {self.uri!r} is neither a server address (http(s)://host:port) "
                    "nor a Milvus Lite file: a Milvus Lite path must end in .db"
                )
            if path.is_file():
                raise ConnectorError(
                    f"vectordb: {path} is a file; a Milvus Lite database is a folder (its .db "
                    "path becomes a folder on first use): choose another path"
                )
            if create_dirs:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise ConnectorError(
                        f"vectordb: cannot create folder {path.parent}: {exc.strerror or exc}"
                    ) from None
            elif not path.parent.is_dir():
                raise ConnectorError(f"vectordb: {self.shown}: folder {path.parent} does not exist")
            kwargs["uri"] = str(path)
        else:
            secret = self.password.get_secret_value() if self.password else ""
            kwargs["uri"] = self.uri
            kwargs["token"] = f"{self.user}:{secret}" if self.user and secret else secret
        try:
            client = MilvusClient(**kwargs)
            client.list_collections()  # checks the database and the credentials
        except Exception as exc:
            raise ConnectorError(self._open_failure(exc)) from None
        return client

    def _open_failure(self, exc: BaseException) -> str:
        reason = self.explain(exc)
        if self.lite and "Open local milvus failed" in reason and _lite_locked(Path(self.uri)):
            return (
                f"vectordb: {self.shown} is in use by another process (Milvus Lite: 'Open local "
                "milvus failed', DataDirLockedError): Milvus Lite lets one process at a time open "
                "a .db. Stop the other process (another ingestflow run, a notebook, a script), "
                "or use a Milvus server (http(s)://host:port)"
            )
        return f"vectordb: cannot open {self.shown}: {reason}"


def _lite_locked(path: Path) -> bool:
    """True when another process holds the Lite data folder's LOCK."""
    lock = path.expanduser() / "LOCK"
    if not lock.is_file():
        return False
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return True
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def target_of(config: VectorDBConfig, timeout: float | None = 60.0) -> MilvusTarget:
    """The MilvusTarget a connector config names."""
    return MilvusTarget(config.uri, config.db_name, config.user, config.password, timeout)


def describe(
    client: MilvusClient, target: MilvusTarget, collection: str, dim: int = 384
) -> SchemaInfo:
    """The collection's schema; ConnectorError (with the command that creates it) when missing."""
    with target.rpc(f"looking up collection '{collection}'"):
        exists = client.has_collection(collection)
    if not exists:
        raise ConnectorError(
            f"vectordb: collection '{collection}' does not exist in {target.shown}; SPEC.md: the "
            "collection must exist with a defined schema before anything is written to it. "
            f"Create SPEC.md's minimal schema with:\n  "
            f"{create_command(target.uri, collection, dim, target.db_name)}"
        )
    with target.rpc(f"describing collection '{collection}'"):
        return SchemaInfo.from_describe(client.describe_collection(collection))


def _ensure_loaded(client: MilvusClient, target: MilvusTarget, collection: str) -> None:
    with target.rpc(f"loading collection '{collection}'"):
        state = client.get_load_state(collection).get("state")
        if getattr(state, "name", str(state)) != "Loaded":
            client.load_collection(collection)


def _index_problems(client: MilvusClient, target: MilvusTarget, collection: str) -> list[str]:
    with target.rpc(f"reading the indexes of '{collection}'"):
        names = client.list_indexes(collection, field_name="embeddings")
        if not names:
            return ["field 'embeddings' has no index; SPEC.md's schema indexes it (metric COSINE)"]
        info = client.describe_index(collection, names[0]) or {}
    metric = str(info.get("metric_type") or "").upper()
    if metric and metric != "COSINE":
        return [f"field 'embeddings' is indexed with metric {metric}; SPEC.md's metric is COSINE"]
    return []


class VectorDBDestination(Destination):
    """Writes each document's elements as rows of a Milvus collection, replacing its earlier rows.

    `varchar_policy` maps a field to `fail` (the default: the document fails), `drop` or
    `truncate` for values over the field's size; dropped and cut values come back as warnings.
    Not thread-safe: one writer at a time.
    """

    name = "vectordb"

    def __init__(
        self,
        config: VectorDBConfig,
        *,
        varchar_policy: Mapping[str, str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        row_index: bool | None = None,
        timeout: float | None = 60.0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.milvus = target_of(config, timeout)
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

    # --- precheck ------------------------------------------------------------------------

    def precheck(self, embedding_dimension: int | None) -> None:
        """Connect and check the collection fits: exists, minimal schema, dimension, field types."""
        if self._client is None:
            self._client = self.milvus.connect()
        client = self._client
        info = describe(client, self.milvus, self.collection, embedding_dimension or 384)
        problems = check_schema(info, embedding_dimension, self.policies)
        if "embeddings" in info.fields and info.fields["embeddings"].type == "FLOAT_VECTOR":
            problems += _index_problems(client, self.milvus, self.collection)
        if problems:
            listed = "\n".join(f"  - {p}" for p in problems)
            raise ConnectorError(
                f"vectordb: collection '{self.collection}' in {self.milvus.shown} does not fit "
                f"the workflow ({len(problems)} problem(s)):\n{listed}\n  hint: a collection "
                "with SPEC.md's minimal schema is made by:\n    "
                + create_command(
                    self.milvus.uri,
                    f"{self.collection}_new",
                    embedding_dimension or 384,
                    self.milvus.db_name,
                )
            )
        _ensure_loaded(client, self.milvus, self.collection)
        self._schema = info
        self._builder = RowBuilder(info, self.policies)
        self._by_record = None

    # --- write ---------------------------------------------------------------------------

    def write(self, doc: Document) -> list[str]:
        """Replace the document's rows with its elements, as a unit (see the module docstring)."""
        if self._builder is None or self._client is None:
            raise ConnectorError("vectordb: precheck() must succeed before write()")
        rows, sizes, notes = self._builder.build(doc)
        label = f"vectordb: record {doc.record_id} ({doc.filename})"
        new_ids = [row["element_id"] for row in rows]
        with self.milvus.rpc(f"{label}: reading stored rows (nothing was changed)", DocumentError):
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
            for chunk in _chunks(stale, LOOKUP_CHUNK):
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

    def _undo(
        self, label: str, exc: BaseException, attempted: list[str], snapshot: list[dict[str, Any]]
    ) -> str:
        """Remove the new-id rows and write the overwritten ones back; the message to raise."""
        reason = self.milvus.explain(exc)
        try:
            for chunk in _chunks(attempted, LOOKUP_CHUNK):
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
        batch: list[dict[str, Any]] = []
        chars = 0
        for row, size in pairs:
            if batch and (len(batch) >= self.batch_size or chars + size > MAX_BATCH_CHARS):
                yield batch
                batch, chars = [], 0
            batch.append(row)
            chars += size
        if batch:
            yield batch

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
        self._client.delete(self.collection, filter=_ids_filter(ids))

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
        """Every row matching `expr`: one query on Lite, pages of a query iterator on a server."""
        assert self._client is not None
        if self.milvus.lite and not expr:
            return self._client.query(self.collection, filter="", output_fields=fields)
        if expr:
            first = self._client.query(
                self.collection, filter=expr, output_fields=fields, limit=QUERY_WINDOW, **_STRONG
            )
            if len(first) < QUERY_WINDOW:
                return first
        return self._iterate(fields, expr)

    def _iterate(self, fields: list[str], expr: str) -> Iterator[dict[str, Any]]:
        assert self._client is not None
        pages = self._client.query_iterator(
            self.collection, batch_size=4096, filter=expr, output_fields=fields, **_STRONG
        )
        try:
            while page := pages.next():
                yield from page
        finally:
            pages.close()

    def _owners(self, ids: list[str]) -> dict[str, str]:
        """element id -> record id, for the ids that are stored already."""
        if self.row_index:
            self._load_index()
            return {eid: self._owner[eid] for eid in ids if eid in self._owner}
        assert self._client is not None
        found: dict[str, str] = {}
        for chunk in _chunks(ids, LOOKUP_CHUNK):
            rows = self._client.query(
                self.collection, filter=_ids_filter(chunk), output_fields=["record_id"], **_STRONG
            )
            found.update({row["element_id"]: row["record_id"] for row in rows})
        return found

    def _stored_ids(self, record_id: str) -> set[str]:
        """The element ids stored for `record_id`."""
        if self.row_index:
            return set(self._load_index().get(record_id, ()))
        rows = self._scan(["element_id"], f"record_id == {_literal(record_id)}")
        return {row["element_id"] for row in rows}

    def _fetch(self, ids: list[str]) -> list[dict[str, Any]]:
        """Whole stored rows (vectors and dynamic fields included), to write back on undo."""
        assert self._client is not None and self._schema is not None
        skip = {n for n, spec in self._schema.fields.items() if spec.function_output}
        rows: list[dict[str, Any]] = []
        for chunk in _chunks(ids, LOOKUP_CHUNK):
            got = self._client.query(  # "*" plus the vector, named (older servers omit it)
                self.collection,
                filter=_ids_filter(chunk),
                output_fields=["*", "embeddings"],
                **_STRONG,
            )
            rows += [{k: v for k, v in row.items() if k not in skip} for row in got]
        return rows

    def close(self) -> None:
        """Release the client (Milvus Lite keeps its own write-ahead log; no flush is needed)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
        self._client = None
        self._builder = None
        self._by_record = None


# --- collections, search, connection check ------------------------------------------------------

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
            index.add_index("record_id", index_type="INVERTED")
        with target.rpc(f"creating collection '{collection}'"):
            client.create_collection(collection, schema=fields)
            # Milvus Lite builds indexes at once; pymilvus's wait for them polls an RPC Lite
            # lacks (AllocTimestamp, logged as an error) and sleeps 0.5 s: skip it there.
            client.create_index(collection, index, sync=not target.lite)
            client.load_collection(collection)
            info = SchemaInfo.from_describe(client.describe_collection(collection))
        return [f"{spec.name}: {spec.describe()}" for spec in info.fields.values()]
    finally:
        client.close()


@dataclass(frozen=True)
class SearchHit:
    """One search result: COSINE similarity (higher is closer) and what identifies the element."""

    score: float
    element_id: str
    record_id: str | None
    filename: str | None
    text: str | None


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
        _ensure_loaded(client, target, collection)
        wanted = [f for f in ("record_id", "filename", "text") if f in info.fields or info.dynamic]
        with target.rpc(f"searching collection '{collection}'"):
            result = client.search(
                collection,
                data=[[float(x) for x in query_vector]],
                limit=k,
                anns_field="embeddings",
                output_fields=wanted,
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


def check_connection(config: VectorDBConfig) -> ConnectionCheck:
    """Does the instance answer, do the credentials work, and does the collection exist?"""
    from ingestflow.connectors.check import ConnectionCheck

    target = target_of(config, timeout=15.0)
    try:
        client = target.connect()
        try:
            describe(client, target, config.collection_name)
        finally:
            client.close()
    except IngestflowError as exc:
        return ConnectionCheck.failure(str(exc))
    return ConnectionCheck.success()
