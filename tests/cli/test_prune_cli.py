"""Retention: `ingestflow jobs prune` removes finished jobs' stored files (uploads, node outputs,
output folders inside the workspace) and their records, by age or beyond the newest N, never a job
that is scheduled or running; `serve --keep-jobs-days` prunes with the same rule while it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ingestflow.errors import WorkflowInvalid
from ingestflow.service import Service
from ingestflow.store.job_rows import NodeStats
from tests.runner.test_reuse import cli, run, sample, workflow
from tests.server.conftest import API, running_server

EXE = [sys.executable, "-c", "from ingestflow.cli import main; main()"]
STATS = [NodeStats("n", "Partitioner", "partition", "unstructured_api")]


def _ago(days: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).isoformat()


def _job(service: Service, status: str, days_ago: float, size: int = 1000) -> str:
    """A job in `status`, made and (when finished) ended `days_ago`, with `size` bytes in each of
    its upload, node-output and output folders."""
    ws = service.ws
    job_id = ws.create_job("w", "stored", "persistent", STATS, {"trace": True})
    if status != "SCHEDULED":
        ws.update_job(job_id, status=status, processing_status=status)
    ended = _ago(days_ago) if status in ("COMPLETED", "FAILED", "STOPPED") else None
    ws.db.execute(
        "UPDATE jobs SET created_at = ?, finished_at = ? WHERE id = ?",
        (_ago(days_ago + 0.01), ended, job_id),
    )
    for folder in (
        ws.root / "uploads" / job_id / "0",
        ws.root / "jobs" / job_id / "nodes" / "n",
        ws.root / "jobs" / job_id / "output",
    ):
        folder.mkdir(parents=True)
        (folder / "a.json").write_bytes(b"x" * size)
    return job_id


def _stored(root: Path, job_id: str) -> bool:
    """True when anything of the job is left: its record or any of its folders."""
    with Service(root) as service:
        rows = service.ws.db.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchall()
    return bool(rows) or any((root / part / job_id).exists() for part in ("jobs", "uploads"))


def _prune(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXE, "jobs", "prune", "--workspace", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_prune_by_age_dry_run_first_never_an_unfinished_job(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with Service(root) as service:
        old_done = _job(service, "COMPLETED", 40)
        old_failed = _job(service, "FAILED", 31)
        recent = _job(service, "COMPLETED", 2)
        old_scheduled = _job(service, "SCHEDULED", 90)
        old_running = _job(service, "IN_PROGRESS", 90)  # owned by this (live) process

    dry = _prune(root, "--older-than", "30", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    answer = json.loads(dry.stdout)
    assert answer["dry_run"] is True
    assert sorted(j["id"] for j in answer["jobs"]) == sorted([old_done, old_failed])
    assert answer["bytes"] == 2 * 3 * 1000
    assert all(_stored(root, j) for j in (old_done, old_failed, recent))  # nothing removed

    done = _prune(root, "--older-than", "30")
    assert done.returncode == 0, done.stderr
    assert "removed 2 finished jobs" in done.stdout and "5.9 KB" in done.stdout
    assert old_done[:8] in done.stdout and old_failed[:8] in done.stdout
    assert not _stored(root, old_done) and not _stored(root, old_failed)
    for kept in (recent, old_scheduled, old_running):
        assert _stored(root, kept)
    with Service(root) as service:
        assert service.ws.files(old_done) == []  # its per-file rows went with it
        assert service.jobs.get(old_running)["status"] == "IN_PROGRESS"

    again = _prune(root, "--older-than", "30")
    assert again.returncode == 0 and "no finished job to prune" in again.stdout


def test_prune_keeps_the_newest_n_finished_jobs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with Service(root) as service:
        finished = [_job(service, "COMPLETED", days) for days in (5, 4, 3, 2, 1)]  # oldest first
        running = _job(service, "IN_PROGRESS", 10)
        # both rules: older than 3.5 days and beyond the newest 2 → only the two oldest
        both = service.jobs.prune(older_than_days=3.5, keep=2)
        assert sorted(j["id"] for j in both["jobs"]) == sorted(finished[:2])
    done = _prune(root, "--keep", "2", "--json")
    assert done.returncode == 0, done.stderr
    assert [j["id"] for j in json.loads(done.stdout)["jobs"]] == [finished[2]]
    assert [j for j in finished if _stored(root, j)] == finished[3:]
    assert _stored(root, running)


def test_prune_needs_a_rule_and_sane_numbers(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with Service(root) as service:
        kept = _job(service, "COMPLETED", 400)
        with pytest.raises(WorkflowInvalid, match="say which finished jobs to prune"):
            service.jobs.prune()
        with pytest.raises(WorkflowInvalid, match="a number of days, 0 or more"):
            service.jobs.prune(older_than_days=float("nan"))
    bare = _prune(root)
    assert bare.returncode == 2 and "--older-than" in bare.stderr and "--keep" in bare.stderr
    negative = _prune(root, "--older-than", "-1")
    assert negative.returncode == 2
    assert _stored(root, kept)


def test_a_pruned_traced_job_is_gone_but_the_node_cache_still_serves_a_later_run(
    tmp_path: Path,
) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, first = run(wf, folder, tmp_path / "o1", ws, "--trace")
    assert code == 0, first
    assert (ws / "jobs" / first["id"] / "nodes").is_dir()

    pruned = cli("jobs", "prune", "--keep", "0", "--workspace", ws)
    assert pruned.exit_code == 0, pruned.output
    assert first["id"][:8] in pruned.output
    assert not (ws / "jobs" / first["id"]).exists()
    assert (tmp_path / "o1" / "notes.txt.json").is_file()  # the user's output folder stays

    shown = cli("jobs", "show", first["id"], "--workspace", ws)
    assert shown.exit_code == 2 and "pruned" in shown.output
    code, answer = run(wf, folder, tmp_path / "o2", ws, "--trace", "--from-job", first["id"])
    assert code == 2 and "pruned" in answer, answer

    code, second = run(wf, folder, tmp_path / "o2", ws, "--trace")
    assert code == 0, second
    assert "reused earlier node outputs: 3 from cache" in second["message"]
    assert json.loads((tmp_path / "o2" / "notes.txt.json").read_text()) == json.loads(
        (tmp_path / "o1" / "notes.txt.json").read_text()
    )


def test_serve_keep_jobs_days_prunes_old_finished_jobs_while_it_runs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with Service(root) as service:
        old = _job(service, "COMPLETED", 40)
        recent = _job(service, "COMPLETED", 1)
        _, key = service.keys.create("tests")
    with running_server(root, key=key, background=False, keep_jobs_days=30) as server:
        http = server.client()
        deadline = time.monotonic() + 60
        while http.get(f"{API}/jobs/{old}").status_code != 404:
            assert time.monotonic() < deadline, "the old job was never pruned"
            time.sleep(0.2)
        assert http.get(f"{API}/jobs/{recent}").status_code == 200
    assert not _stored(root, old) and _stored(root, recent)


def test_serve_refuses_a_negative_retention(tmp_path: Path) -> None:
    result = subprocess.run(
        [*EXE, "serve", "--workspace", str(tmp_path / "ws"), "--keep-jobs-days", "-1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "--keep-jobs-days" in result.stderr and "0 or more" in result.stderr
