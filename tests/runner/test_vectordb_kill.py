"""The Milvus writer's per-document replace holds when the process is killed between its steps:
a re-run leaves every record with exactly its new rows (none old, none twice).

Only the killed runs are processes of their own (they die at a chosen step); the first run, the
re-runs and the clean run are `ingestflow run` in this process, which then lets go of the .db
(Milvus Lite opens a .db in one process at a time, see `release`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.runner.test_vectordb_run import WORKFLOW

# slow; killed runs and their re-runs: a longer time limit than the suite's 300 s
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# Runs `ingestflow run ...` in a process that dies (kill -9's way: no cleanup at all) at one
# step of the writer: the Nth call of a VectorDBDestination method, before or after it.
KILLER = """
import os, sys
from ingestflow.connectors.vectordb_destination import VectorDBDestination
method, when, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
original = getattr(VectorDBDestination, method)
calls = [0]
def wrapped(self, *args, **kwargs):
    calls[0] += 1
    if when == "before" and calls[0] == nth:
        os._exit(9)
    result = original(self, *args, **kwargs)
    if when == "after" and calls[0] == nth:
        os._exit(9)
    return result
setattr(VectorDBDestination, method, wrapped)
sys.argv = ["ingestflow", *sys.argv[4:]]
from ingestflow.cli import main
main()
"""
STEPS = [
    ("_insert", "before", 1),  # nothing of the new version written yet
    ("_insert", "after", 1),  # the new rows of the first document in, the old ones still there
    ("_delete", "before", 1),  # new and old side by side
    ("_delete", "after", 1),  # the first document replaced, the second not started
    ("write", "after", 2),  # everything written, the job not told
]


EXE = [sys.executable, "-c", "from ingestflow.cli import main; main()"]
runner = CliRunner()


def release(db: Path) -> None:
    """Let go of the Milvus Lite server this process keeps for `db` (one per path, until the
    process exits), so that another process may open the .db, or a fresh copy be put there."""
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(db))


def cli_here(db: Path, *args: str) -> Any:
    """`ingestflow ARGS` in this process (a run, `vectordb create-collection`), then `db` let go."""
    try:
        return runner.invoke(app, list(args))
    finally:
        release(db)


def setup(tmp: Path) -> tuple[Path, Path, Path]:
    """Two documents, a Milvus Lite collection (made in this process, the .db let go after), its
    connector, and the workflow (reprocess_all false)."""
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "finance.txt").write_text(
        "Interest rates\n\nThe central bank raised interest rates to curb inflation.\n"
    )
    (docs / "garden.md").write_text("# Tomatoes\n\nWater tomato plants twice a week.\n")
    db = tmp / "milvus.db"
    made = cli_here(
        db,
        *("vectordb", "create-collection", "--uri", str(db)),
        *("--collection", "elements", "--schema", "recommended"),
    )
    assert made.exit_code == 0, made.output
    config = {
        "user": "",
        "uri": str(db),
        "db_name": "",
        "password": "",
        "collection_name": "elements",
    }
    conn = tmp / "milvus.json"
    conn.write_text(json.dumps({"name": "milvus lite", "type": "milvus", "config": config}))
    wf = tmp / "wf.json"
    wf.write_text(json.dumps({**WORKFLOW, "reprocess_all": False}))
    return docs, conn, wf


def _rows(db: Path) -> list[tuple[str, str]]:
    from pymilvus import MilvusClient

    client = MilvusClient(str(db))
    try:
        client.load_collection("elements")
        rows = client.query("elements", filter="", output_fields=["record_id", "text"], limit=1000)
    finally:
        client.close()
        # Milvus Lite keeps a server per path in this process until it exits: the next case
        # puts a fresh copy at the same path, which a kept server would not see.
        release(db)
    return sorted((r["record_id"], r["text"]) for r in rows)


def _new_version(docs: Path) -> None:
    """A new version of both documents: every stored row must be replaced."""
    for path in docs.iterdir():
        path.write_text(path.read_text().replace("twice a week", "every morning") + "More.\n")


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    """What a clean run of the new version writes, in a fresh collection."""
    fresh = tmp_path_factory.mktemp("fresh")
    docs, conn, wf = setup(fresh)
    _new_version(docs)
    args = ["run", str(wf), "-i", str(docs), "--destination", str(conn)]
    clean = cli_here(fresh / "milvus.db", *args, "--workspace", str(fresh / "ws"), "--workers", "1")
    assert clean.exit_code == 0, clean.output
    return _rows(fresh / "milvus.db")


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """The state every case starts from, made once: the two documents' first run into a fresh
    collection, its folder (collection, workspace, files) kept as a pristine copy. A case puts
    the copy back at the same path, since the workspace and the connector hold absolute paths."""
    base = tmp_path_factory.mktemp("kill")
    work = base / "work"
    work.mkdir()
    docs, conn, wf = setup(work)
    args = ["run", str(wf), "-i", str(docs), "--destination", str(conn)]
    args += ["--workspace", str(work / "ws"), "--workers", "1", "--json"]
    first = cli_here(work / "milvus.db", *args)
    assert first.exit_code == 0, first.output
    pristine = base / "pristine"
    shutil.copytree(work, pristine, symlinks=True)
    return work, pristine, args


@pytest.mark.parametrize(("method", "when", "nth"), STEPS, ids=lambda v: str(v))
def test_killed_between_steps_then_rerun(
    first_run: tuple[Path, Path, list[str]],
    method: str,
    when: str,
    nth: int,
    expected: list[tuple[str, str]],
) -> None:
    work, pristine, args = first_run
    shutil.rmtree(work)
    shutil.copytree(pristine, work, symlinks=True)
    docs = work / "docs"
    _new_version(docs)
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, method, when, str(nth), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == 9, killed.stderr
    rerun = cli_here(work / "milvus.db", *args)
    assert rerun.exit_code == 0, rerun.output
    record = json.loads(rerun.stdout)
    statuses = {f["filename"]: f["status"] for f in record["files"]}
    assert set(statuses) == {"finance.txt", "garden.md"}
    got = _rows(work / "milvus.db")
    record_ids = {r for r, _ in got}
    assert len(record_ids) == 2
    assert sorted(t for _, t in got) == sorted(t for _, t in expected)  # new rows, each once
    assert all("every morning" in t for r, t in got if "omato" in t)
