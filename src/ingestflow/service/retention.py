"""Retention: removing finished jobs, their stored files and their records.

What a job keeps inside the workspace (see `store/jobs.py`): `jobs/<job>/` (traced node outputs,
the output of a run through the API, the job process's log), `uploads/<job>/` (files uploaded to
it), and, for a run through the Python API with no output folder given, `outputs/<folder>/`. A
prune removes those and the job's records. It never touches a job that is scheduled or running,
an output folder outside the workspace (a user's `--output`), one that a kept job also wrote to,
nor the node-output cache (`cache/nodes/`, keyed by content and settings, not by job: a later
traced run still starts from it). The remembered fingerprints of `reprocess_all: false` stay too:
they describe what the destination holds, not the job.

`prune_jobs` is the one rule; `ingestflow jobs prune` and a server's `--keep-jobs-days` call it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ingestflow.errors import WorkflowInvalid, one_line
from ingestflow.service.sweep import sweep
from ingestflow.spec.problems import Problem
from ingestflow.store import Workspace

FINISHED = ("COMPLETED", "STOPPED", "FAILED")
log = logging.getLogger("ingestflow.server")


def validate(older_than_days: float | None, keep: int | None) -> None:
    """WorkflowInvalid unless the rule names which jobs to prune, with sane numbers."""
    problems = []
    if older_than_days is None and keep is None:
        problems.append(
            Problem(
                "older_than_days",
                "say which finished jobs to prune: those older than some days, those beyond "
                "the newest N, or both",
                hint="`--older-than DAYS` and/or `--keep N`",
            )
        )
    if older_than_days is not None and not (
        math.isfinite(older_than_days) and older_than_days >= 0
    ):
        problems.append(
            Problem("older_than_days", "a number of days, 0 or more", found=older_than_days)
        )
    if keep is not None and keep < 0:
        problems.append(Problem("keep", "a number of jobs, 0 or more", found=keep))
    if problems:
        raise WorkflowInvalid(problems, what="prune request")


def prune_jobs(
    ws: Workspace,
    older_than_days: float | None = None,
    keep: int | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Remove the finished jobs that ended more than `older_than_days` ago and are not among the
    newest `keep` finished ones (either rule alone, or both); with `dry_run`, only say which.

    Returns {"dry_run", "jobs": [{"id", "workflow_name", "status", "finished_at", "bytes"}],
    "bytes": freed in all, "kept": finished jobs left, "left": paths that could not be removed}.
    """
    validate(older_than_days, keep)
    sweep(ws)  # a job whose process died has finished (a queued one may still run)
    rows = ws.db.execute(
        "SELECT id, workflow_name, status, created_at, finished_at, info FROM jobs "
        "WHERE status IN (?, ?, ?) ORDER BY created_at DESC, rowid DESC",
        FINISHED,
    ).fetchall()
    cutoff = None
    if older_than_days is not None:
        cutoff = datetime.now(UTC) - timedelta(days=older_than_days)
    doomed = [
        row
        for index, row in enumerate(rows)
        if (keep is None or index >= keep) and (cutoff is None or _ended(row) < cutoff)
    ]
    gone = {row["id"] for row in doomed}
    # an output folder inside the workspace that a kept job also wrote to stays
    shared = {_output_dir(ws, row) for row in rows if row["id"] not in gone} - {None}
    jobs: list[dict[str, Any]] = []
    left: list[str] = []
    for row in doomed:
        folders = [f for f in _folders(ws, row) if f not in shared]
        size = sum(_size(f) for f in folders)
        if not dry_run:
            if not _delete_records(ws, row["id"]):
                continue  # another prune took it meanwhile
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)
                if folder.exists():
                    left.append(str(folder))
        jobs.append(
            {
                "id": row["id"],
                "workflow_name": row["workflow_name"],
                "status": row["status"],
                "finished_at": row["finished_at"] or row["created_at"],
                "bytes": size,
            }
        )
    return {
        "dry_run": dry_run,
        "jobs": jobs,
        "bytes": sum(j["bytes"] for j in jobs),
        "kept": len(rows) - len(jobs),
        "left": left,
    }


def _ended(row: Any) -> datetime:
    """When a job ended (jobs from before `finished_at` was kept: when it was made)."""
    stamp = datetime.fromisoformat(row["finished_at"] or row["created_at"])
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _folders(ws: Workspace, row: Any) -> list[Path]:
    """The job's folders inside the workspace that exist."""
    job_id = str(row["id"])
    if Path(job_id).name != job_id or job_id in ("", ".", ".."):
        return []  # not a plain name: nothing of it can be a folder of its own
    found = [ws.root / "jobs" / job_id, ws.root / "uploads" / job_id, _output_dir(ws, row)]
    return [f for f in found if f is not None and f.is_dir() and not f.is_symlink()]


def _output_dir(ws: Workspace, row: Any) -> Path | None:
    """The job's own output folder under `<workspace>/outputs/`, if it has one."""
    try:
        output = json.loads(row["info"] or "{}").get("output_dir")
    except ValueError:
        return None
    if not output:
        return None
    outputs = (ws.root / "outputs").resolve()
    path = Path(output).resolve()
    return ws.root / "outputs" / path.name if path.parent == outputs else None


def _size(folder: Path) -> int:
    """Bytes of the files under `folder` (links not followed)."""
    total = 0
    for base, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):  # removed meanwhile: nothing to free
                total += os.lstat(os.path.join(base, name)).st_size
    return total


def _delete_records(ws: Workspace, job_id: str) -> bool:
    """Delete a finished job's rows; False when it is no longer there (or no longer finished)."""
    with ws.transaction():
        deleted = ws.db.execute(
            "DELETE FROM jobs WHERE id = ? AND status IN (?, ?, ?)", (job_id, *FINISHED)
        ).rowcount
        if deleted:
            ws.db.execute("DELETE FROM job_files WHERE job_id = ?", (job_id,))
            ws.db.execute("DELETE FROM job_deletions WHERE job_id = ?", (job_id,))
    return bool(deleted)


class Retention:
    """A server's retention: prunes finished jobs older than `days` at start and then every
    `every_s` seconds, in a thread of its own, until stopped."""

    def __init__(self, workspace: Path, days: float, every_s: float = 3600.0) -> None:
        validate(days, None)
        self.workspace = Path(workspace)
        self.days = days
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ingestflow-retention", daemon=True)

    def start(self) -> None:
        """Start pruning."""
        self._thread.start()

    def stop(self) -> None:
        """Stop pruning (a prune under way finishes first)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.prune_once()
            self._stop.wait(self.every_s)

    def prune_once(self) -> None:
        """One prune; a failure is logged and the next round tries again."""
        try:
            ws = Workspace(self.workspace, create=True, check=False)  # checked when served
            try:
                answer = prune_jobs(ws, older_than_days=self.days)
            finally:
                ws.close()
        except Exception as exc:  # keep serving: one bad round must not stop the server
            log.error("retention: %s", one_line(exc))
            return
        if answer["jobs"]:
            log.info(
                "retention: removed %d finished jobs older than %g days (%d bytes freed)",
                len(answer["jobs"]),
                self.days,
                answer["bytes"],
            )
        for path in answer["left"]:
            log.warning("retention: could not remove all of %s", path)
