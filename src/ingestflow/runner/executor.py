"""Run a Plan as a Job: stream documents from the source through an executor's workers to the
destination, with bounded queues, per-document failure isolation and a job record.

The parts: `runner.job` records the job, `runner.admission` decides which documents run and in
what batches, `runner.tasks` plans the work as typed tasks, and an executor (`runner.executors`:
this process, a local process pool, or Ray) runs the tasks."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

from ingestflow.connectors.base import Destination, Source
from ingestflow.errors import IngestflowError, JobCancelled
from ingestflow.runner import events, worker
from ingestflow.runner.admission import Admission
from ingestflow.runner.deletions import Deletions
from ingestflow.runner.executors import registry
from ingestflow.runner.executors.base import Executor, OnResult
from ingestflow.runner.job import Job
from ingestflow.runner.options import RunOptions
from ingestflow.runner.plan import Plan
from ingestflow.runner.stopping import Stopper
from ingestflow.runner.tasks import EmbeddingSlice, PageRange, Planner, Task
from ingestflow.stages.base import RuntimeOptions
from ingestflow.store.jobs import Workspace

ProgressFn = events.Listener  # what hears the run's progress (runner.events)


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
        if options.doc_timeout:  # the workers' options are the runner's to set (RuntimeOptions)
            plan = _with_options(
                plan, replace(plan.context.options, doc_timeout=options.doc_timeout)
            )
        self.plan = plan
        self.source = source
        self.destination = destination
        self.ws = workspace
        self.opts = options
        self.progress: events.Listener = progress or events.ignore
        self.stopper = Stopper(lambda: self.progress(events.StopRequested()))
        self.stages = plan.stages()
        self.job = Job(plan, self.stages, destination, workspace, options, self.progress)
        self.stopper.cancelled = self.job.cancelled  # a cancel no signal could bring
        self.deletions = Deletions.for_run(self.job, plan, options)
        slow = any(stage.slow_per_document for stage in self.stages)
        batch_docs = 1 if slow else options.batch_docs  # balance seconds-long documents
        self.admission = Admission(
            self.job, source, destination, options, self.deletions, batch_docs
        )
        self._context: Any = None  # the fork server's context when the workers are preloaded

    @property
    def job_id(self) -> str:
        """The job's id (once `run` has created or taken it up)."""
        return self.job.job_id

    # --- public ---------------------------------------------------------------------------
    def precheck(self) -> None:
        """Check every stage, the source and the destination before any document moves."""
        for stage in self.stages:
            stage.precheck()
            self.job.notes.extend(getattr(stage, "job_notes", []))
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
        ran_before = self.job.open(info)
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
                        self.deletions.apply(self.job, self.source, self.stopper.check)
                except KeyboardInterrupt:
                    status, message = "STOPPED", "finished documents were kept"
                except Exception as exc:
                    self.job.finish(
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
            said = [*getattr(self.source, "warnings", []), *getattr(self.source, "skipped", [])]
            return self.job.conclude(status, message, started, said)

    def tally(self) -> events.Tally:
        """The job's documents so far."""
        return self.job.tally()

    def node_counts(self) -> tuple[events.NodeCount, ...]:
        """Every node's counts so far."""
        return self.job.node_counts()

    def _begin(self, started: float) -> None:
        """Preload and precheck (a failure or a Ctrl-C here is recorded in the job), then mark
        the job in progress."""
        job = self.job
        try:
            self._preload()  # loads in the background while the prechecks run
            self.precheck()
        except KeyboardInterrupt:
            job.finish("STOPPED", "STOPPED", started, "stopped by the user before it began")
            raise
        except IngestflowError as exc:
            job.finish("FAILED", "FAILED", started, str(exc))
            raise
        except Exception as exc:  # a bug or a broken install: the job says so in one line
            job.finish("FAILED", "FAILED", started, f"precheck: {worker.reason(exc)}")
            raise
        if not self.ws.begin_job(job.job_id):  # cancelled during the precheck: no document read
            job.finish("STOPPED", "STOPPED", started, "cancelled before it began")
            raise JobCancelled(
                f"job {job.job_id} was cancelled before it began (by `ingestflow jobs cancel`, "
                "the API or the web UI): no document was read"
            )
        self.progress(
            events.JobStarted(job.job_id, self.opts.worker_count(), tuple(loading(self.plan)))
        )

    # --- streaming ------------------------------------------------------------------------
    def _stream(self) -> None:
        """Every admitted document through the executor the options name."""
        with self._executor() as executor:
            self.job.notes.extend(getattr(executor, "notes", []))
            # a long document stops before the batched stage (the embedder), whose work is then
            # spread over the workers in slices of its elements (not with one worker)
            fan_at = None
            if executor.workers > 1:
                fan_at = next((i for i, st in enumerate(self.stages) if st.batched and i > 0), None)
            planner = Planner(
                self.stages[0],
                self.plan.nodes[0].id,
                executor.workers,
                fan_at,
                self.plan.context.options.doc_timeout,
            )
            executor.run(self._tasks(planner), self._on_result(planner))

    def _executor(self) -> Executor:
        """The executor the options name (`runner.executors.registry`), for this run's plan."""
        return registry.build(
            registry.Launch(
                self.plan,
                self.opts,
                self.stopper,
                self.source,
                self.destination,
                self.progress,
                loading(self.plan),
                self._context,
            )
        )

    def _tasks(self, planner: Planner) -> Iterator[Task]:
        """The admitted batches' tasks, in order; a stop request ends them between batches."""
        for batch in self.admission.batches():
            self.stopper.check()
            self.job.submitted(batch.docs)
            for task in planner.tasks(batch):
                if isinstance(task, PageRange) and task.index == 0:
                    self.job.ranged(task.split, None)
                yield task

    def _on_result(self, planner: Planner) -> OnResult:
        """What hears each finished task: progress, the documents it finished recorded, and
        the tasks it leads to."""

        def on_result(task: Task, result: Any, share: int) -> Sequence[Task]:
            step = planner.done(task, result, share)
            if isinstance(task, PageRange):
                self.job.ranged(task.split, task.index)
            elif isinstance(task, EmbeddingSlice):
                embedded, total = task.fan.embedded()
                name = task.fan.prior.doc.filename
                self.progress(events.ChunksEmbedded(name, embedded, total))
            if step.finished:
                self.job.collect(step.finished)
            return step.follows

        return on_result

    def _preload(self) -> None:
        """Start a fork server that loads the workers' libraries once, where it pays."""
        from ingestflow.runner import preload

        if not self.opts.preload or not registry.executor_type(self.opts.executor).preloads:
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


def loading(plan: Plan) -> list[str]:
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


def _with_options(plan: Plan, options: RuntimeOptions) -> Plan:
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
