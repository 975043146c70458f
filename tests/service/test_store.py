"""The workspace store: migrations bring older workspaces up to date; dead jobs are found."""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ingestflow.store import Workspace
from ingestflow.store.db import MIGRATIONS
from ingestflow.store.job_rows import INTERRUPTED, NodeStats
from ingestflow.store.owners import process_owner

# the schema of workspaces made before migrations existed (ingestflow 0.1, session 3)
OLD_SCHEMA = """
CREATE TABLE jobs (
    id TEXT PRIMARY KEY, workflow_id TEXT, workflow_name TEXT, job_type TEXT,
    status TEXT, processing_status TEXT, created_at TEXT, runtime_s REAL,
    message TEXT, node_stats TEXT, info TEXT
);
CREATE TABLE job_files (
    job_id TEXT, file_id TEXT, filename TEXT, status TEXT, error TEXT, elements INTEGER,
    output TEXT, warnings TEXT, seq INTEGER, PRIMARY KEY (job_id, file_id)
);
CREATE TABLE file_state (
    workflow_key TEXT, record_id TEXT, content_hash TEXT, settings_hash TEXT, job_id TEXT,
    updated_at TEXT, PRIMARY KEY (workflow_key, record_id)
);
CREATE TABLE connectors (
    id TEXT PRIMARY KEY, name TEXT UNIQUE, type TEXT, role TEXT, config TEXT,
    created_at TEXT, updated_at TEXT
);
INSERT INTO jobs VALUES ('j1', 'w', 'old', 'ephemeral', 'COMPLETED', 'SUCCESS',
    '2026-11-01T00:00:00+00:00', 1.5, NULL, '[]', '{}');
"""


def test_an_old_workspace_is_migrated_and_keeps_its_jobs(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    db = sqlite3.connect(tmp_path / "ingestflow.db")
    db.executescript(OLD_SCHEMA)
    db.close()
    ws = Workspace(tmp_path)
    try:
        assert ws.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert ws.job_record("j1")["workflow_name"] == "old"
        columns = {r[1] for r in ws.db.execute("PRAGMA table_info(jobs)")}
        assert "owner" in columns
        ws.workflows.insert(name="w", kind="persistent", status="active", body={})
    finally:
        ws.close()
    again = Workspace(tmp_path)  # opening again runs nothing twice
    try:
        assert len(again.workflows.select()) == 1
    finally:
        again.close()


def test_jobs_of_a_dead_process_are_marked_failed_interrupted(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    try:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            dead_owner = process_owner(child.pid)
        finally:
            child.kill()
            child.wait()
        stats = [NodeStats("n", "Partitioner", "partition", "unstructured_api")]
        dead = ws.create_job("w", "wf", "ephemeral", stats, {}, owner=dead_owner)
        ws.update_job(dead, status="IN_PROGRESS", processing_status="IN_PROGRESS")
        alive = ws.create_job("w", "wf", "ephemeral", stats, {})  # owned by this process
        finished = ws.create_job("w", "wf", "ephemeral", stats, {}, owner=dead_owner)
        ws.update_job(finished, status="COMPLETED", processing_status="SUCCESS")
        assert ws.sweep_interrupted() == [dead]
        record = ws.job_record(dead)
        assert (record["status"], record["processing_status"]) == ("FAILED", "FAILED")
        assert record["message"] == INTERRUPTED
        assert ws.job_record(alive)["status"] == "SCHEDULED"
        assert ws.job_record(finished)["status"] == "COMPLETED"
    finally:
        ws.close()


def _open(root: str, barrier: Any, failures: Any) -> None:
    barrier.wait()  # both processes open the new workspace at the same moment
    try:
        Workspace(Path(root)).close()
    except sqlite3.Error as exc:
        failures.put(str(exc))


@pytest.mark.slow
def test_two_processes_opening_a_new_workspace_at_once_both_succeed(tmp_path: Path) -> None:
    # SQLite answers "database is locked" at once, without waiting, to the second switch to
    # write-ahead logging: before the retry, 29 rounds of 30 failed
    ctx = multiprocessing.get_context("spawn")
    failures = ctx.Queue()
    for i in range(8):
        barrier = ctx.Barrier(2)
        root = str(tmp_path / f"ws{i}")
        processes = [ctx.Process(target=_open, args=(root, barrier, failures)) for _ in range(2)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
            assert process.exitcode == 0
    assert failures.empty(), failures.get()


def test_opening_the_database_again_keeps_the_locks_of_connections_already_open(
    tmp_path: Path,
) -> None:
    # A server holds connections while each request opens another. Were the file opened and
    # closed beside SQLite (to read its header, say), the close would drop this process's locks
    # on it, and another process closing its own connection would take itself for the last one
    # and delete the write-ahead log under the open connections ("disk I/O error" seen by a
    # server of tests/server/test_two_servers.py).
    from ingestflow.store.db import connect_db

    root = tmp_path / "ws"
    held = connect_db(root)
    try:
        held.execute("SELECT count(*) FROM jobs").fetchone()
        connect_db(root).close()  # a request's connection, opened and closed
        other = (
            "import sys; from pathlib import Path; from ingestflow.store.db import connect_db; "
            "db = connect_db(Path(sys.argv[1])); db.execute('SELECT 1 FROM jobs').fetchall(); "
            "db.close()"
        )
        subprocess.run([sys.executable, "-c", other, str(root)], check=True, timeout=60)
        # the log outlives the other process's close: it saw this process's connection
        assert sorted(p.name for p in root.iterdir() if p.name.startswith("ingestflow.db")) == [
            "ingestflow.db",
            "ingestflow.db-shm",
            "ingestflow.db-wal",
        ]
    finally:
        held.close()
