"""`ingestflow.locks`: one holder at a time across processes, and a killed holder's lock is free."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from filelock import Timeout

from ingestflow import locks

HOLD = (
    "import sys; from pathlib import Path; from ingestflow import locks; "
    "lock = locks.taken(Path(sys.argv[1])); print('held' if lock else 'busy', flush=True); "
    "sys.stdin.read()"
)


def _holder(path: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "held"  # waits for the child to hold it
    return child


def test_a_lock_held_by_another_process_is_refused_then_free_when_it_dies(tmp_path: Path) -> None:
    path = tmp_path / "a.lock"
    child = _holder(path)
    try:
        assert locks.taken(path) is None
        assert locks.held_elsewhere(path)
    finally:
        child.kill()  # no release: the kernel lets go
        child.wait(timeout=60)
    assert not locks.held_elsewhere(path)
    lock = locks.taken(path)
    assert lock is not None
    try:
        assert locks.held_elsewhere(path)  # another open file of this process is refused too
    finally:
        lock.release()


def test_waiting_blocks_until_the_holder_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "b.lock"
    child = _holder(path)
    with pytest.raises(Timeout, match="could not be acquired"):
        locks.waiting(path).acquire(timeout=0.05)  # held: a bounded wait gives up
    assert child.stdin is not None
    child.stdin.close()  # the holder ends
    child.wait(timeout=60)
    with locks.waiting(path):
        assert locks.held_elsewhere(path)
    assert not locks.held_elsewhere(path)
