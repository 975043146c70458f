"""Claims: the writes that let several processes (servers, job processes, the CLI) share one
workspace without doing one thing twice. Each is a single statement, or one write transaction,
whose effect says whether this process won: SQLite lets one writer in at a time.

- A job is started by one job process: the launcher moves it from SCHEDULED to IN_PROGRESS and
  records the process it started as its owner, in one transaction; a job process runs a job
  only when it is that owner (or takes a SCHEDULED job itself). A launcher starts only the jobs
  queued for one (`QUEUED`): a foreground run's job (the CLI's, the Python API's) is SCHEDULED
  while its own process prechecks, and is that process's alone.
- A schedule's firing (workflow, cron time) is submitted by one server: the first to insert it.
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ingestflow.store.owners import process_owner, same_owner

# a firing claimed but never settled (its server died between the two) stops blocking the
# workflow's next firings after this long
PENDING_FOR = timedelta(minutes=2)
# firings are kept this long, for `schedule_firings` to show
KEEP_FIRINGS = timedelta(days=7)

#: SQL: a job queued for a launcher: a background run (it carries the workflow body it runs) or
#: a job handed back to the launchers to resume. Any other job is run by the process that
#: created it, never by a launcher.
QUEUED = (
    "(json_extract(info, '$.run.body') IS NOT NULL OR json_extract(info, '$.resumed') IS NOT NULL)"
)


def launch_job(
    db: sqlite3.Connection, job_id: str, start: Callable[[], subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes] | None:
    """Start a SCHEDULED job's process with `start`, unless another launcher took the job first,
    a job of its workflow is in progress, or the job is not queued for a launcher (`QUEUED`):
    the job becomes IN_PROGRESS, owned by the process, in one transaction with the start. None
    when this launcher did not win."""
    process: subprocess.Popen[bytes] | None = None
    db.execute("BEGIN IMMEDIATE")
    try:
        won = db.execute(
            "UPDATE jobs SET status = 'IN_PROGRESS', processing_status = 'IN_PROGRESS' "
            f"WHERE id = ? AND status = 'SCHEDULED' AND {QUEUED} AND NOT EXISTS (SELECT 1 FROM "
            "jobs AS other WHERE other.workflow_id = jobs.workflow_id AND "
            "other.status = 'IN_PROGRESS')",
            (job_id,),
        ).rowcount
        if won != 1:
            db.execute("ROLLBACK")
            return None
        process = start()  # the write lock is held: no other launcher sees the job meanwhile
        owner = process_owner(process.pid)
        db.execute("UPDATE jobs SET owner = ? WHERE id = ?", (owner, job_id))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        if process is not None:  # the job is SCHEDULED again: its process must not run it
            process.kill()
            process.wait(timeout=30)
        raise
    return process


def take_job(db: sqlite3.Connection, job_id: str, owner: str) -> bool:
    """True when the process `owner` may run the job: a launcher started it for this process,
    or it was still SCHEDULED and this process took it (it is IN_PROGRESS now)."""
    row = db.execute("SELECT status, owner FROM jobs WHERE id = ?", (job_id,)).fetchone()
    # the launcher read this process's start time itself: the same process, give or take the
    # boot-time shift `same_owner` allows; the update still checks the stored value is unchanged
    launched = (
        row is not None and row["status"] == "IN_PROGRESS" and same_owner(row["owner"], owner)
    )
    return (
        db.execute(
            "UPDATE jobs SET status = 'IN_PROGRESS', processing_status = 'IN_PROGRESS', "
            "owner = ? WHERE id = ? AND (status = 'SCHEDULED' OR "
            "(status = 'IN_PROGRESS' AND owner = ?))",
            (owner, job_id, row["owner"] if launched else None),
        ).rowcount
        == 1
    )


def claim_firing(db: sqlite3.Connection, workflow_id: str, fire_time: str, server: str) -> bool:
    """True when this server is the one to submit the workflow's firing at `fire_time`: nobody
    claimed that firing before, the workflow has no job scheduled or running, and no other
    firing of it is being submitted."""
    moment = datetime.now(UTC)
    db.execute(
        "DELETE FROM schedule_firings WHERE fired_at < ?", ((moment - KEEP_FIRINGS).isoformat(),)
    )
    return (
        db.execute(
            "INSERT INTO schedule_firings (workflow_id, fire_time, fired_at, server) "
            "SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE workflow_id = ?1 "
            "AND status IN ('SCHEDULED', 'IN_PROGRESS')) AND NOT EXISTS (SELECT 1 FROM "
            "schedule_firings WHERE workflow_id = ?1 AND job_id IS NULL AND note IS NULL AND "
            "fired_at > ?5) ON CONFLICT (workflow_id, fire_time) DO NOTHING",
            (
                workflow_id,
                fire_time,
                moment.isoformat(),
                server,
                (moment - PENDING_FOR).isoformat(),
            ),
        ).rowcount
        == 1
    )


def settle_firing(
    db: sqlite3.Connection,
    workflow_id: str,
    fire_time: str,
    job_id: str | None = None,
    note: str | None = None,
) -> None:
    """Record what a claimed firing came to: its job, or why there is none."""
    db.execute(
        "UPDATE schedule_firings SET job_id = ?, note = ? WHERE workflow_id = ? AND fire_time = ?",
        (job_id, note or (None if job_id else "no job"), workflow_id, fire_time),
    )


def firing(db: sqlite3.Connection, workflow_id: str, fire_time: str) -> dict[str, Any] | None:
    """One firing, if it was claimed."""
    row = db.execute(
        "SELECT * FROM schedule_firings WHERE workflow_id = ? AND fire_time = ?",
        (workflow_id, fire_time),
    ).fetchone()
    return None if row is None else dict(row)


def firings(db: sqlite3.Connection, workflow_id: str) -> list[dict[str, Any]]:
    """The workflow's claimed firings, oldest first."""
    rows = db.execute(
        "SELECT * FROM schedule_firings WHERE workflow_id = ? ORDER BY fire_time", (workflow_id,)
    ).fetchall()
    return [dict(r) for r in rows]
