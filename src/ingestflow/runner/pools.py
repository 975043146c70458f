"""Worker process pools: ending one now, reading how a worker that broke one ended, and a
forked worker letting go of its fork server.

The one place that reads the standard library's private state (no public API offers it):
`ProcessPoolExecutor._processes`, `ProcessPoolExecutor._executor_manager_thread` and
`multiprocessing.forkserver._forkserver` (its `_forkserver_alive_fd`, `_forkserver_pid` and
`_stop`). tests/runner/test_pools.py checks that each is still there, in the shape used here, on
the Python that runs the tests."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import suppress
from multiprocessing.connection import wait as wait_ready
from typing import Any


def processes(pool: ProcessPoolExecutor) -> list[Any]:
    """The pool's worker processes (none once the standard library has dropped its table, as
    it does on shutting down)."""
    return list((getattr(pool, "_processes", None) or {}).values())  # no public API for this


def terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: cancel queued work and end the workers (a stop must not wait for a long
    document, nor a model server that never answers). A worker that outlives SIGTERM is
    killed. A worker counts as ended once its sentinel is ready (the pool's own thread may be
    the one that reaps it: `is_alive()` can read a just-reaped worker as alive)."""
    workers = processes(pool)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.terminate()
    left = running(workers, timeout=5)
    for process in left:
        process.kill()
    running(left, timeout=5)
    for process in workers:
        process.join(timeout=0.1)  # reaped here unless the pool's thread did: no zombie left


def running(workers: list[Any], timeout: float) -> list[Any]:
    """The workers still running after waiting up to `timeout` seconds for all of them to end
    (a process's sentinel becomes ready when it exits, whoever reaps it)."""
    pending = {process.sentinel: process for process in workers}
    deadline = time.monotonic() + timeout
    while pending:
        for sentinel in wait_ready(list(pending), max(0.0, deadline - time.monotonic())):
            pending.pop(sentinel)
        if time.monotonic() >= deadline:
            break
    return list(pending.values())


def settled(pool: ProcessPoolExecutor, timeout: float = 10.0) -> None:
    """Let a broken pool's own thread finish reaping its workers before their exit codes are
    read: a worker forked by a fork server reports its exit status once, through a pipe, and a
    second thread reading it at the same time would see the pipe's end (exit code 255)."""
    manager = getattr(pool, "_executor_manager_thread", None)  # no public API for this
    if manager is not None:
        manager.join(timeout)


def exit_cause(workers: list[Any], timeout: float = 5.0) -> str:
    """How the worker that broke a pool ended, from its exit code: a SIGKILL is what the system's
    out-of-memory killer sends. The pool ends its other workers with SIGTERM."""
    for process in workers:
        process.join(timeout)
    codes = [p.exitcode for p in workers if p.exitcode not in (None, 0, -signal.SIGTERM)]
    if not codes:
        return ""
    code = codes[0]
    if code == -signal.SIGKILL:
        return (
            "killed with SIGKILL, as the system ends a process that runs out of memory: "
            "the document may need more memory than was free; run fewer workers (--workers) "
            "or free memory"
        )
    if code < 0:
        try:
            return f"ended by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"ended by signal {-code}"
    return f"exit code {code}"


def leave_fork_server() -> None:
    """In a worker forked by a run's fork server (`preload`): close the inherited write end of
    the pipe by which the server knows that the main process lives; while any worker held it, a
    killed main process would leave the server, and so its workers, running. Closed here: the
    server ends with the main process, and its workers with it."""
    import multiprocessing.forkserver

    server: Any = multiprocessing.forkserver._forkserver  # no public API for this
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None:
        server._forkserver_alive_fd = None
        with suppress(OSError):
            os.close(fd)


def stop_fork_server() -> None:
    """Stop this process's fork server now (SIGKILL: it may be loading still), and let the
    standard library start a fresh one when next asked."""
    import multiprocessing.forkserver

    server: Any = multiprocessing.forkserver._forkserver  # no public API to stop it
    pid = getattr(server, "_forkserver_pid", None)
    if pid is not None:
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    stopping = getattr(server, "_stop", None)
    if stopping is not None:
        stopping()
