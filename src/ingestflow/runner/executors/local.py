"""The local executors: one worker in this process, or a pool of worker processes that survives
a worker that dies (a library that crashes on some file fails that document alone)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from typing import Any

from ingestflow.runner import pools, worker
from ingestflow.runner.executors.base import Executor, OnResult
from ingestflow.runner.plan import Plan
from ingestflow.runner.stopping import Stopper
from ingestflow.runner.tasks import Task, alone, call, crashed


class InProcess(Executor):
    """Every task in this process, one after the other (one worker)."""

    def __init__(self, plan: Plan, stopper: Stopper, trace: bool) -> None:
        self.plan = plan
        self.stopper = stopper
        self.trace = trace
        self.workers = 1

    def run(self, tasks: Iterator[Task], on_result: OnResult) -> None:
        worker.init_worker(self.plan, in_process=True)
        try:
            for task in tasks:
                todo = [task]
                while todo:
                    current = todo.pop(0)
                    todo += on_result(current, call(current, self.trace)(), 1)
                self.stopper.check()
        finally:
            worker.close_worker()


class LocalPool(Executor):
    """Tasks on `workers` worker processes (spawned, or forked from a preloaded server:
    `context`), at most two a worker in flight. A worker that dies breaks the pool: what it
    held is retried task by task, each document alone, in a fresh pool, so that only the
    document that kills a worker fails."""

    def __init__(
        self,
        plan: Plan,
        workers: int,
        threads: int,
        stopper: Stopper,
        trace: bool,
        context: Any = None,
    ) -> None:
        self.plan = plan
        self.workers = workers
        self.threads = threads
        self.stopper = stopper
        self.trace = trace
        self.context = context  # the fork server's context when the workers are preloaded
        self.node_id = plan.nodes[0].id  # where a crashed document fails
        self.live: ProcessPoolExecutor | None = None  # the pool whose workers run now

    def run(self, tasks: Iterator[Task], on_result: OnResult) -> None:
        """Every task, and what each result asks for next. A first stop request ends the tasks
        at the next batch of documents; the documents already handed out (a long PDF's
        remaining page ranges and its join included) finish before the stop is raised. A second
        one stops now."""
        pool = self._pool()
        pending: dict[Future[Any], Task] = {}
        limit = self.workers * 2  # bounded in-flight work: memory does not grow with the corpus
        stopped = False
        try:
            try:
                for task in tasks:
                    while len(pending) >= limit:
                        pool = self._drain(pool, pending, on_result)
                    pending[self._submit(pool, task)] = task
            except KeyboardInterrupt:
                if self.stopper.now:
                    raise
                stopped = True  # no new document; those in progress finish
                self.stopper.finish_in_progress()
            while pending:
                pool = self._drain(pool, pending, on_result)
            # a stop asked for after the last batch was handed out (nothing new to refuse) is a
            # stop all the same: the job ends STOPPED, not COMPLETED
            if stopped or self.stopper.requested:
                self.stopper.wind_down()
                raise KeyboardInterrupt
        except BaseException:
            self.stopper.wind_down()  # a second Ctrl-C must not leave workers running
            pools.terminate(self.live or pool)  # the pool a retry replaced this one with
            raise
        pools.terminate(pool)  # idle now, with nothing to flush: no need to wait for their teardown

    def _submit(self, pool: ProcessPoolExecutor, task: Task) -> Future[Any]:
        return pool.submit(call(task, self.trace))

    def _pool(self) -> ProcessPoolExecutor:
        from ingestflow.runner.mainless import mainless

        # the workers must not import the user's `__main__` (a script that runs at module level)
        ctx = mainless(self.context or multiprocessing.get_context("spawn"))
        self.live = ProcessPoolExecutor(
            self.workers,
            mp_context=ctx,
            initializer=worker.init_worker,
            initargs=(self.plan, self.threads),
        )
        return self.live

    def _drain(
        self, pool: ProcessPoolExecutor, pending: dict[Future[Any], Task], on_result: OnResult
    ) -> ProcessPoolExecutor:
        done: set[Future[Any]] = set()
        while not done:  # wake up now and then to hear a cancel recorded in the job's row
            self.stopper.listen()
            done, _ = wait(list(pending), timeout=0.2, return_when=FIRST_COMPLETED)
        broken: list[Task] = []
        follows: list[Task] = []
        for future in done:
            task = pending.pop(future)
            try:
                result = future.result()
            except BrokenProcessPool:
                broken.append(task)
                continue
            spare = len(pending) < self.workers  # workers would idle: spread a long document
            follows += on_result(task, result, self.workers if spare else 1)
        if not broken:
            for follow in follows:
                pending[self._submit(pool, follow)] = follow
            return pool
        # Workers ended by a stop (SIGTERM to the process group ends them too) are not a crash:
        # nothing is retried after a stop.
        self.stopper.check()
        # A worker died (a library crashed on some file): retry each document (or page range)
        # alone in a fresh pool, so only the document that kills a worker fails.
        broken += [pending.pop(f) for f in list(pending)]
        pool.shutdown(wait=False, cancel_futures=True)
        pool = self._pool()
        retries = [alone_task for task in broken for alone_task in alone(task)] + follows
        while retries:
            task = retries.pop(0)
            future = self._submit(pool, task)
            workers_now = pools.processes(pool)
            try:
                result = _waited(future, self.stopper.listen)
            except BrokenProcessPool:
                pools.settled(pool)
                result = crashed(task, self.node_id, pools.exit_cause(workers_now))
                pool.shutdown(wait=False, cancel_futures=True)
                pool = self._pool()
            retries += on_result(task, result, 1)
        return pool


def _waited(future: Future[Any], check_stop: Callable[[], None]) -> Any:
    """The future's result, waited for a slice at a time to honour a stop request."""
    while True:
        check_stop()
        with suppress(TimeoutError):
            return future.result(timeout=0.2)
