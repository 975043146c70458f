"""Reaching a Milvus collection: where it lives, how to connect, and failures in plain words.

`MilvusTarget` is a Milvus Lite `.db` path (anything not starting with http(s)://, tcp:// or unix:,
ending in `.db`) or a server address (`user`/`password` become the token). It opens clients, turns
pymilvus failures into ingestflow errors that say what failed where (secrets masked), and explains
a Lite database locked by another process. `describe()` reads a collection's schema, naming the
command that creates it when it is missing. pymilvus is imported only when a client is opened.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from ingestflow.connectors.vectordb import VectorDBConfig, is_lite
from ingestflow.connectors.vectordb_schema import SchemaInfo
from ingestflow.errors import ConnectorError, EnvironmentProblem, IngestflowError
from ingestflow.spec.models import MASK
from ingestflow.spec.record import mask_url_credentials

if TYPE_CHECKING:
    from pymilvus import MilvusClient


def quiet_pymilvus_logs() -> None:
    """Silence pymilvus's ERROR log of every failed RPC (a traceback each), its WARNING with a
    traceback when a lost server connection cannot be recovered, and Milvus Lite's own log;
    ingestflow reports each failure once, in its own words."""
    for name in ("pymilvus.decorators", "pymilvus.client.connection_manager", "milvus_lite"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def create_command(uri: str, collection: str, dim: int = 384, db_name: str = "") -> str:
    """The `ingestflow vectordb create-collection` command that creates SPEC.md's minimal schema."""
    parts = ["ingestflow", "vectordb", "create-collection", "--uri", mask_uri(uri)]
    parts += ["--collection", collection, "--dim", str(dim)]
    if db_name:
        parts += ["--db-name", db_name]
    return " ".join(shlex.quote(p) for p in parts)


def mask_uri(uri: str) -> str:
    """`uri` with any password in its user-info part masked."""
    return mask_url_credentials(uri)


@dataclass(frozen=True, repr=False)
class MilvusTarget:
    """Where a collection lives and how to reach it; secrets stay out of messages and reprs."""

    uri: str
    db_name: str = ""
    user: str = ""
    password: SecretStr | None = None
    timeout: float | None = 60.0
    # The folder a relative Lite path resolves against (None: the current directory); messages
    # show the path as given, so a server's own folders stay out of them.
    lite_root: Path | None = None

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
    def lite_path(self) -> Path:
        """The Lite database's path, a relative one taken from `lite_root`."""
        path = Path(self.uri.strip()).expanduser()
        return self.lite_root / path if self.lite_root and not path.is_absolute() else path

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
        """A client; ConnectorError with the reason when it cannot open. Only with `create_dirs`
        (creating a collection) is a missing Lite database made, with its folders: a check, a
        search or a run of a database that is not there says so and creates nothing."""
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # pragma: no cover - set-up problem
            raise EnvironmentProblem(f"the vectordb destination needs pymilvus: {exc}") from None
        quiet_pymilvus_logs()
        kwargs: dict[str, Any] = {"db_name": self.db_name, "timeout": self.timeout}
        if self.lite:
            path, given = self.lite_path, self.uri.strip()  # messages show the given one
            if path.suffix != ".db":
                raise ConnectorError(
                    f"vectordb: uri {self.uri!r} is neither a server address (http(s)://host:port) "
                    "nor a Milvus Lite file: a Milvus Lite path must end in .db"
                )
            if path.is_file():
                raise ConnectorError(
                    f"vectordb: {given} is a file; a Milvus Lite database is a folder (its .db "
                    "path becomes a folder on first use): choose another path"
                )
            if create_dirs:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise ConnectorError(
                        f"vectordb: cannot create folder {Path(given).parent}: "
                        f"{exc.strerror or exc}"
                    ) from None
            elif not path.parent.is_dir():
                raise ConnectorError(
                    f"vectordb: {self.shown}: folder {Path(given).parent} does not exist"
                )
            elif not path.exists():
                raise ConnectorError(
                    f"vectordb: Milvus Lite database {given} does not exist (nothing was "
                    "created); create it and its collection with `ingestflow vectordb "
                    f"create-collection --uri {shlex.quote(self.uri)} --collection NAME`, or fix "
                    "the uri"
                )
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
        if self.lite and "Open local milvus failed" in reason and _lite_locked(self.lite_path):
            return (
                f"vectordb: {self.shown} is in use by another process (Milvus Lite: 'Open local "
                "milvus failed', DataDirLockedError): Milvus Lite lets one process at a time open "
                "a .db. Stop the other process (another ingestflow run, a notebook, a script), "
                "or use a Milvus server (http(s)://host:port)"
            )
        if self.lite:
            return f"vectordb: cannot open {self.shown}: {reason}"
        if "database not found" in reason:
            hint = (
                f"database '{self.db_name}' does not exist on this server: create it (pymilvus "
                "`create_database`), or fix db_name (empty: the default database)"
            )
        else:  # a server answers a wrong user or password the same way as no server at all
            hint = (
                "check that a Milvus server listens at that address, and the user and "
                "password (or token)"
            )
        return f"vectordb: cannot open {self.shown}: {reason}; {hint}"


def _lite_locked(path: Path) -> bool:
    """True when another process holds the Lite data folder's LOCK."""
    from ingestflow import locks

    lock = path.expanduser() / "LOCK"
    return lock.is_file() and locks.held_elsewhere(lock)


def target_of(
    config: VectorDBConfig, timeout: float | None = 60.0, lite_root: Path | None = None
) -> MilvusTarget:
    """The MilvusTarget a connector config names (a relative Lite path taken from `lite_root`)."""
    return MilvusTarget(
        config.uri, config.db_name, config.user, config.password, timeout, lite_root
    )


def describe(
    client: MilvusClient, target: MilvusTarget, collection: str, dim: int = 384
) -> SchemaInfo:
    """The collection's schema; ConnectorError (with the command that creates it) when missing."""
    with target.rpc(f"looking up collection '{collection}'"):
        exists = client.has_collection(collection)
    if not exists:
        raise ConnectorError(
            f"vectordb: collection '{collection}' does not exist in {target.shown}; the "
            "collection must exist with a defined schema before anything is written to it. "
            f"Create one with the minimal schema:\n  "
            f"{create_command(target.uri, collection, dim, target.db_name)}"
        )
    with target.rpc(f"describing collection '{collection}'"):
        return SchemaInfo.from_describe(client.describe_collection(collection))


def ensure_loaded(client: MilvusClient, target: MilvusTarget, collection: str) -> None:
    """Load the collection unless it is loaded already."""
    with target.rpc(f"loading collection '{collection}'"):
        state = client.get_load_state(collection).get("state")
        if getattr(state, "name", str(state)) != "Loaded":
            client.load_collection(collection)


def index_problems(client: MilvusClient, target: MilvusTarget, collection: str) -> list[str]:
    """How the `embeddings` index differs from SPEC.md's (none, or not COSINE)."""
    with target.rpc(f"reading the indexes of '{collection}'"):
        names = client.list_indexes(collection, field_name="embeddings")
        if not names:
            return ["field 'embeddings' has no index; the schema needs it indexed, metric COSINE"]
        info = client.describe_index(collection, names[0]) or {}
    metric = str(info.get("metric_type") or "").upper()
    if metric and metric != "COSINE":
        return [f"field 'embeddings' is indexed with metric {metric}; the metric must be COSINE"]
    return []
