"""The workspace's SQLite file: opening it (owner-only, WAL, busy timeout) and its migrations.

Each migration runs once, in order, inside a transaction; `PRAGMA user_version` records how many
have run. A workspace made before migrations existed (version 0, tables already there) is brought
up to date by the same steps, which is why the first one uses `IF NOT EXISTS`. Before upgrading a
database that holds anything, a backup of it is kept (`integrity.backup`). A new database is
made whole under another name and then put in place, so an empty file at the workspace's path is
always damage, never a workspace another process is making.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from ingestflow.errors import NotFound
from ingestflow.files import make_private
from ingestflow.store import integrity

DB_NAME = "ingestflow.db"

MIGRATIONS: tuple[str, ...] = (
    # 1: jobs, their files, document fingerprints (reprocess_all: false), connectors
    """
    CREATE TABLE IF NOT EXISTS jobs (
        id TEXT PRIMARY KEY, workflow_id TEXT, workflow_name TEXT, job_type TEXT,
        status TEXT, processing_status TEXT, created_at TEXT, runtime_s REAL,
        message TEXT, node_stats TEXT, info TEXT
    );
    CREATE TABLE IF NOT EXISTS job_files (
        job_id TEXT, file_id TEXT, filename TEXT, status TEXT, error TEXT, elements INTEGER,
        output TEXT, warnings TEXT, seq INTEGER, PRIMARY KEY (job_id, file_id)
    );
    CREATE TABLE IF NOT EXISTS file_state (
        workflow_key TEXT, record_id TEXT, content_hash TEXT, settings_hash TEXT, job_id TEXT,
        updated_at TEXT, PRIMARY KEY (workflow_key, record_id)
    );
    CREATE TABLE IF NOT EXISTS connectors (
        id TEXT PRIMARY KEY, name TEXT UNIQUE, type TEXT, role TEXT, config TEXT,
        created_at TEXT, updated_at TEXT
    );
    """,
    # 2: stored workflows, API keys, connection checks, and the process that owns a job (to
    # tell a live job from a dead one)
    """
    CREATE TABLE workflows (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
        body TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT
    );
    CREATE UNIQUE INDEX workflows_name ON workflows (name) WHERE kind = 'persistent';
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY, name TEXT, digest TEXT NOT NULL UNIQUE, hint TEXT,
        created_at TEXT NOT NULL, revoked_at TEXT
    );
    CREATE TABLE connection_checks (
        id TEXT PRIMARY KEY, connector_id TEXT NOT NULL, status TEXT NOT NULL, reason TEXT,
        created_at TEXT NOT NULL, reported_at TEXT
    );
    ALTER TABLE jobs ADD COLUMN owner TEXT;
    CREATE INDEX jobs_workflow ON jobs (workflow_id, status);
    """,
    # 3: the content hash each job saw per file (an earlier job's outputs are reused only for
    # the same content)
    """
    ALTER TABLE job_files ADD COLUMN version TEXT;
    """,
    # 4: when a job ended (its untraced output counts as its own until a later write)
    """
    ALTER TABLE jobs ADD COLUMN finished_at TEXT;
    """,
    # 5: each firing of a schedule, claimed once by whichever server got there first (several
    # servers may serve one workspace): its job, or why it submitted none
    """
    CREATE TABLE schedule_firings (
        workflow_id TEXT NOT NULL, fire_time TEXT NOT NULL, fired_at TEXT NOT NULL,
        server TEXT, job_id TEXT, note TEXT, PRIMARY KEY (workflow_id, fire_time)
    );
    """,
    # 6: what an incremental run needs to remove a document that left its source (its name, and
    # the source and destination it was last written from and to), and what each job removed
    """
    ALTER TABLE file_state ADD COLUMN filename TEXT;
    ALTER TABLE file_state ADD COLUMN source_key TEXT;
    ALTER TABLE file_state ADD COLUMN destination_key TEXT;
    CREATE TABLE job_deletions (
        job_id TEXT NOT NULL, record_id TEXT NOT NULL, filename TEXT, status TEXT NOT NULL,
        error TEXT, seq INTEGER, PRIMARY KEY (job_id, record_id)
    );
    """,
    # 7: a fingerprint of the output each document's last successful run left at the
    # destination (an incremental run skips a document only while its output is still that)
    """
    ALTER TABLE file_state ADD COLUMN output_stamp TEXT;
    """,
)


def now() -> str:
    """The current time, ISO 8601 with time zone."""
    return datetime.now(UTC).isoformat()


def connect_db(root: Path, create: bool = True, check: bool = True) -> sqlite3.Connection:
    """The workspace database, migrated, readable by its owner only (it holds connector secrets).

    With `create` false a missing workspace is NotFound instead of being made. A damaged one
    (empty, not SQLite, or, with `check`, failing SQLite's integrity check) is WorkspaceDamaged,
    found before anything is written to it."""
    root = Path(root)
    path = root / DB_NAME
    if not path.exists():
        if not create:
            raise NotFound(f"no workspace at {root} (nothing has been stored or run there yet)")
        root.mkdir(parents=True, exist_ok=True)
        _create(path)
    make_private(root)  # uploads, node outputs, Milvus Lite files: its owner's only
    integrity.check_file(path)
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    try:
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA busy_timeout=30000")
        problem = integrity.quick_check(db) if check else None
        if problem is None:
            _wal(db)
            migrate(db)
    except sqlite3.DatabaseError as exc:
        db.close()
        if integrity.not_a_database(exc):
            what = f"the file is not a SQLite database (SQLite says: {exc})"
            raise integrity.damaged(path, what) from None
        if integrity.is_damage(exc):
            raise integrity.damaged(path, f"SQLite says: {exc}") from None
        raise
    except BaseException:
        db.close()
        raise
    if problem is not None:
        db.close()  # first: the refusal names the journal files only when they outlive it
        raise integrity.damaged(path, problem)
    return db


def _create(path: Path) -> None:
    """Make a new, migrated database at `path` unless another process makes one first."""
    fresh = path.with_name(f"{path.name}.new-{uuid.uuid4().hex[:12]}")
    os.close(os.open(fresh, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    try:
        db = sqlite3.connect(fresh, isolation_level=None)
        try:
            migrate(db)
        finally:
            db.close()
        with contextlib.suppress(FileExistsError):  # another process made it first: theirs
            os.link(fresh, path)  # never replaces an existing file, unlike a rename
    finally:
        fresh.unlink(missing_ok=True)


def _wal(db: sqlite3.Connection, seconds: float = 30.0) -> None:
    """Switch to write-ahead logging. The switch needs the database alone, and SQLite answers
    "database is locked" at once, without waiting, when another process opens the same new
    workspace at that moment (two runs started together): retried until `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def migrate(db: sqlite3.Connection) -> int:
    """Run the migrations this database has not had yet, after keeping a backup of it; returns
    its schema version."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version >= len(MIGRATIONS):
        return version
    db.execute("BEGIN IMMEDIATE")
    try:
        # another process may have migrated while this one waited for the lock
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version < len(MIGRATIONS) and _holds_anything(db):
            integrity.backup(Path(_file_of(db)), version)
        for number in range(version, len(MIGRATIONS)):
            for statement in _statements(MIGRATIONS[number]):
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {number + 1}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return len(MIGRATIONS)


def _holds_anything(db: sqlite3.Connection) -> bool:
    """True unless the database is new (no table yet: nothing to back up)."""
    return db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None


def _file_of(db: sqlite3.Connection) -> str:
    return next(r[2] for r in db.execute("PRAGMA database_list") if r[1] == "main")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def by_prefix(db: sqlite3.Connection, table: str, ref: str, name_column: str | None = None) -> list:
    """Rows whose id is `ref` or starts with it (or whose name is `ref`); no LIKE wildcards."""
    if not ref:
        return []
    name_clause = f" OR {name_column} = ?" if name_column else ""
    args = (ref, len(ref), ref, *((ref,) if name_column else ()))
    return db.execute(
        f"SELECT * FROM {table} WHERE id = ? OR substr(id, 1, ?) = ?{name_clause}", args
    ).fetchall()
