"""File locks, on the `filelock` package: one holder at a time per lock file, and the kernel
drops a lock when its process ends, however it ends."""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout


def waiting(path: Path) -> FileLock:
    """The lock on `path`, for a `with` block that waits until it is free."""
    return FileLock(path)


def taken(path: Path) -> FileLock | None:
    """The lock on `path`, taken now (release it when done); None when it is held elsewhere."""
    lock = FileLock(path, blocking=False)
    try:
        lock.acquire()
    except Timeout:
        return None
    return lock


def held_elsewhere(path: Path) -> bool:
    """True when another process (or another open file of this one) holds the lock on `path`,
    which must exist; a look only: what it takes it lets go at once."""
    lock = taken(path)
    if lock is None:
        return True
    lock.release()
    return False
