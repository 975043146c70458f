"""What a run tells its listeners while it goes: typed progress events and the listener protocol.

The runner emits these; the CLI's display, the Python API's `progress=` callback, the job record
and the web UI read them. Every event is a frozen dataclass: a listener matches on its class
(`match event: case DocumentWritten(): ...`), never on a string name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ingestflow.store.job_rows import FileResult, NodeStats


@dataclass(frozen=True)
class Tally:
    """The job's documents so far: found by the source, and what became of them."""

    found: int = 0  # documents the source listed so far (unchanged and unreadable ones too)
    written: int = 0
    failed: int = 0
    skipped: int = 0  # unchanged since their last successful run
    elements: int = 0  # output elements of the documents written
    pages: int = 0  # pages (or lines of a long text) partitioned, ranges of long documents too

    @property
    def done(self) -> int:
        """Documents finished, one way or another."""
        return self.written + self.failed + self.skipped

    @property
    def left(self) -> int:
        """Documents found and not finished (in progress, or not started)."""
        return max(0, self.found - self.done)

    def stopped(self) -> str:
        """What a stopped job found, did and left, in words."""
        return (
            f"stopped by the user after {self.done} of {self.found} documents found "
            f"({self.written} written, {self.failed} failed, {self.skipped} unchanged); "
            f"{self.left} left unprocessed"
        )


@dataclass(frozen=True)
class NodeCount:
    """One node's counts so far: documents through it, and elements it handed on."""

    name: str
    type: str
    success: int = 0
    failure: int = 0
    in_progress: int = 0
    elements_out: int = 0  # elements after it: chunks after a chunker, embedded after an embedder
    pages: int = 0  # a partitioner's pages
    enriched: int = 0  # an enrichment node's elements acted on (described, OCR'd, NER'd ...)


@dataclass(frozen=True)
class JobPrepared:
    """The run is checked and about to start; `total` documents when the source can count."""

    total: int | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobStarted:
    """The job is recorded and passed its prechecks; the workers load `loading` first."""

    job_id: str
    workers: int
    loading: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExecutorStep:
    """The executor's own work around the documents, in words (`doing`): a Ray cluster starting
    or stopping, its actors loading. `step` names the kind of work (a display shows a line when
    it changes)."""

    step: str
    doing: str


@dataclass(frozen=True)
class DocumentsFound:
    """The source has listed `tally.found` documents so far."""

    tally: Tally


@dataclass(frozen=True)
class PagesPartitioned:
    """A long document's page (or line) ranges, spread over the workers: `done` of `total`."""

    filename: str
    done: int
    total: int
    unit: str = "pages"
    parts: int = 1


@dataclass(frozen=True)
class ChunksEmbedded:
    """A long document's embedding, spread over the workers in slices: `done` of `total`."""

    filename: str
    done: int
    total: int


@dataclass(frozen=True)
class DocumentWritten:
    """A document went through every node and reached the destination."""

    result: FileResult
    tally: Tally


@dataclass(frozen=True)
class DocumentFailed:
    """A document failed (in a node, the source or the destination); `result.error` says why."""

    result: FileResult
    tally: Tally


@dataclass(frozen=True)
class DocumentSkipped:
    """A document is unchanged since its last successful run and was not processed again."""

    result: FileResult
    tally: Tally


@dataclass(frozen=True)
class DocumentRemoved:
    """A document that left the source had its output removed from the destination (an
    incremental run); `error` says why a removal failed."""

    record_id: str
    filename: str | None  # None: the store did not keep its name (an older run wrote it)
    error: str | None = None


@dataclass(frozen=True)
class NodeProgress:
    """Every node's counts after a batch of documents finished."""

    nodes: tuple[NodeCount, ...]
    tally: Tally


@dataclass(frozen=True)
class StopRequested:
    """Ctrl-C (or SIGTERM): the job stops after the documents in progress."""


@dataclass(frozen=True)
class JobFinished:
    """The job is recorded with its outcome (COMPLETED, FAILED or STOPPED)."""

    job_id: str
    status: str
    tally: Tally
    nodes: tuple[NodeCount, ...] = field(default=())


Event = (
    JobPrepared
    | JobStarted
    | ExecutorStep
    | DocumentsFound
    | PagesPartitioned
    | ChunksEmbedded
    | DocumentWritten
    | DocumentFailed
    | DocumentSkipped
    | DocumentRemoved
    | NodeProgress
    | StopRequested
    | JobFinished
)


class Listener(Protocol):
    """Anything that hears a run's events (a display, a log, the API caller's callback)."""

    def __call__(self, event: Event, /) -> None:
        """Take one event; must be quick and must not raise (the run does not wait for it)."""


def node_counts(stats: Iterable[NodeStats]) -> tuple[NodeCount, ...]:
    """The job record's per-node counts as events carry them."""
    return tuple(
        NodeCount(
            s.node_name,
            s.node_type,
            success=s.success,
            failure=s.failure,
            in_progress=s.in_progress,
            elements_out=s.elements_out,
            pages=s.pages,
            enriched=s.enriched,
        )
        for s in stats
    )


def ignore(event: Event) -> None:
    """The listener of a run nobody watches."""
