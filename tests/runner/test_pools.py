"""`runner.pools`: a pool ended now, a broken pool's worker's end said (from the standard
library's private state, which these tests check is still there), and the run's fork server
started, stopped and let go of by its workers without the standard library's private state."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import subprocess
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import psutil
import pytest

from ingestflow.runner import pools


def _pid() -> int:
    return os.getpid()


def _die() -> None:
    os._exit(17)


def test_a_pools_workers_are_its_processes_and_a_broken_pool_says_how_its_worker_ended() -> None:
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        pid = pool.submit(_pid).result(timeout=120)
        workers = pools.processes(pool)
        assert [p.pid for p in workers] == [pid]  # `_processes`: pid -> Process
        assert isinstance(getattr(pool, "_executor_manager_thread", None), threading.Thread)
        with pytest.raises(BrokenProcessPool, match="terminated abruptly"):
            pool.submit(_die).result(timeout=120)
        pools.settled(pool)
        assert pools.exit_cause(workers) == "exit code 17"
    finally:
        pools.terminate(pool)


def test_terminate_ends_the_workers_at_once() -> None:
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    pool.submit(_pid).result(timeout=120)
    workers = pools.processes(pool)
    assert workers
    pools.terminate(pool)
    # each worker's sentinel is ready once it has exited, whichever thread reaped it
    ended = multiprocessing.connection.wait([p.sentinel for p in workers], timeout=0)
    assert len(ended) == len(workers)


_KILLED_MAIN = """
import multiprocessing, os, signal, sys
from concurrent.futures import ProcessPoolExecutor
from ingestflow.runner import pools

def parent():
    return os.getppid()

if __name__ == "__main__":
    ctx = multiprocessing.get_context("forkserver")
    pools.start_fork_server()
    leave = sys.argv[1] == "leave"
    initializer = pools.leave_fork_server if leave else None
    pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=initializer)
    server = pool.submit(parent).result(timeout=120)
    worker = next(iter(pools.processes(pool))).pid
    print(server, worker, pools.fork_server_pid(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _run_and_kill_main(tmp_path: Path, how: str) -> tuple[int, int, int]:
    script = tmp_path / "main.py"
    script.write_text(_KILLED_MAIN, encoding="utf-8")
    out = tmp_path / "out.txt"
    with out.open("w") as sink:  # a file: the processes left behind hold it open
        main = subprocess.Popen([sys.executable, str(script), how], stdout=sink)
        main.wait(timeout=180)
    server, worker, kept = (int(word) for word in out.read_text().split())
    return server, worker, kept


def _ended(pid: int, timeout: float) -> bool:
    try:
        psutil.Process(pid).wait(timeout)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True


@pytest.mark.parametrize("how", ["leave", "keep"])
def test_a_worker_lets_go_of_the_fork_server_so_it_ends_with_its_main_process(
    tmp_path: Path, how: str
) -> None:
    server, worker, kept = _run_and_kill_main(tmp_path, how)
    try:
        assert kept == server  # the server `start_fork_server` kept is the workers' parent
        # let go of: the server sees its liveness pipe's end once the main process is killed;
        # kept (the case `leave_fork_server` is there for): the worker keeps the server alive
        assert _ended(server, timeout=30 if how == "leave" else 3) is (how == "leave")
    finally:
        for pid in (worker, server):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


@pytest.mark.slow
def test_a_fork_server_is_stopped_and_a_fresh_one_starts_when_next_asked() -> None:
    ctx = multiprocessing.get_context("forkserver")
    pools.start_fork_server()
    pid = pools.fork_server_pid()
    assert pid is not None
    pools.stop_fork_server()
    assert pools.fork_server_pid() is None
    assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # ended; the library reaps it
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        fresh = pool.submit(os.getppid).result(timeout=120)
    assert fresh not in (pid, os.getpid())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).ppid() != os.getpid()  # reaped
    pools.start_fork_server()  # the running one: kept only when it starts
    pools.stop_fork_server()
