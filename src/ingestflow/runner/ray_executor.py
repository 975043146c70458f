"""Run a plan on Ray (`ingestflow run --executor ray`): the same plan, stages and outputs as the
local executor, on a pool of Ray actors.

The driver (this process) reads the source, groups documents into batches (`JobRunner._batches`),
ships each batch to an actor and writes every result to the destination and the job record
(`JobRunner._collect`). Each actor is one worker process holding the plan's stages
(`worker.init_worker`, `worker.process_batch`). Work in flight is bounded: at most
`PER_ACTOR` batches an actor. Documents go as bytes, unless `INGESTFLOW_RAY_SHARED_FS=1` says
the actors read the same file system as the driver (then as paths). An actor that dies takes
only its documents' results with it: each is retried alone on an actor that runs nothing else,
and one that kills that actor too fails alone ("the worker process crashed on this document").
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.elements import Document
from ingestflow.errors import OUT_OF_MEMORY, EnvironmentProblem
from ingestflow.runner import worker
from ingestflow.runner.plan import Plan

if TYPE_CHECKING:
    from ingestflow.runner.executor import JobRunner

SHARED_FS_ENV = "INGESTFLOW_RAY_SHARED_FS"
PER_ACTOR = 2  # batches in flight on one actor: one running, one queued behind it
CRASHED = "the worker process crashed on this document"
#: A shipped file's modification time (ns) and whether it was in the temporary folder.
Stamp = tuple[int, bool]
NEEDS_RAY = "the Ray executor needs Ray: pip install -e '.[ray]' (or `scripts/setup.sh`)"


class StagesActor:
    """What runs in one Ray actor: the plan's stages, opened once (when first needed), applied to
    batches of documents. Wrapped with `ray.remote` by `stream` (Ray is imported lazily)."""

    def __init__(self, plan: Plan, torch_threads: int) -> None:
        # Ctrl-C is the driver's to handle: it stops the job between documents
        with suppress(ValueError):  # (not the main thread: nothing to ignore)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        worker.init_worker(plan, torch_threads, in_process=True)
        from ingestflow.offline import quiet_libraries

        quiet_libraries()  # as in a local worker process: the job record says what matters
        self.spool = _spool_root()
        self.spool.mkdir(parents=True, exist_ok=True)
        _sweep(self.spool)

    def process(
        self, docs: list[Document], stamps: list[Stamp | None], trace: bool, start: int
    ) -> list[worker.DocResult]:
        """`worker.process_batch` over the batch. A document shipped as bytes that was a file is
        written to a local spool file first, with the file's modification time, so its elements
        carry the same metadata (`last_modified`) as with the local executor. The spool is not
        under the temporary folder, where the library leaves out some types' file time, unless
        the driver's file was there too."""
        with (
            tempfile.TemporaryDirectory(prefix=f"{os.getpid()}-", dir=self.spool) as spool,
            tempfile.TemporaryDirectory(prefix="ingestflow-ray-") as temp,
        ):
            for index, (doc, stamp) in enumerate(zip(docs, stamps, strict=True)):
                if stamp is None or doc.data is None:
                    continue
                mtime, in_temp = stamp
                folder = temp if in_temp else spool
                path = Path(folder, str(index), Path(doc.filename).name or "document")
                path.parent.mkdir()
                path.write_bytes(doc.data)
                os.utime(path, ns=(mtime, mtime))
                doc.path, doc.data = path, None
            return worker.process_batch(docs, trace, start)


def _spool_root() -> Path:
    """Where actors write the documents they receive as bytes: `$INGESTFLOW_CACHE/ray-spool`."""
    from ingestflow.stages.minilm_onnx import cache_dir

    return cache_dir() / "ray-spool"


def _sweep(spool: Path) -> None:
    """Remove the spool folders of actors that died on this machine (named `PID-…`)."""
    import psutil

    for folder in spool.iterdir():
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


@dataclass(eq=False)
class _Call:
    """A batch for an actor: documents as the driver holds them (with their paths), and whether
    it is one document retried alone after its actor died."""

    docs: list[Document]
    start: int
    alone: bool = False


@dataclass(eq=False)
class _Slot:
    """One actor of the pool and the batches it has in flight."""

    actor: Any
    load: int = 0


def stream(runner: JobRunner) -> None:
    """Run every batch of the runner's source on Ray actors; results go through the runner."""
    try:
        import ray
    except ImportError as exc:
        raise EnvironmentProblem(NEEDS_RAY) from exc
    import psutil

    opts = runner.opts
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with _quiet(ray):
        sigterm = _sigterm()
        try:
            if opts.ray_address:
                ray.init(address=opts.ray_address, log_to_driver=False, configure_logging=False)
            else:  # a local cluster for this run
                ray.init(
                    num_cpus=opts.worker_count(),
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = opts.ray_address or "a local Ray cluster"
            _reap([p for p in psutil.Process().children(recursive=True) if p.pid not in before])
            hint = ""
            if str(opts.ray_address).startswith("ray://") and "RAY_AUTH_MODE" not in os.environ:
                hint = " (a cluster with token authentication needs RAY_AUTH_MODE=token here)"
            raise EnvironmentProblem(
                f"could not reach {where}: {worker.reason(exc)}{hint}"
            ) from exc
        finally:  # `ray.init` installs its own SIGTERM handler: the runner's stops the job cleanly
            if sigterm is not None:
                signal.signal(signal.SIGTERM, sigterm)
        try:
            _Pool(ray, runner).run()
        finally:
            # the local cluster's processes (GCS, raylet, their workers): none outlives the run
            started = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
            ray.shutdown()
            _reap(started)
            with suppress(OSError):  # what the actors that died on this machine left
                _sweep(_spool_root())


@contextmanager
def _quiet(ray: Any) -> Iterator[None]:
    """Keep Ray's own lines off the terminal during the run (what matters is in the job record:
    a dead worker's "(raylet) A worker died..." would land in `--json` output)."""
    import logging

    ray_logger = logging.getLogger("ray")
    level = ray_logger.level
    ray_logger.setLevel(logging.ERROR)
    module = getattr(getattr(ray, "_private", None), "worker", None)  # no public switch for it
    printer = getattr(module, "print_to_stdstream", None)
    if module is not None and printer is not None:
        module.print_to_stdstream = lambda data, ignore_prefix=False: None
    try:
        yield
    finally:
        ray_logger.setLevel(level)
        if module is not None and printer is not None:
            module.print_to_stdstream = printer


def _sigterm() -> Any:
    """This thread's SIGTERM handler, or None when signals are not this thread's to set."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGTERM)


class _Pool:
    """The actors, the batches in flight, and the batches waiting for a slot."""

    def __init__(self, ray: Any, runner: JobRunner) -> None:
        self.ray = ray
        self.runner = runner
        opts = runner.opts
        if opts.ray_address:  # one actor a CPU of the cluster: more would wait for one forever
            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            workers = min(opts.workers or cpus, cpus)
        else:
            workers = opts.worker_count()
        threads = 1 if opts.ray_address else max(1, (os.cpu_count() or 1) // workers)
        options = {"torch_threads": threads, **runner.plan.context.options}
        self.plan = replace(runner.plan, context=replace(runner.plan.context, options=options))
        self.threads = threads
        self.actor_class = ray.remote(StagesActor).options(
            num_cpus=1, max_restarts=0, max_task_retries=0
        )
        self.slots = [self._new_slot() for _ in range(workers)]
        self.pending: dict[Any, tuple[_Call, _Slot]] = {}
        self.queue: deque[_Call] = deque()
        self.shared_fs = os.environ.get(SHARED_FS_ENV, "").strip() == "1"

    def _new_slot(self) -> _Slot:
        return _Slot(self.actor_class.remote(self.plan, self.threads))

    def run(self) -> None:
        """Submit every batch (at most PER_ACTOR in flight an actor) and collect every result."""
        runner = self.runner
        try:
            for batch in runner._batches():
                runner._check_stop()
                runner._submitted(batch)
                self.queue.append(_Call(batch, runner._start(batch[0])))
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
        """Submit waiting batches, in order, while an actor has room (a retry needs an idle
        actor of its own, so that a crash it causes can only be its own)."""
        while self.queue:
            call = self.queue[0]
            if call.alone:
                free = [slot for slot in self.slots if slot.load == 0]
            else:
                free = [slot for slot in self.slots if slot.load < PER_ACTOR]
            if not free:
                return
            slot = min(free, key=lambda s: s.load)
            self.queue.popleft()
            slot.load += PER_ACTOR if call.alone else 1
            docs, stamps = self._shipped(call.docs)
            ref = slot.actor.process.remote(docs, stamps, self.runner.opts.trace, call.start)
            self.pending[ref] = (call, slot)

    def _shipped(self, docs: list[Document]) -> tuple[list[Document], list[Stamp | None]]:
        """The documents as sent: content as bytes (with the file's modification time and
        whether it is in the temporary folder), or as they are when the actors share the
        driver's file system or the content is not a file."""
        if self.shared_fs:
            return docs, [None] * len(docs)
        out: list[Document] = []
        stamps: list[Stamp | None] = []
        temp = tempfile.gettempdir()
        for doc in docs:
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
        return out, stamps

    def _drain(self) -> None:
        """Wait for one batch to finish (waking now and then to honour a stop), and handle it."""
        ray, runner = self.ray, self.runner
        ready: list[Any] = []
        while not ready:
            runner._check_stop()
            ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=0.2)
        for ref in ready:
            call, slot = self.pending.pop(ref)
            slot.load -= PER_ACTOR if call.alone else 1
            try:
                results: list[worker.DocResult] = ray.get(ref)
            except (
                ray.exceptions.RayActorError,
                ray.exceptions.WorkerCrashedError,
                ray.exceptions.OutOfMemoryError,
            ) as exc:
                if getattr(exc, "actor_init_failed", False):
                    raise EnvironmentProblem(f"a Ray actor could not start: {exc}") from None
                self._crashed(call, slot, exc)
                continue
            except ray.exceptions.RayTaskError as exc:  # the worker's own error, unwrapped
                cause = getattr(exc, "cause", None)
                raise (cause if isinstance(cause, Exception) else exc) from None
            for r, doc in zip(results, call.docs, strict=True):
                r.doc.path, r.doc.data = doc.path, None  # as the driver knows it, not the spool
            runner._collect(results)

    def _crashed(self, call: _Call, slot: _Slot, exc: Exception) -> None:
        """An actor died under a batch: replace it; retry each of the batch's documents alone,
        or record the document that was already alone as failed (out of memory when Ray's
        memory monitor says so)."""
        if slot in self.slots:
            self.slots[self.slots.index(slot)] = self._new_slot()
            self._kill(slot)
        if call.alone:
            node_id = self.runner.stats[0].node_id
            doc = call.docs[0]
            error = CRASHED
            if isinstance(exc, self.ray.exceptions.OutOfMemoryError):
                error = f"{CRASHED} ({OUT_OF_MEMORY})"
            self.runner._collect(
                [worker.DocResult(doc, ok=False, error=error, failed_node=node_id)]
            )
            return
        retries = [_Call([doc], call.start, alone=True) for doc in call.docs]
        self.queue.extendleft(reversed(retries))

    def _kill(self, slot: _Slot) -> None:
        with suppress(Exception):  # already gone
            self.ray.kill(slot.actor, no_restart=True)


def _reap(processes: list[Any], timeout: float = 10.0) -> None:
    """Wait for the local cluster's processes to end after `ray.shutdown()`; kill what remains
    (no raylet, GCS or worker outlives the run)."""
    import psutil

    _, alive = psutil.wait_procs(processes, timeout=timeout)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(alive, timeout=5)
