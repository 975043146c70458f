"""Worker process pools: ending one now, reading how a worker that broke one ended, and the
run's fork server: started and stopped by this module, and let go of by its workers.

The pool reads two pieces of the standard library's private state (no public API offers them):
`ProcessPoolExecutor._processes` and `._executor_manager_thread`; tests/runner/test_pools.py
checks that each is still there. The fork server is handled without its private state: its
process is the child that `start_fork_server` saw appear, and a worker finds the server's
liveness pipe among its own file descriptors (Linux: /proc)."""

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
    """In a worker forked by a run's fork server (`preload`): let go of the inherited write end
    of the pipe by which the server knows that the main process lives; while any worker held it,
    a killed main process would leave the server, and so its workers, running. Let go of here,
    the server ends with the main process, and its workers with it.

    The pipe is the one this process writes to whose read end the server (its parent) holds and
    neither the main process nor this one does (the run's queues are the main process's own).
    Its descriptor is pointed at /dev/null rather than closed: the standard library keeps its
    number. Nothing where /proc cannot be read (not Linux)."""
    import multiprocessing

    main = multiprocessing.parent_process()
    server = os.getppid()
    if main is None or main.pid == server:  # not a fork server's worker
        return
    try:
        mine = _pipes("self")
        held = _pipes(str(server))
        by_main = _pipes(str(main.pid))
    except OSError:
        return
    read_by_server = {pipe for pipe, mode in held.values() if mode == os.O_RDONLY}
    read_elsewhere = {
        pipe for pipe, mode in [*by_main.values(), *mine.values()] if mode != os.O_WRONLY
    }
    for fd, (pipe, mode) in mine.items():
        if mode == os.O_WRONLY and pipe in read_by_server and pipe not in read_elsewhere:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, fd, inheritable=False)
            finally:
                os.close(null)


def _pipes(pid: str) -> dict[int, tuple[str, int]]:
    """A process's pipe descriptors: fd -> (the pipe, its access mode), from /proc."""
    found: dict[int, tuple[str, int]] = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        with suppress(OSError, ValueError):  # closed meanwhile
            target = os.readlink(f"/proc/{pid}/fd/{name}")
            if not target.startswith("pipe:"):
                continue
            with open(f"/proc/{pid}/fdinfo/{name}", encoding="ascii") as info:
                flags = next(line for line in info if line.startswith("flags:"))
            found[int(name)] = (target, int(flags.split()[1], 8) & os.O_ACCMODE)
    return found


#: The fork server `start_fork_server` started (a psutil.Process), until `stop_fork_server`.
_server: Any = None


def start_fork_server() -> None:
    """Start the standard library's fork server now (`multiprocessing.forkserver.
    ensure_running`; it may be running already), and keep its process: this process's live
    child whose command line is the fork server's."""
    import multiprocessing.forkserver
    from multiprocessing import resource_tracker

    import psutil

    global _server
    resource_tracker.ensure_running()
    multiprocessing.forkserver.ensure_running()
    _server = None
    servers = []  # this process's live fork servers: the library keeps one at a time
    for child in psutil.Process().children():
        with suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE and _is_fork_server(child.cmdline()):
                servers.append(child)
    if servers:  # the one the library started last (an earlier one killed is not alive)
        _server = max(servers, key=lambda child: child.create_time())


def _is_fork_server(cmdline: list[str]) -> bool:
    """True for the command line the standard library starts its fork server with."""
    return any("multiprocessing.forkserver" in part and "main(" in part for part in cmdline)


def fork_server_pid() -> int | None:
    """The process id of the fork server `start_fork_server` started (None: none kept)."""
    return None if _server is None else int(_server.pid)


def stop_fork_server() -> None:
    """Stop the fork server `start_fork_server` started now (SIGKILL: it may be loading still).
    It is left for the standard library to reap: it sees it gone when next asked for a server,
    and starts a fresh one."""
    import psutil

    global _server
    server, _server = _server, None
    if server is None:
        return
    with suppress(psutil.Error):
        if server.is_running():  # the same process (not a reused id)
            server.kill()
    _wait_ended(server.pid)


def _wait_ended(pid: int, timeout: float = 10.0) -> None:
    """Wait until this process's child `pid` has ended, leaving it to be reaped."""
    waitid = getattr(os, "waitid", None)
    if waitid is not None:
        with suppress(ChildProcessError, OSError):  # already reaped
            waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        return
    import psutil  # pragma: no cover - no waitid (macOS)

    deadline = time.monotonic() + timeout  # pragma: no cover
    while time.monotonic() < deadline:  # pragma: no cover
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.01)
