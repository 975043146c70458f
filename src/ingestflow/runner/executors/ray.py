"""Run a plan on Ray (`ingestflow run --executor ray`): the same plan, tasks, stages and outputs
as the local executor, on a pool of Ray actors.

The driver (this process) lists the source and plans the tasks (`runner.tasks`: a long document
is split into page ranges and joined, as locally), ships each task to an actor, and hands each
outcome back to the runner, which records the job. Each actor is one worker process holding the
plan's stages (`worker.init_worker`), running the calls it is sent (`worker.Call`), and, where
the destination allows it (`Destination.for_workers`), writing each document it finishes to the
destination itself: only the outcome comes back. Work in flight is bounded: at most `PER_ACTOR`
tasks an actor. Local files go as paths when every machine sees them (a local cluster,
`--ray-shared-fs`, or `INGESTFLOW_RAY_SHARED_FS=1`), else as bytes. An actor that dies takes only
its tasks with it: each document is redone alone on an actor that runs nothing else (written
again, replacing what the dead actor may have written), and one that kills that actor too fails
alone ("the worker process crashed on this document").
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections import deque
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.connectors.base import Destination
from ingestflow.elements import Document
from ingestflow.errors import OUT_OF_MEMORY, EnvironmentProblem
from ingestflow.runner import events, worker
from ingestflow.runner.executors import ray_cluster
from ingestflow.runner.executors.base import Executor, OnResult
from ingestflow.runner.executors.ray_actor import StagesActor, Stamp, spool_root, sweep_spool
from ingestflow.runner.tasks import Join, Task, WholeDocuments, alone, call, crashed, documents

if TYPE_CHECKING:
    from ingestflow.runner.executors.registry import Launch, RayOptions

SHARED_FS_ENV = "INGESTFLOW_RAY_SHARED_FS"
PER_ACTOR = 2  # tasks in flight on one actor: one running, one queued behind it
CRASHED = "the worker process crashed on this document"
NEEDS_RAY = "the Ray executor needs Ray: pip install -e '.[ray]' (or `scripts/setup.sh`)"


@dataclass(eq=False)
class _Sent:
    """A task for an actor, and whether it is retried alone after its actor died."""

    task: Task
    alone: bool = False


@dataclass(eq=False)
class _Slot:
    """One actor of the pool and the tasks it has in flight."""

    actor: Any
    load: int = 0


class RayExecutor(Executor):
    """Tasks on a pool of Ray actors, one a CPU: on a local cluster started for the run, or on
    the cluster at `RayOptions.address`. Inside the context, the cluster is reachable and
    `workers` is the pool's size; after it, no process of a local cluster remains."""

    def __init__(self, launch: Launch, own: RayOptions) -> None:
        try:
            import ray
        except ImportError as exc:
            raise EnvironmentProblem(NEEDS_RAY) from exc
        self.ray = ray
        self.plan = plan = launch.plan
        self.opts = options = launch.options
        self.address = own.address
        self.stopper = launch.stopper
        self.trace = options.trace
        self.progress = launch.progress or events.ignore  # the cluster and the actors, in words
        self.loading = tuple(launch.loading)  # what an actor loads first (`executor.loading`)
        self.node_id = plan.nodes[0].id  # where a crashed document fails
        # local folders every actor sees at the same path: its own cluster is this machine
        self.shared_fs = (
            own.shared_fs or not own.address or os.environ.get(SHARED_FS_ENV, "").strip() == "1"
        )
        self._before: set[int] = set()
        self._stack = ExitStack()  # Ray's own lines kept off the terminal while inside
        self.writer, self.notes = self._writer(launch.destination)
        source = launch.source
        if source is not None and not source.read_in_workers() and not source.local_files:
            self.notes.append(
                f"the {source.name} source was read by the run's own process (it cannot hand "
                "the actors references to read themselves with these settings)"
            )

    def _writer(self, destination: Destination | None) -> tuple[Destination | None, list[str]]:
        """The destination the actors write with (None: this process writes every document),
        and what the job's message says when it is not them."""
        if destination is None:
            return None, []
        writer = destination.for_workers()
        if writer is None:
            why = destination.one_writer_only  # what the destination declares
            return None, [
                f"the {destination.name} destination takes one writer"
                f"{f' ({why})' if why else ''}: the run's own process wrote "
                "every document, the Ray actors processed them"
            ]
        if destination.writes_a_folder and not self.shared_fs:
            return None, [
                "the output folder is not declared shared (--ray-shared-fs): the run's own "
                "process wrote every document, the Ray actors processed them"
            ]
        return writer, []

    def __enter__(self) -> RayExecutor:
        import psutil

        ray, opts, address = self.ray, self.opts, self.address
        self._before = {p.pid for p in psutil.Process().children(recursive=True)}
        self._stack.enter_context(ray_cluster.quiet(ray))
        sigterm = ray_cluster.sigterm_handler()
        if address:
            doing = f"connecting to the Ray cluster at {address}"
        else:
            doing = f"starting a local Ray cluster ({opts.worker_count()} CPUs)"
        self.progress(events.ExecutorStep("ray cluster", doing))
        try:
            if address:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            else:  # a local cluster for this run
                with ray_cluster.lean(ray):
                    ray.init(
                        num_cpus=opts.worker_count(),
                        include_dashboard=False,
                        log_to_driver=False,
                        configure_logging=False,
                    )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            self._stack.close()
            where = address or "a local Ray cluster"
            ray_cluster.reap(self._started())
            hint = ""
            if str(address).startswith("ray://") and "RAY_AUTH_MODE" not in os.environ:
                hint = " (a cluster with token authentication needs RAY_AUTH_MODE=token here)"
            raise EnvironmentProblem(
                f"could not reach {where}: {worker.reason(exc)}{hint}"
            ) from exc
        finally:  # `ray.init` installs its own SIGTERM handler: the runner's stops the job cleanly
            if sigterm is not None:
                signal.signal(signal.SIGTERM, sigterm)
        if address:  # one actor a CPU of the cluster: more would wait for one forever
            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            self.workers = min(opts.workers or cpus, cpus)
        else:
            self.workers = opts.worker_count()
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        try:
            # the local cluster's processes (GCS, raylet, their workers): none outlives the run
            started = self._started()
            if not self.address:
                self.progress(events.ExecutorStep("ray stop", "stopping the local Ray cluster"))
            self.ray.shutdown()
            ray_cluster.reap(started)
            with suppress(OSError):  # what the actors that died on this machine left
                sweep_spool(spool_root())
        finally:
            self._stack.close()

    def _started(self) -> list[Any]:
        import psutil

        return [p for p in psutil.Process().children(recursive=True) if p.pid not in self._before]

    def run(self, tasks: Iterator[Task], on_result: OnResult) -> None:
        _Pool(self, on_result).run(tasks)


class _Pool:
    """The actors, the tasks in flight, and the tasks waiting for a slot."""

    def __init__(self, executor: RayExecutor, on_result: OnResult) -> None:
        self.ray = ray = executor.ray
        self.executor = executor
        self.on_result = on_result
        workers = executor.workers
        threads = 1 if executor.address else max(1, (os.cpu_count() or 1) // workers)
        context = executor.plan.context
        options = context.options.with_threads(threads)
        self.plan = replace(executor.plan, context=replace(context, options=options))
        self.threads = threads
        self.actor_class = ray.remote(StagesActor).options(
            num_cpus=1, max_restarts=0, max_task_retries=0
        )
        self.writer = executor.writer
        self.dimension = executor.plan.embed_dimension
        self.slots = [self._new_slot() for _ in range(workers)]
        what = " and ".join(executor.loading)
        loads = f": each loads {what}, then reads its first documents" if what else ""
        actors = f"{workers} Ray actor{'s' if workers != 1 else ''}"
        executor.progress(events.ExecutorStep("ray actors", f"starting {actors}{loads}"))
        self.pending: dict[Any, tuple[_Sent, _Slot]] = {}
        self.queue: deque[_Sent] = deque()

    def _new_slot(self) -> _Slot:
        return _Slot(self.actor_class.remote(self.plan, self.threads, self.writer, self.dimension))

    def run(self, tasks: Iterator[Task]) -> None:
        """Submit every task (at most PER_ACTOR in flight an actor) and hand back every result."""
        try:
            for task in tasks:
                self.queue.append(_Sent(task))
                self._pump()
                while self.queue:  # no free slot: the source waits (bounded in-flight work)
                    self._drain()
                    self._pump()
            while self.pending or self.queue:
                self._drain()
                self._pump()
        finally:
            for slot in self.slots:  # stop at once: a stop must not wait for a long document
                self._kill(slot)

    def _pump(self) -> None:
        """Submit waiting tasks, in order, while an actor has room (a retry needs an idle actor
        of its own, so that a crash it causes can only be its own)."""
        while self.queue:
            sent = self.queue[0]
            if sent.alone:
                free = [slot for slot in self.slots if slot.load == 0]
            else:
                free = [slot for slot in self.slots if slot.load < PER_ACTOR]
            if not free:
                return
            slot = min(free, key=lambda s: s.load)
            self.queue.popleft()
            slot.load += PER_ACTOR if sent.alone else 1
            shipped, stamps = self._shipped(call(sent.task, self.executor.trace))
            ref = slot.actor.process.remote(shipped, stamps, _final(sent.task))
            self.pending[ref] = (sent, slot)

    def _shipped(self, sent: worker.Call) -> tuple[worker.Call, list[Stamp | None]]:
        """The call as sent: its documents' content as bytes (with the file's modification time
        and whether it is in the temporary folder), or as they are when the actors share the
        driver's file system or the content is not a file."""
        if self.executor.shared_fs:
            return sent, [None] * len(sent.docs)
        out: list[Document] = []
        stamps: list[Stamp | None] = []
        temp = tempfile.gettempdir()
        for doc in sent.docs:
            if doc.path is None or doc.data is not None:
                out.append(doc)
                stamps.append(None)
                continue
            try:
                mtime = Path(doc.path).stat().st_mtime_ns
                out.append(replace(doc, data=doc.read_bytes(), path=None))
            except OSError:  # unreadable: the partitioner says why, as with the local executor
                out.append(doc)
                stamps.append(None)
                continue
            stamps.append((mtime, str(doc.path).startswith(temp)))  # the library's own test
        return replace(sent, docs=tuple(out)), stamps

    def _drain(self) -> None:
        """Wait for one task to finish (waking now and then to honour a stop), and hand its
        result back; queue the tasks it leads to."""
        ray = self.ray
        ready: list[Any] = []
        while not ready:
            self.executor.stopper.check()
            ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=0.2)
        for ref in ready:
            sent, slot = self.pending.pop(ref)
            slot.load -= PER_ACTOR if sent.alone else 1
            try:
                result = ray.get(ref)
            except (
                ray.exceptions.RayActorError,
                ray.exceptions.WorkerCrashedError,
                ray.exceptions.OutOfMemoryError,
            ) as exc:
                if getattr(exc, "actor_init_failed", False):
                    raise EnvironmentProblem(f"a Ray actor could not start: {exc}") from None
                self._crashed(sent, slot, exc)
                continue
            except ray.exceptions.RayTaskError as exc:  # the worker's own error, unwrapped
                cause = getattr(exc, "cause", None)
                raise (cause if isinstance(cause, Exception) else exc) from None
            if isinstance(result, list):  # documents as the driver knows them, not the spool
                for r, doc in zip(result, documents(sent.task), strict=True):
                    r.doc.path, r.doc.data = doc.path, None
            self._follow(sent.task, result)

    def _follow(self, task: Task, result: Any) -> None:
        """Hand a result back; queue what it leads to (spread: actors would idle)."""
        share = self.executor.workers if len(self.pending) < self.executor.workers else 1
        self.queue.extend(_Sent(follow) for follow in self.on_result(task, result, share))

    def _crashed(self, sent: _Sent, slot: _Slot, exc: Exception) -> None:
        """An actor died under a task: replace it; retry each of the task's documents alone,
        or fail the task that was already alone (out of memory when Ray's memory monitor says
        so)."""
        if slot in self.slots:
            self.slots[self.slots.index(slot)] = self._new_slot()
            self._kill(slot)
        if sent.alone:
            cause = OUT_OF_MEMORY if isinstance(exc, self.ray.exceptions.OutOfMemoryError) else ""
            self._follow(sent.task, crashed(sent.task, self.executor.node_id, cause))
            return
        retries = [_Sent(task, alone=True) for task in alone(sent.task)]
        self.queue.extendleft(reversed(retries))

    def _kill(self, slot: _Slot) -> None:
        with suppress(Exception):  # already gone
            self.ray.kill(slot.actor, no_restart=True)


def _final(task: Task) -> bool:
    """Whether a task's documents are finished when it is: written where the actors write (not
    a page range, an embedding slice, or the first stages of a document spread over them)."""
    return isinstance(task, WholeDocuments | Join) and task.stop is None
