"""A run's progress for the front ends: the runner's typed events (re-exported from
`runner.events`, which the front ends may not import), and `ProgressState`, a listener that folds
them into what a display shows: a headline (what the run is doing now) and a detail line (how far
it is, per node).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from ingestflow.errors import EnvironmentProblem, printable
from ingestflow.runner.events import (
    ChunksEmbedded,
    DocumentFailed,
    DocumentsFound,
    DocumentSkipped,
    DocumentWritten,
    Event,
    ExecutorStep,
    JobFinished,
    JobPrepared,
    JobStarted,
    Listener,
    NodeCount,
    NodeProgress,
    PagesPartitioned,
    StopRequested,
    Tally,
)

#: Seconds between two plain progress lines (output that is not a terminal); default 5.
INTERVAL_ENV = "INGESTFLOW_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 5.0


def line_interval() -> float:
    """Seconds between plain progress lines, from INGESTFLOW_PROGRESS_INTERVAL (default 5)."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise EnvironmentProblem(
            f"{INTERVAL_ENV}={raw!r} is not a number of seconds between progress lines: "
            "expected a number above 0 and at most 3600 (e.g. 5); unset it for the default"
        )
    return value


def _node_words(node: NodeCount) -> str | None:
    """One node's progress in words, or None before it has done anything."""
    if node.type == "partition" and node.pages:
        return f"{node.name}: {node.pages} page{'s' if node.pages != 1 else ''}"
    if node.type == "prompter":  # what it acted on, not every element it passed on
        plural = "s" if node.enriched != 1 else ""
        return f"{node.name}: {node.enriched} element{plural} enriched" if node.success else None
    if not node.elements_out:
        return None
    said = {
        "partition": "elements",
        "chunk": "chunks",
        "embed": "chunks embedded",
    }
    words = said.get(node.type, "elements")
    if node.elements_out == 1:
        words = words.replace("elements", "element").replace("chunks", "chunk")
    return f"{node.name}: {node.elements_out} {words}"


@dataclass
class ProgressState:
    """The run's progress so far, folded from its events (a listener: call it with each)."""

    total: int | None = None  # documents, when the source could count them
    job_id: str = ""
    loading: tuple[str, ...] = ()
    tally: Tally = field(default_factory=Tally)
    nodes: tuple[NodeCount, ...] = ()
    doing: str = "checking the workflow and the connectors"
    stage: str = "checking"  # changes when the run moves to another kind of work
    status: str | None = None  # the outcome, once finished
    stopping: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._take(event)

    def _take(self, event: Event) -> None:
        match event:
            case JobPrepared(total=total):
                self.total = total
            case JobStarted(job_id=job_id, loading=loading):
                self.job_id, self.loading = job_id, loading
                what = " and ".join(loading)
                said = f"loading {what}, reading the first documents" if what else ""
                self._now("starting", said)
            case ExecutorStep(step=step, doing=doing):
                self._now(step, doing)
            case DocumentsFound(tally=tally):
                self.tally = tally
            case PagesPartitioned(filename=name, done=done, total=total, unit=unit):
                shown = printable(name)  # no control character of a file name reaches a screen
                self._now("partitioning", f"partitioning {shown}: {done} of {total} {unit}")
            case ChunksEmbedded(filename=name, done=done, total=total):
                self._now("embedding", f"embedding {printable(name)}: {done} of {total} chunks")
            case (
                DocumentWritten(tally=tally)
                | DocumentFailed(tally=tally)
                | DocumentSkipped(tally=tally)
            ):
                self.tally = tally
                self._now("documents", "processing documents")
            case NodeProgress(nodes=nodes, tally=tally):
                self.nodes, self.tally = nodes, tally
            case StopRequested():
                self.stopping = True
                self._now("stopping", "stopping after the documents in progress")
            case JobFinished(status=status, tally=tally, nodes=nodes):
                self.status, self.tally, self.nodes = status, tally, nodes
                self._now("finished", status.lower())

    def _now(self, stage: str, doing: str) -> None:
        self.stage = stage
        self.doing = doing or stage

    @property
    def expected(self) -> int | None:
        """Documents to do, when known (the source's count, or those found so far)."""
        return self.total if self.total is not None else (self.tally.found or None)

    def headline(self) -> str:
        """What the run is doing now."""
        job = f"job {self.job_id[:8]}: " if self.job_id else ""
        return f"{job}{self.doing}"

    def detail(self) -> str:
        """How far it is: documents, then each node's count."""
        t = self.tally
        expected = self.expected
        of = f" of {expected}" if expected is not None else ""
        parts = [f"{t.done}{of} documents done ({t.written} written, {t.failed} failed)"]
        if t.skipped:
            parts.append(f"{t.skipped} unchanged")
        parts += [words for node in self.nodes if (words := _node_words(node))]
        return " · ".join(parts)

    def snapshot(self) -> tuple[str, str]:
        """The current step and both texts on one line (output that is not a terminal), read
        together."""
        with self._lock:
            return self.stage, f"{self.headline()} · {self.detail()}"


__all__ = [
    "ChunksEmbedded",
    "DocumentFailed",
    "DocumentSkipped",
    "DocumentWritten",
    "DocumentsFound",
    "Event",
    "ExecutorStep",
    "JobFinished",
    "JobPrepared",
    "JobStarted",
    "Listener",
    "NodeCount",
    "NodeProgress",
    "PagesPartitioned",
    "ProgressState",
    "StopRequested",
    "Tally",
    "line_interval",
]
