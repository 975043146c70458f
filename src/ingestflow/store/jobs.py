"""The workspace: a SQLite file of jobs, per-file results, stored resources, and per-node outputs.

Layout of a workspace (`./.ingestflow` by default):
  ingestflow.db          jobs, job_files, file_state (reprocess_all: false), job_deletions,
                         connectors, workflows, api_keys, connection_checks, schedule_firings
                         (see db.py for the migrations, claims.py for the writes several
                         processes share, sync.py for incremental runs' deletions, job_rows.py
                         for what a job's row holds, owners.py for whose process runs it)
  jobs/<job id>/nodes/<node id>/<file id>.json   each node's output per file (traced runs)
  jobs/<job id>/output/  the output of a job run through the API (local destination)
  uploads/<job id>/      files uploaded to a job through the API
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ingestflow.errors import NotFound
from ingestflow.store.db import by_prefix, connect_db, now
from ingestflow.store.job_rows import (
    ACTIVE_STATUSES,
    INTERRUPTED,
    FileResult,
    NodeStats,
    iso_duration,
    node_entry,
)
from ingestflow.store.owners import owner_alive, process_owner
from ingestflow.store.resources import CheckRows, ConnectorRows, KeyRows, WorkflowRows
from ingestflow.store.sync import removals


@contextmanager
def open_workspace(root: Path, create: bool = False) -> Iterator[Workspace]:
    """A Workspace for a few queries, closed afterwards; NotFound when it does not exist."""
    ws = Workspace(root, create)
    try:
        yield ws
    finally:
        ws.close()


class Workspace:
    """The job store: one SQLite file plus a folder of per-node outputs."""

    def __init__(self, root: Path, create: bool = True, check: bool = True) -> None:
        self.root = Path(root)
        self.db = connect_db(self.root, create, check)
        self.connectors = ConnectorRows(self.db)
        self.workflows = WorkflowRows(self.db)
        self.keys = KeyRows(self.db)
        self.checks = CheckRows(self.db)

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction, its lock taken at once (`BEGIN IMMEDIATE`): what is read inside
        stays true until the writes inside commit (check-then-write across processes)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # --- jobs -----------------------------------------------------------------------------
    def create_job(
        self,
        workflow_id: str,
        workflow_name: str,
        job_type: str,
        nodes: list[NodeStats],
        info: dict[str, Any],
        owner: str | None = None,
        job_id: str | None = None,
    ) -> str:
        """Record a new SCHEDULED job owned by `owner` (default: this process); returns its id."""
        job_id = job_id or str(uuid.uuid4())
        self.db.execute(
            "INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                job_id,
                workflow_id,
                workflow_name,
                job_type,
                "SCHEDULED",
                "SCHEDULED",
                now(),
                None,
                None,
                json.dumps([n.as_dict() for n in nodes]),
                json.dumps(info),
                owner or process_owner(),
                None,
            ),
        )
        return job_id

    def begin_job(self, job_id: str) -> bool:
        """Mark a job IN_PROGRESS unless a cancel has already ended it (STOPPED, or any other
        final status); False when it had."""
        return (
            self.db.execute(
                "UPDATE jobs SET status = 'IN_PROGRESS', processing_status = 'IN_PROGRESS' "
                "WHERE id = ? AND status IN ('SCHEDULED', 'IN_PROGRESS')",
                (job_id,),
            ).rowcount
            == 1
        )

    def set_owner(self, job_id: str, owner: str) -> None:
        """Hand a job to the process that will run it."""
        self.db.execute("UPDATE jobs SET owner = ? WHERE id = ?", (owner, job_id))

    def job_info(self, job_id: str) -> dict[str, Any]:
        """The job's stored run details (output folder, trace, the workflow it ran)."""
        return json.loads(self.job_row(job_id)["info"] or "{}")

    def sweep_interrupted(
        self, unstartable: Callable[[dict[str, Any]], str | None] | None = None
    ) -> list[str]:
        """Mark FAILED every unfinished job whose owning process is gone; returns their ids.

        `unstartable(info)` judges such a job that never started (SCHEDULED) by its stored run
        details: None leaves it SCHEDULED for a launcher to run, a reason fails it with that
        reason. Without it, such a job is failed as interrupted too."""
        rows = self.db.execute(
            "SELECT id, owner, status, info FROM jobs WHERE status IN (?, ?)", ACTIVE_STATUSES
        ).fetchall()
        failed: list[str] = []
        for row in rows:
            if owner_alive(row["owner"]):
                continue
            reason: str | None = INTERRUPTED
            if unstartable is not None and row["status"] == "SCHEDULED":
                reason = unstartable(json.loads(row["info"] or "{}"))
            if reason is None:
                continue
            self.db.execute(
                "UPDATE jobs SET status = 'FAILED', processing_status = 'FAILED', message = ?, "
                "finished_at = ? WHERE id = ? AND status = ?",
                (reason, now(), row["id"], row["status"]),
            )
            failed.append(row["id"])
        return failed

    def active_jobs(self, workflow_id: str) -> list[str]:
        """Ids of the workflow's jobs that are scheduled or running."""
        rows = self.db.execute(
            "SELECT id FROM jobs WHERE workflow_id = ? AND status IN (?, ?)",
            (workflow_id, *ACTIVE_STATUSES),
        ).fetchall()
        return [r["id"] for r in rows]

    def update_job(
        self,
        job_id: str,
        *,
        status: str | None = None,
        processing_status: str | None = None,
        runtime_s: float | None = None,
        message: str | None = None,
        nodes: list[NodeStats] | None = None,
    ) -> None:
        """Update a job's status, runtime, message or node counts (a final status stamps when
        the job ended)."""
        sets: dict[str, Any] = {
            "status": status,
            "processing_status": processing_status,
            "runtime_s": runtime_s,
            "message": message,
            "finished_at": now() if status in ("COMPLETED", "STOPPED", "FAILED") else None,
        }
        if nodes is not None:
            sets["node_stats"] = json.dumps([n.as_dict() for n in nodes])
        cols = {k: v for k, v in sets.items() if v is not None}
        if cols:
            assign = ", ".join(f"{k} = ?" for k in cols)
            self.db.execute(f"UPDATE jobs SET {assign} WHERE id = ?", (*cols.values(), job_id))

    def set_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        """The job's live document counts (found, written, failed, left ...), kept in its
        run details: no schema change."""
        self.db.execute(
            "UPDATE jobs SET info = json_set(coalesce(info, '{}'), '$.progress', json(?)) "
            "WHERE id = ?",
            (json.dumps(progress), job_id),
        )

    def record_file(self, job_id: str, result: FileResult, seq: int) -> None:
        """Store (or replace) the outcome of one document."""
        self.db.execute(
            "INSERT OR REPLACE INTO job_files VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                job_id,
                result.file_id,
                result.filename,
                result.status,
                result.error,
                result.elements,
                result.output,
                json.dumps(result.warnings),
                seq,
                result.version,
            ),
        )

    def job_row(self, job_id: str) -> sqlite3.Row:
        """The job's row; NotFound when there is none (a unique id prefix is accepted)."""
        rows = by_prefix(self.db, "jobs", job_id)
        if len(rows) != 1:
            hint = (
                "ambiguous id prefix"
                if rows
                else "it never existed here or was pruned and no longer exists; "
                "`ingestflow jobs list` shows the jobs"
            )
            raise NotFound(f"job {job_id!r} not found in this workspace ({hint})")
        return rows[0]

    def files(self, job_id: str) -> list[FileResult]:
        """Per-document outcomes of a job, in input order."""
        rows = self.db.execute(
            "SELECT * FROM job_files WHERE job_id = ? ORDER BY seq", (job_id,)
        ).fetchall()
        return [
            FileResult(
                r["file_id"],
                r["filename"],
                r["status"],
                r["error"],
                r["elements"],
                r["output"],
                json.loads(r["warnings"] or "[]"),
                r["version"],
            )
            for r in rows
        ]

    def list_jobs(
        self,
        limit: int = 50,
        workflow_id: str | None = None,
        status: str | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Job records, newest first (the later stored first among equal times), optionally of
        one workflow or in one status, from the `offset`-th on."""
        rows = self.db.execute(
            "SELECT id FROM jobs WHERE (? IS NULL OR workflow_id = ?) AND (? IS NULL OR status = ?)"
            " ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (workflow_id, workflow_id, status, status, limit, offset),
        ).fetchall()
        return [self.job_record(r["id"]) for r in rows]

    def count_jobs(self, workflow_id: str | None = None, status: str | None = None) -> int:
        """How many jobs `list_jobs` would list with no limit."""
        return self.db.execute(
            "SELECT count(*) FROM jobs WHERE (? IS NULL OR workflow_id = ?) AND "
            "(? IS NULL OR status = ?)",
            (workflow_id, workflow_id, status, status),
        ).fetchone()[0]

    def job_record(self, job_id: str) -> dict[str, Any]:
        """JobInformation plus JobDetails and failed files (reference/service-api.md)."""
        row = self.job_row(job_id)
        info = json.loads(row["info"] or "{}")
        files = self.files(row["id"])
        nodes = json.loads(row["node_stats"] or "[]")
        outputs = [
            {
                "file_id": f.file_id,
                "node_id": n["node_id"],
                "node_type": n["node_type"],
                "node_subtype": n["node_subtype"],
            }
            for f in files
            if f.status == "SUCCESS"
            for n in nodes
            if self.node_output_path(row["id"], n["node_id"], f.file_id).exists()
        ]
        record: dict[str, Any] = {
            "id": row["id"],
            "workflow_id": row["workflow_id"],
            "workflow_name": row["workflow_name"],
            "status": row["status"],
            "created_at": row["created_at"],
            "job_type": row["job_type"],
            "input_file_ids": [f.file_id for f in files],
            "output_node_files": outputs,
            "processing_status": row["processing_status"],
            "finished_at": row["finished_at"],
            "node_stats": [node_entry(n) for n in nodes],
            "failed_files": [
                {"document": f.filename, "error": f.error} for f in files if f.status == "FAILED"
            ],
            "files": [f.__dict__ for f in files],
            "message": row["message"],
            "output_dir": info.get("output_dir"),
            "trace": info.get("trace", False),
            "workflow": info.get("workflow"),
            "progress": info.get("progress"),
        }
        if row["runtime_s"] is not None:
            record["runtime"] = iso_duration(row["runtime_s"])
        removed = removals(self.db, row["id"])
        record["deleted"], record["deleted_files"] = removed["deleted"], removed["deleted_files"]
        record["failed_files"] += removed["failed_files"]  # a removal that failed fails too
        return record

    # --- per-node outputs -----------------------------------------------------------------
    def node_output_path(self, job_id: str, node_id: str, file_id: str) -> Path:
        """Where a node's output for one file is kept (never outside the workspace)."""
        path = self.root / "jobs" / job_id / "nodes" / node_id / f"{file_id}.json"
        if not path.resolve().is_relative_to(self.root.resolve()):
            raise ValueError(f"node id {node_id!r} would leave the workspace")
        return path

    def save_node_output(
        self,
        job_id: str,
        node_id: str,
        file_id: str,
        elements: list[dict[str, Any]],
        notes: dict[str, Any] | None = None,
    ) -> None:
        """Keep a node's output for one file (for `jobs download --node`), and the document's
        warnings and stats at that point beside it when there are any (to start from later)."""
        from ingestflow.files import write_json_atomic

        path = self.node_output_path(job_id, node_id, file_id)
        write_json_atomic(path, elements, private=True)
        if notes and (notes.get("warnings") or notes.get("stats")):
            write_json_atomic(path.with_name(f"{file_id}.notes.json"), notes, private=True)

    # --- reprocess_all: false ---------------------------------------------------------------
    def unchanged(
        self, workflow_key: str, record_id: str, content_hash: str, settings_hash: str
    ) -> bool:
        """True when the document's last successful run had this content and these settings."""
        row = self.db.execute(
            "SELECT content_hash, settings_hash FROM file_state WHERE workflow_key = ? AND "
            "record_id = ?",
            (workflow_key, record_id),
        ).fetchone()
        return row is not None and tuple(row) == (content_hash, settings_hash)

    def mark_processed(
        self,
        workflow_key: str,
        record_id: str,
        content_hash: str,
        settings_hash: str,
        job_id: str,
        where: tuple[str | None, str | None, str | None] = (None, None, None),
        stamp: str | None = None,
    ) -> None:
        """Remember a document's successful run; `where`: its file name, and the source and
        destination it came from and went to (what `runner.deletions` needs to remove it);
        `stamp`: the fingerprint of the output it left there (`Destination.stamp`)."""
        self.db.execute(
            "INSERT OR REPLACE INTO file_state (workflow_key, record_id, content_hash, "
            "settings_hash, job_id, updated_at, filename, source_key, destination_key, "
            "output_stamp) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (workflow_key, record_id, content_hash, settings_hash, job_id, now(), *where, stamp),
        )

    def output_stamp(self, workflow_key: str, record_id: str) -> str | None:
        """The fingerprint of the output the document's last successful run left at the
        destination; None when none was recorded (a destination that cannot tell, or a run of
        a version before stamps)."""
        row = self.db.execute(
            "SELECT output_stamp FROM file_state WHERE workflow_key = ? AND record_id = ?",
            (workflow_key, record_id),
        ).fetchone()
        return None if row is None else row[0]
