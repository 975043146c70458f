"""A damaged workspace database: every command and the server refuse it with one line that
names the file and the way out, and leave it as it is; a schema upgrade keeps a backup first."""

from __future__ import annotations

import hashlib
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ingestflow.store import Workspace
from ingestflow.store.db import MIGRATIONS
from ingestflow.store.job_rows import NodeStats

EXE = [sys.executable, "-c", "from ingestflow.cli import main; main()"]
PAGE = 4096


def _filled_workspace(root: Path) -> Path:
    """A workspace with a few hundred jobs (many pages), closed cleanly; its database file."""
    ws = Workspace(root)
    try:
        stats = [NodeStats("n", "Partitioner", "partition", "unstructured_api")]
        for number in range(300):
            ws.create_job("w", f"workflow {number}", "ephemeral", stats, {"note": "x" * 400})
    finally:
        ws.close()
    return root / "ingestflow.db"


def _empty(db: Path) -> None:
    db.write_bytes(b"")


def _garbage(db: Path) -> None:
    db.write_bytes(random.Random(7).randbytes(3 * PAGE + 123))


def _middle_pages_overwritten(db: Path) -> None:
    pages = db.stat().st_size // PAGE
    assert pages > 20, pages
    with db.open("r+b") as handle:
        handle.seek((pages // 2) * PAGE)
        handle.write(random.Random(11).randbytes(4 * PAGE))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "empty": _empty,
    "garbage": _garbage,
    "middle pages overwritten": _middle_pages_overwritten,
}
EXPECTED = {
    "empty": "the file is empty (0 bytes)",
    "garbage": "not a SQLite database",
    "middle pages overwritten": "SQLite's integrity check",
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EXE, *args], capture_output=True, text=True, timeout=120)


def _fingerprint(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_size, stat.st_mtime_ns


def _refusal(result: subprocess.CompletedProcess[str], db: Path) -> str:
    """The one line a refused command printed (and nothing like a traceback)."""
    assert result.returncode == 3, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "db.py" not in result.stderr
    assert str(db) in lines[0] and "damaged" in lines[0]
    return lines[0]


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_database_is_refused_with_the_way_out_and_left_as_it_is(
    tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "ws"
    db = _filled_workspace(root)
    DAMAGE[kind](db)
    before = _fingerprint(db)
    listed = _cli("jobs", "list", "--workspace", str(root))
    line = _refusal(listed, db)
    assert EXPECTED[kind] in line
    assert f"mv {db} {db}.damaged" in line  # the way out, as a command to copy
    assert "start an empty workspace" in line
    served = _cli("serve", "--workspace", str(root), "--port", "0")
    assert _refusal(served, db) == line  # the server refuses to start with the same line
    assert _fingerprint(db) == before  # nothing was written to it, nothing started afresh
    assert sorted(p.name for p in root.iterdir()) == ["ingestflow.db"]


def test_a_schema_upgrade_keeps_a_backup_that_the_refusal_names(tmp_path: Path) -> None:
    root = tmp_path / "a ws #1?"  # a path SQLite must be given as a quoted URI
    root.mkdir()
    db = root / "ingestflow.db"
    older = len(MIGRATIONS) - 1
    raw = sqlite3.connect(db)  # a workspace as the release before the last upgrade left it
    for migration in MIGRATIONS[:older]:
        raw.executescript(migration)
    raw.execute("INSERT INTO jobs (id, workflow_name, status) VALUES ('j1', 'kept', 'COMPLETED')")
    raw.execute(f"PRAGMA user_version = {older}")
    raw.commit()
    raw.close()

    Workspace(root).close()  # the upgrade
    backup = root / f"ingestflow.db.bak-v{older}"
    assert backup.is_file()
    assert backup.stat().st_mode & 0o777 == 0o600  # it holds connector secrets too
    copy = sqlite3.connect(backup)
    try:
        assert copy.execute("PRAGMA user_version").fetchone()[0] == older
        assert copy.execute("SELECT workflow_name FROM jobs").fetchall() == [("kept",)]
    finally:
        copy.close()

    _middle_pages_overwritten(_filled_workspace(root))
    listed = _cli("jobs", "list", "--workspace", str(root))
    line = _refusal(listed, db)
    assert f"cp {backup} {db}" in line
    # the way out works: move the damaged file aside, copy the backup back, open it again
    db.rename(root / "ingestflow.db.damaged")
    backup_bytes = backup.read_bytes()
    db.write_bytes(backup_bytes)
    restored = Workspace(root)
    try:
        assert restored.job_record("j1")["workflow_name"] == "kept"
        assert restored.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    finally:
        restored.close()


def test_a_new_workspace_leaves_nothing_beside_its_database(tmp_path: Path) -> None:
    # the database is made whole under another name and then put in place, so an empty file at
    # the workspace's path is always damage, never a workspace another process is making
    root = tmp_path / "ws"
    Workspace(root).close()
    db = root / "ingestflow.db"
    assert db.stat().st_size > 0
    assert sorted(p.name for p in root.iterdir()) == ["ingestflow.db"]
    assert not (root / "ingestflow.db.bak-v0").exists()  # nothing to back up in a new one


def test_a_database_damaged_while_the_server_runs_answers_503_without_paths(
    tmp_path: Path,
) -> None:
    from tests.server.conftest import API, running_server

    root = tmp_path / "ws"
    with running_server(root, background=False) as server:
        http = server.client()
        assert http.get(f"{API}/jobs").status_code == 200
        _empty(root / "ingestflow.db")
        answer = http.get(f"{API}/jobs")
        assert answer.status_code == 503, answer.text
        assert "damaged" in answer.json()["detail"] and "server's log" in answer.json()["detail"]
        assert str(tmp_path) not in answer.text and "ingestflow.db" not in answer.text
    assert (root / "ingestflow.db").stat().st_size == 0  # not started over
