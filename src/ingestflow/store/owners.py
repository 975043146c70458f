"""Which process owns a job: its pid and start time, so a job whose process ended is known."""

from __future__ import annotations

#: How far two readings of one process's start time may differ: psutil derives it from the
#: kernel's boot time, which a clock step moves by whole seconds; a pid is not reused that fast.
SAME_START_S = 2.0


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

    pid = owner.partition(":")[0]
    try:
        return same_owner(owner, process_owner(int(pid)))
    except (ValueError, psutil.Error):
        return False


def same_owner(a: str | None, b: str | None) -> bool:
    """True when two owner strings name one process (same pid, start times within
    `SAME_START_S`)."""
    if not a or not b:
        return False
    pid_a, _, start_a = a.partition(":")
    pid_b, _, start_b = b.partition(":")
    try:
        return pid_a == pid_b and abs(float(start_a) - float(start_b)) < SAME_START_S
    except ValueError:
        return False
