"""The work of a run as typed values, and its planning: what tasks a batch of documents becomes
(whole documents, or a long document's page ranges), and what a finished task leads to (a long
document's join once its ranges are done, its embedding slices once its first stages are done).

Planning runs in the driver and decides nothing about processes: any executor
(`runner.executors`) runs the tasks it is given and hands each result back to `Planner.done`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ingestflow.elements import Document
from ingestflow.runner import worker
from ingestflow.runner.budget import DocBudget
from ingestflow.stages.base import Stage

#: Elements per embedding slice of a long document, at least.
FAN_SLICE = 32


@dataclass(frozen=True, eq=False)
class Batch:
    """Documents admitted together: they start at the same stage (`start`, after reused
    outputs); `dominant`: one document that is most of the work in view."""

    docs: tuple[Document, ...]
    start: int = 0
    dominant: bool = False


@dataclass(eq=False)
class Split:
    """A long document partitioned as page ranges on several workers, then joined: its ranges
    and the part of each, gathered as they finish (None while a range runs)."""

    doc: Document
    ranges: list[tuple[int, int]]
    parts: list[worker.PartResult | None]
    unit: str = "pages"  # what the ranges count ("lines" of a long text)
    budget: DocBudget = field(default_factory=lambda: DocBudget(None))  # --doc-timeout

    def units_done(self) -> int:
        """Pages (or lines) of the ranges finished so far."""
        return sum(p.pages[1] - p.pages[0] + 1 for p in self.parts if p is not None)


@dataclass(eq=False)
class Fan:
    """A long document's last stage (the embedder) spread over the workers: its elements in
    contiguous slices, each a task, put back together in order."""

    prior: worker.DocResult  # the document after the stages before
    groups: list[list[int]]  # the element positions of each slice
    subs: list[Document] = field(default_factory=list)
    results: list[worker.DocResult | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        doc = self.prior.doc
        self.subs = [
            replace(doc, elements=[doc.elements[i] for i in group], warnings=[], stats={})
            for group in self.groups
        ]
        self.results = [None] * len(self.subs)

    def embedded(self) -> tuple[int, int]:
        """(elements of the finished slices, elements in all)."""
        done = sum(len(g) for g, r in zip(self.groups, self.results, strict=True) if r)
        return done, sum(len(g) for g in self.groups)

    def restore(self, sliced: list[list[Any]]) -> list[Any]:
        """The slices' elements back in the document's order."""
        out: list[Any] = [None] * sum(len(group) for group in self.groups)
        for group, items in zip(self.groups, sliced, strict=True):
            for position, item in zip(group, items, strict=True):
                out[position] = item
        return out


@dataclass(frozen=True, eq=False)
class WholeDocuments:
    """Documents run whole through the stages from `start` up to `stop` (None: the last)."""

    docs: tuple[Document, ...]
    start: int = 0
    stop: int | None = None


@dataclass(frozen=True, eq=False)
class PageRange:
    """The first stage (the partitioner) on one page range of a long document."""

    split: Split
    index: int

    @property
    def pages(self) -> tuple[int, int]:
        """The range: first and last page (or line)."""
        return self.split.ranges[self.index]


@dataclass(frozen=True, eq=False)
class Join:
    """A long document put together from its ranges, then its stages up to `stop`."""

    split: Split
    stop: int | None


@dataclass(frozen=True, eq=False)
class EmbeddingSlice:
    """One slice of a long document's elements through the stages from `start`."""

    fan: Fan
    index: int
    start: int


Task = WholeDocuments | PageRange | Join | EmbeddingSlice


@dataclass
class Step:
    """What a finished task leads to: tasks to run next, and documents finished for good."""

    follows: list[Task] = field(default_factory=list)
    finished: list[worker.DocResult] = field(default_factory=list)


def call(task: Task, trace: bool) -> worker.Call:
    """The task as a worker runs it, made when it is sent: a page range (or a join) gets what
    the document's ranges finished so far left of its time."""
    if isinstance(task, WholeDocuments):
        return worker.BatchCall(task.docs, trace, task.start, task.stop)
    if isinstance(task, EmbeddingSlice):
        return worker.BatchCall((task.fan.subs[task.index],), trace, task.start)
    budget = replace(task.split.budget)
    if isinstance(task, PageRange):
        return worker.PartCall((task.split.doc,), task.pages, budget)
    parts = tuple(p.part for p in task.split.parts if p is not None and p.part is not None)
    return worker.JoinCall((task.split.doc,), parts, trace, task.stop, budget)


def alone(task: Task) -> list[Task]:
    """The task as tasks of one document each (to find the one that crashes a worker)."""
    if isinstance(task, WholeDocuments) and len(task.docs) > 1:
        return [WholeDocuments((doc,), task.start, task.stop) for doc in task.docs]
    return [task]


def crashed(task: Task, node_id: str, cause: str = "") -> Any:
    """The result of a task whose worker process died (`cause`: how, when known)."""
    how = f" ({cause})" if cause else ""
    if isinstance(task, PageRange):
        first, last = task.pages
        where = f"{task.split.unit} {first}-{last}"
        return worker.PartResult(task.pages, error=f"the worker process crashed on {where}{how}")
    error = f"the worker process crashed on this document{how}"
    return [
        worker.DocResult(doc, ok=False, error=error, failed_node=node_id) for doc in documents(task)
    ]


def documents(task: Task) -> tuple[Document, ...]:
    """The documents a task works on (a slice: its part of the document)."""
    if isinstance(task, WholeDocuments):
        return task.docs
    if isinstance(task, EmbeddingSlice):
        return (task.fan.subs[task.index],)
    return (task.split.doc,)


def slices(doc: Document, workers: int) -> list[list[int]]:
    """Element positions of up to two slices a worker, at least FAN_SLICE elements each. Each
    slice takes texts of similar length (the embedder pads a batch to its longest text: slices
    cut in document order would pad short texts to long ones)."""
    elements = doc.elements
    count = max(1, min(workers * 2, len(elements) // FAN_SLICE))
    order = sorted(range(len(elements)), key=lambda i: len(elements[i].get("text") or ""))
    size = -(-len(order) // count) if order else 1
    groups = [sorted(order[i : i + size]) for i in range(0, len(order), size)]
    return groups or [[]]


class Planner:
    """The tasks of a run on `workers` workers. `fan_at`: the batched stage (the embedder) at
    which a long document's work is spread in slices (None: never); `limit`: --doc-timeout."""

    def __init__(
        self,
        first_stage: Stage,
        node_id: str,
        workers: int,
        fan_at: int | None = None,
        limit: float | None = None,
    ) -> None:
        self.first_stage = first_stage  # asked, here, how to split a long document
        self.node_id = node_id  # the first node's id: where a split document fails
        self.workers = workers
        self.fan_at = fan_at
        self.limit = limit

    def tasks(self, batch: Batch) -> list[Task]:
        """A batch's tasks: a long document whose first stage splits it becomes one task per
        page range (its join follows when they are all done); the others stay together. A
        batch that starts after reused outputs has nothing to split."""
        stop = self._long_stop(batch)
        if batch.start > 0 or self.workers <= 1:
            return [WholeDocuments(batch.docs, batch.start, stop)]
        out: list[Task] = []
        whole: list[Document] = []
        for doc in batch.docs:
            ranges = self.first_stage.page_ranges(doc, self.workers)
            if not ranges:
                whole.append(doc)
                continue
            unit = self.first_stage.range_unit(doc)
            budget = DocBudget(self.limit, f"{self.first_stage.name}: {doc.filename}", unit)
            split = Split(doc, ranges, [None] * len(ranges), unit, budget)
            out += [PageRange(split, index) for index in range(len(ranges))]
        if whole:
            out.append(WholeDocuments(tuple(whole), stop=stop))
        return out

    def _long_stop(self, batch: Batch) -> int | None:
        """Where a long document's first task stops (before the embedder), or None."""
        if self.fan_at is None or len(batch.docs) != 1 or batch.start >= self.fan_at:
            return None
        return self.fan_at if batch.dominant else None

    def done(self, task: Task, result: Any, share: int) -> Step:
        """A finished task's step: the tasks it leads to (as many embedding slices as `share`
        workers can take — 1 when the others have enough queued work) and the documents it
        finished."""
        if isinstance(task, EmbeddingSlice):
            return self._slice_done(task, result)
        if isinstance(task, PageRange):
            return self._range_done(task, result)
        stop = task.stop
        if isinstance(task, Join):  # the partitioner's time is its ranges' time too
            seconds = sum(p.seconds for p in task.split.parts if p is not None)
            for r in result:
                if self.node_id in r.node_metrics:
                    r.node_metrics[self.node_id][2] += seconds
        if stop is None:
            return Step(finished=list(result))
        step = Step()
        for r in result:  # the first stages are done: spread the embedding over the workers
            if not r.ok:
                step.finished.append(r)
                continue
            fan = Fan(r, slices(r.doc, share))
            step.follows += [EmbeddingSlice(fan, i, stop) for i in range(len(fan.subs))]
        return step

    def _range_done(self, task: PageRange, result: worker.PartResult) -> Step:
        split = task.split
        split.parts[task.index] = result
        split.budget.charge(result.seconds)
        if any(part is None for part in split.parts):
            return Step()
        failed = [p for p in split.parts if p is not None and p.error is not None]
        if failed or split.budget.exceeded():  # its ranges together over --doc-timeout
            error = failed[0].error if failed else split.budget.over()
            return Step(finished=[worker.DocResult(split.doc, False, error, self.node_id)])
        return Step(follows=[Join(split, self.fan_at)])

    def _slice_done(self, task: EmbeddingSlice, result: list[worker.DocResult]) -> Step:
        fan = task.fan
        (fan.results[task.index],) = result
        if any(r is None for r in fan.results):
            return Step()
        prior, doc = fan.prior, fan.prior.doc
        subs = [r for r in fan.results if r is not None]
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
        return Step(finished=[prior])
