"""Run a Plan as a Job: stream documents from the source through worker processes to the
destination, with bounded queues, per-document failure isolation and a job record."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ingestflow.batching import bounded_batches
from ingestflow.connectors.base import Destination, Source
from ingestflow.elements import Document
from ingestflow.errors import IngestflowError
from ingestflow.runner import events, pools, resume, telemetry, worker
from ingestflow.runner.budget import DocBudget
from ingestflow.runner.deletions import Deletions
from ingestflow.runner.enrichment import EnrichmentTally
from ingestflow.runner.plan import Plan
from ingestflow.runner.stopping import Stopper
from ingestflow.stages.base import Stage
from ingestflow.store.jobs import FileResult, NodeStats, Workspace

ProgressFn = events.Listener  # what hears the run's progress (runner.events)


@dataclass
class RunOptions:
    """How to run: worker count, tracing, batching, and the workflow's identity in the store."""

    workers: int = 0  # 0: one per core
    trace: bool = False
    batch_docs: int = 4  # documents per task (the embedder batches across them)
    batch_bytes: int = 256 << 10  # a larger document is a task of its own
    lookahead: int = 32  # documents read ahead to start the largest first
    workflow_id: str = "local"
    job_type: str = "ephemeral"
    destination_key: str = ""
    output_dir: str | None = None
    job_id: str | None = None  # a SCHEDULED job already recorded (by the service) to run
    reuse: Any = None  # a runner.reuse.Reuse: start documents from earlier node outputs
    doc_timeout: float | None = 1800.0  # seconds a document may spend in one node
    executor: str = "local"  # "local" (worker processes) or "ray" (runner.ray_executor)
    ray_address: str | None = None  # None: a local Ray cluster for the run; "auto", "ray://…"
    preload: bool = False  # workers forked from a preloaded server where it pays (runner.preload)
    source_key: str | None = None  # what was listed (runner.deletions); None: uploads
    keep_deleted: bool = False  # keep what left the source in the destination
    resume: bool = False  # job_id is an interrupted or stopped job, continued (runner.resume)
    run_args: dict[str, Any] | None = None  # kept with a new job, to resume it (service.resume)
    expected: int | None = None  # documents the source said it holds, when it could count them

    def worker_count(self) -> int:
        """Workers to start: the given count, or one per available core."""
        return self.workers or len(os.sched_getaffinity(0))


class JobRunner:
    """One run of a plan. `run()` returns the job record."""

    def __init__(
        self,
        plan: Plan,
        source: Source,
        destination: Destination,
        workspace: Workspace,
        options: RunOptions,
        progress: ProgressFn | None = None,
    ) -> None:
        if options.doc_timeout:
            plan = _with_options(plan, {**plan.context.options, "doc_timeout": options.doc_timeout})
        self.plan = plan
        self.source = source
        self.destination = destination
        self.ws = workspace
        self.opts = options
        self.progress: events.Listener = progress or events.ignore
        self.stats = [NodeStats(n.id, n.name, n.type, n.subtype) for n in plan.nodes]
        self.settings_hash = plan.settings_hash(options.destination_key)
        self.workflow_key = f"{options.workflow_id}:{plan.workflow.name}"
        self.seq = 0
        self.counts = {"SUCCESS": 0, "FAILED": 0, "SKIPPED": 0, "elements": 0}
        self.found = 0  # documents the source listed so far
        self._paged: set[str] = set()  # long documents whose pages were counted range by range
        self.job_id = ""
        self.stopper = Stopper(lambda: self.progress(events.StopRequested()))
        self._live: ProcessPoolExecutor | None = None  # the pool whose workers run now
        self.notes: list[str] = []  # what stages say about the whole job (at precheck)
        stages = plan.stages()
        slow = any(stage.slow_per_document for stage in stages)
        self.enrichment = EnrichmentTally(stages)
        self._batch_docs = 1 if slow else options.batch_docs  # balance seconds-long documents
        self._fan_at: int | None = None
        self._dominant: set[int] = set()  # ids of documents that are most of the work in view
        self._resumed: dict[str, Any] = {}  # document id -> runner.reuse.Resume
        self._context: Any = None  # the fork server's context when the workers are preloaded
        self.deletions = Deletions.for_run(self)
        self.earlier: Any = None  # a runner.resume.Earlier: what the job did before a resume

    # --- public ---------------------------------------------------------------------------
    def precheck(self) -> None:
        """Check every stage, the source and the destination before any document moves."""
        for stage in self.plan.stages():
            stage.precheck()
            self.notes.extend(getattr(stage, "job_notes", []))
        self.source.precheck()
        self.destination.precheck(self.plan.embed_dimension)

    def run(self) -> dict[str, Any]:
        """Create the job, precheck, stream every document, and return the job record.

        The first Ctrl-C stops the job cleanly between documents (STOPPED, finished documents
        kept); a second one stops it at once."""
        from ingestflow.spec.record import mask_secrets

        info = {
            "output_dir": self.opts.output_dir,
            "trace": self.opts.trace,
            "workflow": mask_secrets(self.plan.workflow.model_dump(mode="json")),
            **({"run": self.opts.run_args} if self.opts.run_args else {}),
        }
        ran_before = 0.0  # a resumed job's runtime goes on from where it ended
        if self.opts.job_id:
            from ingestflow.store.jobs import process_owner

            self.job_id = self.opts.job_id
            self.ws.set_owner(self.job_id, process_owner())
            ran_before = resume.restore(self) if self.opts.resume else 0.0
            self.ws.update_job(self.job_id, nodes=self.stats)
        else:
            self.job_id = self.ws.create_job(
                self.opts.workflow_id, self.plan.workflow.name, self.opts.job_type, self.stats, info
            )
        started = time.perf_counter() - ran_before
        status, message = "COMPLETED", None
        # the stop handlers, from the stream until the job is recorded (a precheck is cut short
        # by the first Ctrl-C, as before)
        with ExitStack() as signals:
            try:
                self._begin(started)
                signals.enter_context(self.stopper.installed())
                try:
                    self._stream()
                    if self.deletions is not None:  # only after the whole listing went through
                        self.deletions.apply(self)
                except KeyboardInterrupt:
                    status, message = "STOPPED", "finished documents were kept"
                except Exception as exc:
                    self._finish(
                        "FAILED", "FAILED", started, f"the run stopped: {worker.reason(exc)}"
                    )
                    raise
            finally:
                self.stopper.wind_down()
                _close_quietly(self.destination, self.source)
                if self.opts.preload:  # a server this run started, even half-way, is stopped
                    from ingestflow.runner import preload

                    with suppress(Exception):  # must not hide the run's own outcome
                        preload.stop()
            return self._conclude(status, message, started)

    def _begin(self, started: float) -> None:
        """Preload and precheck (a failure or a Ctrl-C here is recorded in the job), then mark
        the job in progress."""
        try:
            self._preload()  # loads in the background while the prechecks run
            self.precheck()
        except KeyboardInterrupt:
            self._finish("STOPPED", "STOPPED", started, "stopped by the user before it began")
            raise
        except IngestflowError as exc:
            self._finish("FAILED", "FAILED", started, str(exc))
            raise
        except Exception as exc:  # a bug or a broken install: the job says so in one line
            self._finish("FAILED", "FAILED", started, f"precheck: {worker.reason(exc)}")
            raise
        self.ws.update_job(self.job_id, status="IN_PROGRESS", processing_status="IN_PROGRESS")
        loading = tuple(_loading(self.plan))
        self.progress(events.JobStarted(self.job_id, self.opts.worker_count(), loading))

    def _conclude(self, status: str, message: str | None, started: float) -> dict[str, Any]:
        """Record the job's outcome, with what the run has to say about it; the job record."""
        if status == "COMPLETED":
            self.notes.extend(self.enrichment.notes())
        reuse = self.opts.reuse
        if reuse is not None:
            said = reuse.summary()
            if said:
                self.notes.append(said)
            if reuse.cache is not None:
                with suppress(OSError):  # a cache that cannot be pruned now is pruned next time
                    reuse.cache.prune()
        notes = [
            *self.notes,
            *getattr(self.source, "warnings", []),
            *getattr(self.source, "skipped", []),
        ]
        if notes:
            message = "; ".join(filter(None, [message, *notes]))
        processing = self._processing_status(status)
        if status == "COMPLETED" and processing == "FAILED":
            status = "FAILED"
        if status == "STOPPED":  # what was found, done and left, not only what was written
            message = f"{self.tally().stopped()}; {message}"
        self._finish(status, processing, started, message)
        self._publish()
        self.progress(events.JobFinished(self.job_id, status, self.tally(), self.node_counts()))
        return self.ws.job_record(self.job_id)

    def _finish(self, status: str, processing: str, started: float, message: str | None) -> None:
        runtime = time.perf_counter() - started
        self.ws.update_job(
            self.job_id,
            status=status,
            processing_status=processing,
            runtime_s=runtime,
            message=message,
            nodes=self.stats,
        )
        if telemetry.enabled():  # spans only when a collector is configured
            note = telemetry.export_job(self.ws.job_record(self.job_id), runtime)
            if note:
                self.ws.update_job(self.job_id, message="; ".join(filter(None, [message, note])))

    def _check_stop(self) -> None:
        self.stopper.check()

    # --- streaming ------------------------------------------------------------------------
    def _documents(self) -> Iterator[Document]:
        """The source's documents that need processing (failed listings and unchanged documents
        are recorded here and not passed on)."""
        for doc in self.source.documents():
            if self.deletions is not None:
                self.deletions.seen(doc)
            if self.earlier is not None and self.earlier.done(doc):
                continue  # written by this job before it was resumed
            self.found += 1
            self.progress(events.DocumentsFound(self.tally()))
            if doc.error is not None:
                self._record(
                    FileResult(
                        doc.id,
                        doc.filename,
                        "FAILED",
                        error=f"source: {doc.error}",
                        warnings=doc.warnings,
                    )
                )
                continue
            if not self.plan.workflow.reprocess_all and self._unchanged(doc):
                continue
            if self.opts.reuse is not None:
                resume = self.opts.reuse.lookup(doc)
                if resume is not None:
                    doc.elements = resume.elements
                    doc.warnings = list(resume.notes.get("warnings") or [])
                    doc.stats = dict(resume.notes.get("stats") or {})
                    self._resumed[doc.id] = resume
            yield doc

    def _batches(self) -> Iterator[list[Document]]:
        """Batches for the workers, largest documents first within a bounded look-ahead window
        (so a long document starts early instead of holding one core at the end). Documents over
        `batch_bytes` go alone; small ones are grouped so the embedder batches across them."""
        window: list[Document] = []
        for doc in self._documents():
            window.append(doc)
            if len(window) >= self.opts.lookahead:
                yield from self._group(window)
                window = []
        yield from self._group(window)

    def _start(self, doc: Document) -> int:
        """The index of the first stage this document runs (after reused outputs)."""
        resume = self._resumed.get(doc.id)
        return resume.start if resume is not None else 0

    def _group(self, window: list[Document]) -> Iterator[list[Document]]:
        """Batches of documents that start at the same stage, largest first."""
        starts = sorted({self._start(doc) for doc in window})
        for start in starts:
            yield from self._group_from([d for d in window if self._start(d) == start])

    def _group_from(self, window: list[Document]) -> Iterator[list[Document]]:
        sized = sorted(((doc, _size(doc)) for doc in window), key=lambda p: p[1], reverse=True)
        total = sum(size for _, size in sized)
        # a document that is most of the work in view gets its embedding spread over the
        # workers; otherwise the other documents keep them busy and spreading only costs
        self._dominant = {
            id(doc) for doc, size in sized if size >= self.opts.batch_bytes and 2 * size > total
        }
        return bounded_batches(sized, self._batch_docs, self.opts.batch_bytes)

    def _unchanged(self, doc: Document) -> bool:
        try:
            doc.version = doc.version or doc.content_hash()
        except OSError:
            return False  # unreadable: let the partitioner report it
        if self.ws.unchanged(
            self.workflow_key, doc.record_id, doc.version, self.settings_hash
        ) and self.destination.has(doc) in (True, None):
            self._record(
                FileResult(
                    doc.id, doc.filename, "SKIPPED", error="unchanged since its last successful run"
                )
            )
            return True
        return False

    def _stream(self) -> None:
        if self.opts.executor == "ray":
            from ingestflow.runner import ray_executor

            ray_executor.stream(self)
            return
        workers = self.opts.worker_count()
        if workers <= 1:
            worker.init_worker(self.plan, in_process=True)
            try:
                for batch in self._batches():
                    self._check_stop()
                    self._submitted(batch)
                    start = self._start(batch[0])
                    self._collect(worker.process_batch(batch, self.opts.trace, start))
                    self._check_stop()
            finally:
                worker.close_worker()
            return
        options = dict(self.plan.context.options)
        threads = max(1, (os.cpu_count() or 1) // workers)
        options.setdefault("torch_threads", threads)
        plan = _with_options(self.plan, options)
        pool = self._pool(plan, workers, threads)
        stages = plan.stages()
        first_stage = stages[0]  # asked, here, how to split a long document
        # a long document stops before the batched stage (the embedder), whose work is then
        # spread over the workers in slices of its elements
        self._fan_at = next((i for i, st in enumerate(stages) if st.batched and i > 0), None)
        pending: dict[Future[Any], _Task] = {}
        limit = workers * 2  # bounded in-flight work: memory does not grow with the corpus
        try:
            for batch in self._batches():
                self._check_stop()
                self._submitted(batch)
                start = self._start(batch[0])
                stop = self._long_stop(batch)
                tasks = _tasks(batch, first_stage, workers, stop, start, options.get("doc_timeout"))
                for task in tasks:
                    if task.part == 0:
                        self._split_progress(task)
                    while len(pending) >= limit:
                        pool = self._drain(pool, pending, plan, workers, threads)
                    pending[task.submit(pool, self.opts.trace)] = task
            while pending:
                pool = self._drain(pool, pending, plan, workers, threads)
        except BaseException:
            self.stopper.wind_down()  # a second Ctrl-C must not leave workers running
            pools.terminate(self._live or pool)  # the pool a retry replaced this one with
            raise
        pools.terminate(pool)  # idle now, with nothing to flush: no need to wait for their teardown

    def _preload(self) -> None:
        """Start a fork server that loads the workers' libraries once, where it pays."""
        from ingestflow.runner import preload

        if not self.opts.preload or self.opts.executor != "local":
            preload.stop()  # one started early on a guess (`preload.early`) is not wanted
            return
        try:
            if preload.spec(self.plan, self.opts.worker_count()) is None:
                preload.stop()
                return  # no server: no need to look at the files
            suffixes = getattr(self.source, "suffixes", lambda: None)()
            wanted = preload.spec(self.plan, self.opts.worker_count(), suffixes)
            if wanted is not None:
                self._context = preload.start(wanted)
        except Exception:  # an optimisation only: workers are spawned instead
            self._context = None

    def _pool(self, plan: Plan, workers: int, threads: int) -> ProcessPoolExecutor:
        from ingestflow.runner.mainless import mainless

        # the workers must not import the user's `__main__` (a script that runs at module level)
        ctx = mainless(self._context or multiprocessing.get_context("spawn"))
        self._live = ProcessPoolExecutor(
            workers, mp_context=ctx, initializer=worker.init_worker, initargs=(plan, threads)
        )
        return self._live

    def _drain(
        self,
        pool: ProcessPoolExecutor,
        pending: dict[Future[Any], _Task],
        plan: Plan,
        workers: int,
        threads: int,
    ) -> ProcessPoolExecutor:
        done: set = set()
        while not done:  # wake up now and then to honour a stop request
            self._check_stop()
            done, _ = wait(list(pending), timeout=0.2, return_when=FIRST_COMPLETED)
        broken: list[_Task] = []
        follows: list[_Task] = []
        for future in done:
            task = pending.pop(future)
            try:
                result = future.result()
            except BrokenProcessPool:
                broken.append(task)
                continue
            spare = len(pending) < workers  # workers would idle: spread a long document
            follows += self._done(task, result, workers if spare else 1)
        if not broken:
            for follow in follows:
                pending[follow.submit(pool, self.opts.trace)] = follow
            return pool
        # Workers ended by a stop (SIGTERM to the process group ends them too) are not a crash:
        # nothing is retried after a stop.
        self._check_stop()
        # A worker died (a library crashed on some file): retry each document (or page range)
        # alone in a fresh pool, so only the document that kills a worker fails.
        broken += [pending.pop(f) for f in list(pending)]
        pool.shutdown(wait=False, cancel_futures=True)
        pool = self._pool(plan, workers, threads)
        retries = [alone for task in broken for alone in task.alone()] + follows
        while retries:
            task = retries.pop(0)
            future = task.submit(pool, self.opts.trace)
            workers_now = pools.processes(pool)
            try:
                result = self._result(future)
            except BrokenProcessPool:
                pools.settled(pool)
                result = task.crashed(self.stats[0].node_id, pools.exit_cause(workers_now))
                pool.shutdown(wait=False, cancel_futures=True)
                pool = self._pool(plan, workers, threads)
            retries += self._done(task, result, 1)
        return pool

    def _result(self, future: Future[Any]) -> Any:
        """The future's result, waited for a slice at a time to honour a stop request."""
        while True:
            self._check_stop()
            with suppress(TimeoutError):
                return future.result(timeout=0.2)

    def _long_stop(self, batch: list[Document]) -> int | None:
        """Where a long document's first task stops (before the embedder), or None."""
        if self._fan_at is None or len(batch) != 1 or self._start(batch[0]) >= self._fan_at:
            return None
        return self._fan_at if id(batch[0]) in self._dominant else None

    def _done(self, task: _Task, result: Any, workers: int) -> list[_Task]:
        """Record a finished task; the tasks it leads to (a long document's join after its last
        page range, its embedding slices after its first stages: as many as `workers` can
        share — 1 when the other workers have enough queued work)."""
        split = task.split
        if task.fan is not None:
            return self._fan_done(task, result)
        if split is not None and task.part >= 0:
            split.parts[task.part] = result
            split.budget.charge(result.seconds)
            self._split_progress(task)
            if any(part is None for part in split.parts):
                return []
            failed = [p for p in split.parts if p.error is not None]
            if failed or split.budget.exceeded():  # its ranges together over --doc-timeout
                error = failed[0].error if failed else split.budget.over()
                self._collect([worker.DocResult(split.doc, False, error, self.stats[0].node_id)])
                return []
            return [_Task([split.doc], split, part=-1, stop=self._fan_at)]
        if split is not None:  # the join: the partitioner's time is its ranges' time too
            first = self.stats[0].node_id
            for r in result:
                if first in r.node_metrics:
                    r.node_metrics[first][2] += sum(p.seconds for p in split.parts)
        if task.stop is None:
            self._collect(result)
            return []
        follow: list[_Task] = []
        for r in result:  # the first stages are done: spread the embedding over the workers
            if not r.ok:
                self._collect([r])
                continue
            fan = _Fan(r, _slices(r.doc, workers))
            follow += [
                _Task([sub], start=task.stop, fan=fan, part=i) for i, sub in enumerate(fan.subs)
            ]
        return follow

    def _fan_done(self, task: _Task, result: Any) -> list[_Task]:
        fan = task.fan
        assert fan is not None
        (fan.results[task.part],) = result
        embedded = sum(len(g) for g, r in zip(fan.groups, fan.results, strict=True) if r)
        total = sum(len(g) for g in fan.groups)
        self.progress(events.ChunksEmbedded(fan.prior.doc.filename, embedded, total))
        if any(r is None for r in fan.results):
            return []
        prior, doc = fan.prior, fan.prior.doc
        subs: list[worker.DocResult] = fan.results
        failed = next((r for r in subs if not r.ok), None)
        doc.warnings += [w for r in subs for w in r.doc.warnings]
        for sub in subs:
            for node_id, (count_in, count_out, seconds) in sub.node_metrics.items():
                metrics = prior.node_metrics.setdefault(node_id, [0, 0, 0.0])
                metrics[0] += count_in
                metrics[1] += count_out
                metrics[2] += seconds
        if failed is None:
            doc.elements = fan.restore([r.doc.elements for r in subs])
            for node_id in subs[0].node_outputs:
                outputs = [r.node_outputs.get(node_id, []) for r in subs]
                prior.node_outputs[node_id] = fan.restore(outputs)
                prior.node_notes[node_id] = {
                    "warnings": list(doc.warnings),
                    "stats": dict(doc.stats),
                }
        if failed is not None:
            prior.ok, prior.error, prior.failed_node = False, failed.error, failed.failed_node
        self._collect([prior])
        return []

    def _split_progress(self, task: _Task) -> None:
        """Tell the progress display how far a long document spread over the workers is."""
        assert task.split is not None
        split = task.split
        done = sum(p.pages[1] - p.pages[0] + 1 for p in split.parts if p is not None)
        part = split.parts[task.part] if task.part >= 0 else None
        if part is not None and part.error is None and split.unit == "pages":
            first, last = split.ranges[task.part]
            self.stats[0].pages += last - first + 1  # live: the record shows ranges as they end
            self._paged.add(split.doc.id)
            self._publish()
        pages = split.ranges[-1][1]
        self.progress(
            events.PagesPartitioned(split.doc.filename, done, pages, split.unit, len(split.ranges))
        )

    # --- bookkeeping ----------------------------------------------------------------------
    def _submitted(self, batch: list[Document]) -> None:
        for stat in self.stats:
            stat.ready += len(batch)
        self.stats[0].in_progress += len(batch)

    def _collect(self, results: list[worker.DocResult]) -> None:
        for r in results:
            doc = r.doc
            self.stats[0].in_progress -= 1
            resume = self._resumed.pop(doc.id, None)
            if r.ok and self.opts.reuse is not None:
                self.opts.reuse.store(doc, r.node_outputs, r.node_notes)
            if resume is not None:  # the reused nodes' outputs, as if they had run
                r.node_outputs = {**resume.outputs, **r.node_outputs} if self.opts.trace else {}
                count_in = 0
                for stat in self.stats[: resume.start]:
                    stat.reused += 1
                    count_out = len(resume.outputs.get(stat.node_id, []))
                    r.node_metrics[stat.node_id] = [count_in, count_out, 0.0]
                    count_in = count_out
            warnings = list(doc.warnings)
            error = r.error
            if r.ok:
                try:
                    warnings += self.destination.write(doc)
                except Exception as exc:  # a destination failure fails this document alone
                    error = f"destination: {worker.reason(exc)}"
            ok = error is None
            self._count_nodes(r, ok)
            for stat in self.stats:
                metrics = r.node_metrics.get(stat.node_id)
                if metrics is not None:
                    stat.elements_in += int(metrics[0])
                    stat.elements_out += int(metrics[1])
                    stat.seconds += metrics[2]
            if doc.id not in self._paged:  # a long document's ranges were counted as they ended
                self.stats[0].pages += int(doc.stats.get("pages", 0))
            self._paged.discard(doc.id)
            if ok:
                self.enrichment.add(doc)
                for stat in self.stats:
                    stat.enriched = self.enrichment.acted_on.get(stat.node_name, 0)
                pages = self.stats[0].pages_by_strategy
                for strategy, count in doc.stats.get("pages_by_strategy", {}).items():
                    pages[strategy] = pages.get(strategy, 0) + count
            if self.opts.trace:
                notes = {**(resume.node_notes if resume else {}), **r.node_notes}
                for node_id, elements in r.node_outputs.items():
                    self.ws.save_node_output(
                        self.job_id, node_id, doc.id, elements, notes.get(node_id)
                    )
            output = None
            if ok and hasattr(self.destination, "target"):
                output = str(self.destination.target(doc))
            self._record(
                FileResult(
                    doc.id,
                    doc.filename,
                    "SUCCESS" if ok else "FAILED",
                    error=error,
                    elements=len(doc.elements) if ok else 0,
                    output=output,
                    warnings=warnings,
                    version=doc.version,
                )
            )
            if ok and doc.version is not None:
                where = (doc.filename, self.opts.source_key, self.opts.destination_key or None)
                self.ws.mark_processed(
                    self.workflow_key,
                    doc.record_id,
                    doc.version,
                    self.settings_hash,
                    self.job_id,
                    where,
                )
        self.ws.update_job(self.job_id, nodes=self.stats)
        self._publish()
        self.progress(events.NodeProgress(self.node_counts(), self.tally()))

    def tally(self) -> events.Tally:
        """The job's documents so far."""
        c = self.counts
        found = max(self.found, self.opts.expected or 0, c["SUCCESS"] + c["FAILED"] + c["SKIPPED"])
        pages = self.stats[0].pages if self.stats else 0
        return events.Tally(found, c["SUCCESS"], c["FAILED"], c["SKIPPED"], c["elements"], pages)

    def node_counts(self) -> tuple[events.NodeCount, ...]:
        """Every node's counts so far."""
        return events.node_counts(self.stats)

    def _publish(self) -> None:
        """The live progress into the job record (the server's job details, the web UI)."""
        from dataclasses import asdict

        tally = self.tally()
        self.ws.set_progress(self.job_id, {**asdict(tally), "left": tally.left})

    def _count_nodes(self, r: worker.DocResult, ok: bool) -> None:
        failed_at = r.failed_node
        for stat in self.stats:
            stat.ready -= 1
            if failed_at == stat.node_id:
                stat.failure += 1
                failed_at = "after"
            elif failed_at == "after":
                continue
            else:
                stat.success += 1

    def _record(self, result: FileResult) -> None:
        if self.earlier is not None:  # a document retried on resume replaces its earlier result
            self.earlier.replaced(result.file_id, self.counts)
        self.seq += 1
        self.counts[result.status] += 1
        self.counts["elements"] += result.elements
        self.ws.record_file(self.job_id, result, self.seq)
        tally = self.tally()
        if result.status == "SUCCESS":
            self.progress(events.DocumentWritten(result, tally))
        elif result.status == "FAILED":
            self.progress(events.DocumentFailed(result, tally))
        else:
            self.progress(events.DocumentSkipped(result, tally))

    def _processing_status(self, status: str) -> str:
        if status == "STOPPED":
            return "STOPPED"
        done, failed = self.counts["SUCCESS"], self.counts["FAILED"]
        if failed == 0:
            return "SUCCESS"
        # The service counts 90-99% processed as finished with errors, below 90% as failed.
        return "COMPLETED_WITH_ERRORS" if done / (done + failed) >= 0.9 else "FAILED"


@dataclass(eq=False)
class _Split:
    """A long document partitioned as page ranges on several workers, then joined."""

    doc: Document
    ranges: list[tuple[int, int]]
    parts: list[Any]  # worker.PartResult, or None while the range runs
    unit: str = "pages"  # what the ranges count ("lines" of a long text)
    budget: DocBudget = field(default_factory=lambda: DocBudget(None))  # --doc-timeout


@dataclass(eq=False)
class _Task:
    """Work for a worker: a batch of documents, one page range of a long document (`part` ≥ 0),
    or the join of a long document's ranges and its remaining stages (`part` = -1)."""

    docs: list[Document]
    split: _Split | None = None
    part: int = -1  # a page range of `split`, or a slice of `fan`
    stop: int | None = None  # run the stages before this one only (a long document)
    start: int = 0  # run the stages from this one (a slice of a long document)
    fan: _Fan | None = None

    def submit(self, pool: ProcessPoolExecutor, trace: bool) -> Future[Any]:
        if self.split is None:
            return pool.submit(worker.process_batch, self.docs, trace, self.start, self.stop)
        budget = replace(self.split.budget)  # what the ranges finished so far left
        if self.part >= 0:
            pages = self.split.ranges[self.part]
            return pool.submit(worker.process_part, self.split.doc, pages, budget)
        parts = [result.part for result in self.split.parts]
        return pool.submit(worker.process_joined, self.split.doc, parts, trace, self.stop, budget)

    def alone(self) -> list[_Task]:
        """This task as tasks of one document each (to find the one that crashes a worker)."""
        if self.split is not None or self.fan is not None or len(self.docs) == 1:
            return [self]
        return [_Task([doc], stop=self.stop, start=self.start) for doc in self.docs]

    def crashed(self, node_id: str, cause: str = "") -> Any:
        """The result of a task whose worker process died (`cause`: how, when known)."""
        how = f" ({cause})" if cause else ""
        if self.split is not None and self.part >= 0:
            first, last = pages = self.split.ranges[self.part]
            where = f"{self.split.unit} {first}-{last}"
            return worker.PartResult(pages, error=f"the worker process crashed on {where}{how}")
        return [
            worker.DocResult(
                doc,
                ok=False,
                error=f"the worker process crashed on this document{how}",
                failed_node=node_id,
            )
            for doc in self.docs
        ]


@dataclass(eq=False)
class _Fan:
    """A long document's last stage (the embedder) spread over the workers: its elements in
    contiguous slices, each a task, put back together in order."""

    prior: worker.DocResult  # the document after the stages before
    groups: list[list[int]]  # the element positions of each slice
    subs: list[Document] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        doc = self.prior.doc
        self.subs = [
            replace(doc, elements=[doc.elements[i] for i in group], warnings=[], stats={})
            for group in self.groups
        ]
        self.results = [None] * len(self.subs)

    def restore(self, sliced: list[list[Any]]) -> list[Any]:
        """The slices' elements back in the document's order."""
        out: list[Any] = [None] * sum(len(group) for group in self.groups)
        for group, items in zip(self.groups, sliced, strict=True):
            for position, item in zip(group, items, strict=True):
                out[position] = item
        return out


#: Elements per embedding slice of a long document, at least.
FAN_SLICE = 32


def _slices(doc: Document, workers: int) -> list[list[int]]:
    """Element positions of up to two slices a worker, at least FAN_SLICE elements each. Each
    slice takes texts of similar length (the embedder pads a batch to its longest text: slices
    cut in document order would pad short texts to long ones)."""
    elements = doc.elements
    count = max(1, min(workers * 2, len(elements) // FAN_SLICE))
    order = sorted(range(len(elements)), key=lambda i: len(elements[i].get("text") or ""))
    size = -(-len(order) // count) if order else 1
    groups = [sorted(order[i : i + size]) for i in range(0, len(order), size)]
    return groups or [[]]


def _tasks(
    batch: list[Document],
    first_stage: Stage,
    workers: int,
    stop: int | None = None,
    start: int = 0,
    limit: float | None = None,
) -> Iterator[_Task]:
    """A batch's tasks: a long document whose first stage splits it becomes one task per page
    range (its join follows when they are all done); the others stay together. `stop`: the
    batch is one long document whose first task stops before the embedder. `start`: the batch
    starts after reused outputs (nothing to split). `limit`: --doc-timeout, for the ranges of
    a document together."""
    if start > 0:
        yield _Task(list(batch), stop=stop, start=start)
        return
    whole: list[Document] = []
    for doc in batch:
        ranges = first_stage.page_ranges(doc, workers)
        if not ranges:
            whole.append(doc)
            continue
        unit = first_stage.range_unit(doc)
        budget = DocBudget(limit, f"{first_stage.name}: {doc.filename}", unit)
        split = _Split(doc, ranges, [None] * len(ranges), unit, budget)
        yield from (_Task([doc], split, part=index) for index in range(len(ranges)))
    if whole:
        yield _Task(whole, stop=stop)


def _loading(plan: Plan) -> list[str]:
    """What the workers load before the first document, in words (for the progress line)."""
    loads = (node.kind.loading(node.settings) for node in plan.nodes)  # the registry knows
    return [label for label in loads if label is not None]


def _close_quietly(*connectors: Source | Destination) -> None:
    """Close every connector, even when one of them fails to close."""
    for connector in connectors:
        try:
            connector.close()
        except Exception:  # closing must not hide the run's own outcome
            continue


def _size(doc: Document) -> int:
    if doc.data is not None:
        return len(doc.data)
    try:
        return doc.path.stat().st_size if doc.path else 0
    except OSError:
        return 0


def _with_options(plan: Plan, options: dict[str, Any]) -> Plan:
    return replace(plan, context=replace(plan.context, options=options))


def run_workflow(
    plan: Plan,
    source: Source,
    destination: Destination,
    workspace: Path,
    options: RunOptions,
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Run a plan from source to destination as a job in `workspace`; returns the job record."""
    ws = Workspace(workspace)
    try:
        return JobRunner(plan, source, destination, ws, options, progress).run()
    finally:
        ws.close()
