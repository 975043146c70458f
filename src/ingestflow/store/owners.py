"""Which process owns a job: its pid and start time, so a job whose process ended is known."""

from __future__ import annotations


def process_owner(pid: int | None = None) -> str:
    """This (or `pid`'s) process as a job owner: pid and start time, so a reused pid is no match."""
    import psutil

    process = psutil.Process(pid)
    return f"{process.pid}:{process.create_time():.3f}"


def owner_alive(owner: str | None) -> bool:
    """True when the process that owns a job still runs."""
    if not owner:
        return False
    import psutil

    pid, _, started = owner.partition(":")
    try:
        return process_owner(int(pid)) == f"{pid}:{started}"
    except (ValueError, psutil.Error):
        return False
