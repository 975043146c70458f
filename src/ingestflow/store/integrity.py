"""The workspace database's health: damage found before anything is written, and the backups
kept before each schema upgrade (`ingestflow.db.bak-v<N>`, the database at schema version N).

A damaged database is never started over: the keys, connectors, workflows and job history in it
would be lost without a word. It is refused with one line that names the file, what is wrong
with it, and the way out (move it aside, then copy a backup back or start an empty workspace).
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

from ingestflow.errors import WorkspaceDamaged

_BACKUP = re.compile(r"\.bak-v(\d+)$")
# SQLite's own words for a damaged file (other errors, "locked" say, are not damage)
DAMAGE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def check_file(path: Path) -> None:
    """Refuse a database file that is empty (its size only: the file is not opened).

    A file that is not SQLite is refused by `not_a_database` when SQLite first reads it. The file
    is never opened here: closing any descriptor of a file drops every POSIX lock this process
    holds on it, the locks of its open SQLite connections included. Another process would then
    take its connections for gone and delete the write-ahead log under them (SQLite's "How To
    Corrupt", 2.2), which a server saw as "disk I/O error"."""
    if path.stat().st_size == 0:
        raise damaged(path, "the file is empty (0 bytes)")


def not_a_database(exc: sqlite3.Error) -> bool:
    """True when SQLite says the file lacks its header (not a SQLite database)."""
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB"


def quick_check(db: sqlite3.Connection) -> str | None:
    """What SQLite's integrity check (`PRAGMA quick_check`) finds wrong, or None when nothing."""
    try:
        rows = [" ".join(str(r[0]).split()) for r in db.execute("PRAGMA quick_check(3)")]
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc) or not_a_database(exc):  # the latter: refused by the caller
            raise
        rows = [str(exc)]
    if rows == ["ok"]:
        return None
    found = "; ".join(r.removeprefix("*** in database main *** ") for r in rows)
    return f"it fails SQLite's integrity check ({found[:200]})"


def is_damage(exc: sqlite3.Error) -> bool:
    """True when SQLite says the file is damaged or not a database."""
    return getattr(exc, "sqlite_errorname", "") in DAMAGE_CODES


def damaged(path: Path, what: str) -> WorkspaceDamaged:
    """The refusal: what is wrong with the file, and how to recover, on one line."""
    db = str(path)
    aside = [f"mv {db} {db}.damaged"]
    aside += [
        f"mv {db}{suffix} {db}.damaged{suffix}"
        for suffix in ("-wal", "-shm")
        if Path(db + suffix).exists()  # its journal goes with it, or it would be replayed
    ]
    found = backups(path)
    if found:
        version, newest = found[-1]
        back = (
            f"then copy back the backup taken before the upgrade from schema version {version} "
            f"(`cp {newest} {db}`; what changed after that upgrade is lost) or run any command "
            "to start an empty workspace"
        )
    else:
        back = (
            "then run any command to start an empty workspace (no backup of it was found; "
            f"`sqlite3 {db}.damaged .recover` may salvage some of its rows)"
        )
    return WorkspaceDamaged(
        f"workspace database {db} is damaged: {what}. ingestflow left it as it is and will not "
        f"start over on it. Move it aside (`{'; '.join(aside)}`), {back}."
    )


def backups(path: Path) -> list[tuple[int, Path]]:
    """The backups kept beside a database, oldest schema version first."""
    found = []
    for candidate in path.parent.glob(f"{path.name}.bak-v*"):
        match = _BACKUP.search(candidate.name)
        if match and candidate.is_file():
            found.append((int(match.group(1)), candidate))
    return sorted(found)


def backup(path: Path, version: int) -> Path:
    """Copy the database (as committed now) to `<db>.bak-v<version>`, owner-only, written whole
    or not at all; returns the backup's path."""
    target = path.with_name(f"{path.name}.bak-v{version}")
    partial = path.with_name(f"{target.name}.partial-{os.getpid()}")
    partial.unlink(missing_ok=True)
    os.close(os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600))
    # a connection of its own: the one migrating holds the write lock, and SQLite's backup
    # from a connection inside a transaction waits for itself
    source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    copy = sqlite3.connect(partial)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()
    try:
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target
