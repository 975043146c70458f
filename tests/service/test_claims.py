"""The store's claims, from two connections to one workspace (as two servers hold them): one
launcher starts a job, one job process runs it, one server submits a schedule's firing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ingestflow.store import NodeStats, Workspace
from ingestflow.store.claims import (
    PENDING_FOR,
    claim_firing,
    firing,
    launch_job,
    settle_firing,
    take_job,
)
from ingestflow.store.owners import owner_alive, process_owner, same_owner

STATS = [NodeStats("n", "Partitioner", "partition", "unstructured_api")]
TICK = "2030-01-01T12:15:00+00:00"
BACKGROUND: dict[str, object] = {"run": {"body": {"name": "wf"}, "inputs": []}}  # the API's


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Workspace, Workspace]]:
    """Two connections to one new workspace."""
    first, second = Workspace(tmp_path), Workspace(tmp_path)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


class Starts:
    """A launcher's `start`: a child that waits to be ended; counts how often it was called."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []

    def __call__(self) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
        )
        self.processes.append(child)
        return child

    def end(self) -> None:
        for child in self.processes:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(timeout=30)


def test_one_launcher_starts_a_job(two: tuple[Workspace, Workspace]) -> None:
    first, second = two
    job = first.create_job("w", "wf", "persistent", STATS, BACKGROUND)
    starts = Starts()
    try:
        process = launch_job(first.db, job, starts)
        assert process is not None
        assert launch_job(second.db, job, starts) is None  # the job is taken
        assert len(starts.processes) == 1  # the loser started nothing
        row = second.job_row(job)
        assert (row["status"], row["owner"]) == ("IN_PROGRESS", process_owner(process.pid))
        # a job process runs only the job handed to it
        assert take_job(second.db, job, process_owner(process.pid))
        assert not take_job(second.db, job, process_owner())
    finally:
        starts.end()


def test_a_second_job_of_a_workflow_waits_for_the_first(two: tuple[Workspace, Workspace]) -> None:
    first, second = two
    running = first.create_job("w", "wf", "persistent", STATS, BACKGROUND)
    waiting = first.create_job("w", "wf", "persistent", STATS, BACKGROUND)
    other = first.create_job("v", "other", "persistent", STATS, BACKGROUND)
    starts = Starts()
    try:
        assert launch_job(first.db, running, starts) is not None
        assert launch_job(second.db, waiting, starts) is None
        assert second.job_row(waiting)["status"] == "SCHEDULED"
        assert launch_job(second.db, other, starts) is not None  # another workflow's job
    finally:
        starts.end()


@pytest.mark.parametrize(
    "info",
    [{}, {"run": {"inputs": ["/in"], "workers": 2}}],
    ids=["python-api", "cli"],
)
def test_a_foreground_runs_job_is_never_launched(
    two: tuple[Workspace, Workspace], info: dict[str, object]
) -> None:
    """A CLI or Python API run's job is SCHEDULED while its own process prechecks: a launcher
    (a server on the same workspace) must leave it to that process."""
    first, second = two
    job = first.create_job("file:/wf.json", "wf", "persistent", STATS, info)
    starts = Starts()
    assert launch_job(second.db, job, starts) is None
    assert starts.processes == []
    assert (second.job_row(job)["status"], second.job_row(job)["owner"]) == (
        "SCHEDULED",
        process_owner(),
    )
    assert first.begin_job(job)  # its own process goes on to run it


def test_a_job_handed_back_to_resume_is_launched(two: tuple[Workspace, Workspace]) -> None:
    first, second = two
    job = first.create_job("w", "wf", "persistent", STATS, {"run": {"inputs": []}, "resumed": 1})
    starts = Starts()
    try:
        assert launch_job(second.db, job, starts) is not None
    finally:
        starts.end()


def test_a_cancelled_job_is_neither_launched_nor_taken(two: tuple[Workspace, Workspace]) -> None:
    first, second = two
    job = first.create_job("w", "wf", "persistent", STATS, BACKGROUND)
    first.update_job(job, status="STOPPED", processing_status="STOPPED")
    starts = Starts()
    assert launch_job(second.db, job, starts) is None
    assert not take_job(second.db, job, process_owner())
    assert starts.processes == []


def test_a_launch_that_fails_leaves_the_job_scheduled(two: tuple[Workspace, Workspace]) -> None:
    first, _ = two
    job = first.create_job("w", "wf", "persistent", STATS, BACKGROUND)

    def broken() -> subprocess.Popen[bytes]:
        raise OSError("no such interpreter")

    with pytest.raises(OSError, match="no such interpreter"):
        launch_job(first.db, job, broken)
    assert first.job_row(job)["status"] == "SCHEDULED"
    assert not first.db.in_transaction


def test_one_server_submits_a_firing(two: tuple[Workspace, Workspace]) -> None:
    first, second = two
    assert claim_firing(first.db, "w", TICK, "first")
    assert not claim_firing(second.db, "w", TICK, "second")  # claimed, not settled yet
    settle_firing(first.db, "w", TICK, note="broken workflow")
    assert not claim_firing(second.db, "w", TICK, "second")  # one tick, one claim
    fired = firing(second.db, "w", TICK)
    assert fired is not None and fired["server"] == "first"
    assert claim_firing(second.db, "other", TICK, "second")  # another workflow's tick


def test_no_firing_while_a_job_or_another_firing_is_under_way(
    two: tuple[Workspace, Workspace],
) -> None:
    first, second = two
    job = first.create_job("w", "wf", "scheduled", STATS, {})
    assert not claim_firing(first.db, "w", TICK, "first")  # a job is scheduled
    first.update_job(job, status="COMPLETED", processing_status="SUCCESS")
    assert claim_firing(first.db, "w", TICK, "first")
    later = "2030-01-01T12:30:00+00:00"
    assert not claim_firing(second.db, "w", later, "second")  # 12:15 is being submitted
    settle_firing(first.db, "w", TICK, job_id=job)
    assert claim_firing(second.db, "w", later, "second")


def test_a_firing_its_server_never_settled_stops_blocking(
    two: tuple[Workspace, Workspace],
) -> None:
    first, second = two
    assert claim_firing(first.db, "w", TICK, "first")  # and that server died
    long_ago = datetime.now(UTC) - PENDING_FOR - timedelta(seconds=1)
    first.db.execute("UPDATE schedule_firings SET fired_at = ?", (long_ago.isoformat(),))
    assert claim_firing(second.db, "w", "2030-01-01T12:30:00+00:00", "second")


def test_an_owner_read_a_second_apart_is_the_same_process(
    two: tuple[Workspace, Workspace],
) -> None:
    """psutil derives a start time from the kernel's boot time, which a clock step moves by a
    second: the launcher's reading and the job process's own still name one process."""
    first, second = two
    me = process_owner()
    pid, _, started = me.partition(":")
    shifted = f"{pid}:{float(started) + 1.0:.3f}"
    assert owner_alive(shifted) and same_owner(me, shifted)
    assert not same_owner(me, f"{pid}:{float(started) + 30.0:.3f}")  # a reused pid
    assert not same_owner(me, f"{int(pid) + 1}:{started}")
    job = first.create_job("w", "wf", "persistent", STATS, BACKGROUND)
    first.update_job(job, status="IN_PROGRESS", processing_status="IN_PROGRESS")
    first.set_owner(job, shifted)  # as a launcher read it
    assert take_job(second.db, job, me)
    assert first.job_row(job)["owner"] == me
    first.set_owner(job, f"{pid}:{float(started) + 30.0:.3f}")  # another process's launch
    assert not take_job(second.db, job, me)
