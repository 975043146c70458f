"""Incremental runs' deletions in the store: which documents a workflow last wrote to a
destination from a source (`file_state`), and what each job removed (`job_deletions`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Written:
    """A document a workflow wrote to a destination on an earlier run."""

    record_id: str
    filename: str | None


def written(
    db: sqlite3.Connection, workflow_key: str, source_key: str, destination_key: str
) -> list[Written]:
    """The documents the workflow last wrote from this source to this destination."""
    rows = db.execute(
        "SELECT record_id, filename FROM file_state WHERE workflow_key = ? AND source_key = ? "
        "AND destination_key = ? ORDER BY filename, record_id",
        (workflow_key, source_key, destination_key),
    ).fetchall()
    return [Written(r["record_id"], r["filename"]) for r in rows]


def adopt(
    db: sqlite3.Connection,
    workflow_key: str,
    settings_hash: str,
    keys: tuple[str, str],
    listed: Iterable[tuple[str, str]],
) -> None:
    """Say where documents recorded before deletions existed came from and went to, when this
    run listed them unchanged (same settings, so the same destination): from then on they are
    removed when they leave the source. `listed`: (record id, file name) pairs."""
    db.executemany(
        "UPDATE file_state SET filename = ?, source_key = ?, destination_key = ? WHERE "
        "workflow_key = ? AND record_id = ? AND settings_hash = ? AND source_key IS NULL",
        [(name, *keys, workflow_key, record, settings_hash) for record, name in listed],
    )


def forget(db: sqlite3.Connection, workflow_key: str, record_id: str) -> None:
    """Drop a removed document's state (a later run that lists it again writes it anew)."""
    db.execute(
        "DELETE FROM file_state WHERE workflow_key = ? AND record_id = ?", (workflow_key, record_id)
    )


def record_removal(
    db: sqlite3.Connection,
    job_id: str,
    item: Written,
    error: str | None,
    seq: int,
) -> None:
    """Record that a job removed a document's output (or failed to, with why)."""
    db.execute(
        "INSERT OR REPLACE INTO job_deletions VALUES (?,?,?,?,?,?)",
        (job_id, item.record_id, item.filename, "FAILED" if error else "DELETED", error, seq),
    )


def removals(db: sqlite3.Connection, job_id: str) -> dict[str, Any]:
    """A job record's `deleted` count, `deleted_files` (each `record_id`, `filename`, `status`
    DELETED or FAILED, `error`), and the removals that failed as `failed_files` entries."""
    rows = db.execute(
        "SELECT record_id, filename, status, error FROM job_deletions WHERE job_id = ? "
        "ORDER BY seq",
        (job_id,),
    ).fetchall()
    files = [dict(r) for r in rows]
    failed = [
        {"document": f["filename"] or f["record_id"], "error": f["error"]}
        for f in files
        if f["status"] == "FAILED"
    ]
    deleted = sum(f["status"] == "DELETED" for f in files)
    return {"deleted": deleted, "deleted_files": files, "failed_files": failed}
