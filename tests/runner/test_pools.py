"""`runner.pools` reads the standard library's private state (no public API offers it): these
tests check, on the Python that runs them, that each piece is still there in the shape used."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

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


def test_the_fork_servers_liveness_pipe_is_where_a_worker_looks_for_it() -> None:
    server = multiprocessing.forkserver._forkserver
    assert hasattr(server, "_forkserver_alive_fd")  # what `leave_fork_server` closes
    read, write = os.pipe()
    before = server._forkserver_alive_fd
    server._forkserver_alive_fd = write
    try:
        pools.leave_fork_server()
        assert server._forkserver_alive_fd is None
        assert os.read(read, 1) == b""  # the write end is closed: the reader sees its end
    finally:
        server._forkserver_alive_fd = before
        os.close(read)


@pytest.mark.slow
def test_a_fork_server_is_stopped_and_a_fresh_one_starts_when_next_asked() -> None:
    ctx = multiprocessing.get_context("forkserver")
    multiprocessing.forkserver.ensure_running()
    server: Any = multiprocessing.forkserver._forkserver  # typeshed leaves out its private state
    pid = server._forkserver_pid  # what `stop_fork_server` kills
    assert isinstance(pid, int) and callable(server._stop)
    pools.stop_fork_server()
    assert server._forkserver_pid is None  # `_stop` forgot it
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        assert pool.submit(_pid).result(timeout=120) > 0
    assert server._forkserver_pid not in (None, pid)
    pools.stop_fork_server()
