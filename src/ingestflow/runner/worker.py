"""What runs inside a worker process: the plan's stages, opened once, applied to small batches of
documents (so the embedder batches across documents), each document failing alone."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ingestflow.connectors.base import Destination
from ingestflow.elements import Document
from ingestflow.errors import DocumentError, EnvironmentProblem, StageError, one_line
from ingestflow.patches import imports
from ingestflow.runner import pools
from ingestflow.runner.budget import DocBudget
from ingestflow.runner.plan import Plan
from ingestflow.stages.base import Part, Stage

STAGES: list[tuple[str, Stage]] | None = None
_OPENED: set[int] = set()  # ids of the stages opened in this process
_TIMEOUT: float | None = None  # seconds a document may spend in one node (--doc-timeout)


@dataclass
class DocResult:
    """What a worker hands back for one document."""

    doc: Document
    ok: bool = True
    error: str | None = None
    failed_node: str | None = None
    node_outputs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    seconds: float = 0.0
    # per node: [elements in, elements out, seconds] (a batched stage's time shared out)
    node_metrics: dict[str, list[float]] = field(default_factory=dict)
    # per node (traced runs): the document's warnings and stats once the node was done
    node_notes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # set when the worker wrote the document to the destination itself (`write_results`)
    written: Written | None = None


@dataclass
class Written:
    """A document a worker wrote to the destination: how many elements (they are not sent
    back), the destination's warnings, or why the write failed."""

    elements: int
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


def write_results(results: list[DocResult], destination: Destination) -> list[DocResult]:
    """Write each finished document to `destination` (opened by the caller), as a unit, and
    drop its elements from the result: the run records the outcome (`Job.collect`)."""
    for r in results:
        if not r.ok:
            continue
        elements = len(r.doc.elements)
        try:
            r.written = Written(elements, destination.write(r.doc))
        except Exception as exc:  # a destination failure fails this document alone
            r.written = Written(elements, error=f"destination: {reason(exc)}")
        r.doc.elements = []
    return results


def init_worker(plan: Plan, torch_threads: int | None = None, in_process: bool = False) -> None:
    """Set up the plan's stages in this process; each is opened once, when a task first needs
    it. Workers leave Ctrl-C to the parent."""
    global STAGES
    if not in_process:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _die_with_parent()
        from ingestflow.offline import quiet_libraries

        quiet_libraries()
    if torch_threads:
        os.environ.setdefault("OMP_NUM_THREADS", str(torch_threads))
    if not in_process and torch_unused(plan):
        # spaCy's thinc imports torch when it can (~1.2 s a worker) though nothing here uses it
        imports.block("torch")
    global _TIMEOUT
    _TIMEOUT = plan.context.options.doc_timeout or None
    stages = plan.stages()
    STAGES = [(node.id, stage) for node, stage in zip(plan.nodes, stages, strict=True)]
    _OPENED.clear()


def _die_with_parent() -> None:
    """A worker ends when the process that started it ends, however it ends (kill -9 included):
    never an orphan holding a gigabyte of models."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if os.getppid() == 1:  # the parent died before the line above took effect
        os._exit(1)
    # a worker forked by a run's fork server (`preload`) must not keep it alive (see there)
    pools.leave_fork_server()


def open_stage(stage: Stage) -> Stage:
    """The stage, opened (models and clients loaded) the first time a task needs it: a run
    whose documents start after reused outputs never loads the stages before them."""
    if id(stage) not in _OPENED:
        try:
            stage.open()
        except Exception as exc:
            raise EnvironmentProblem(
                f"{stage.name}: could not load what it needs: {reason(exc)}"
            ) from exc
        _OPENED.add(id(stage))
    return stage


def torch_unused(plan: Plan) -> bool:
    """True when no stage of the plan can need torch: Fast partitioning, and the embedding
    model on ONNX Runtime with its exported file already there (the torch fallback and the
    export need torch; High Res and Auto are left alone)."""
    from ingestflow.local_model import runs_without_torch

    needs = any(node.kind.needs_torch(node.settings) for node in plan.nodes)  # the registry
    return not needs and runs_without_torch()


def close_worker() -> None:
    """Close the stages of this process."""
    global STAGES
    for _, stage in STAGES or []:
        if id(stage) in _OPENED:
            stage.close()
    _OPENED.clear()
    STAGES = None


reason = one_line  # why a document failed, in one line


def _stages() -> list[tuple[str, Stage]]:
    assert STAGES is not None, "init_worker() was not called in this process"
    return STAGES


def process_batch(
    docs: list[Document], trace: bool, start: int = 0, stop: int | None = None
) -> list[DocResult]:
    """Run the stages (all, or those from `start` up to `stop`) over a batch: per document, or
    across the batch for batched stages. A document its source could not read (`error`, when
    a worker reads it: `Document.fetch`) fails at the first stage with the source's reason."""
    results = [DocResult(doc) for doc in docs]
    for r in results:
        if r.doc.error is not None:
            r.ok, r.error, r.failed_node = False, f"source: {r.doc.error}", _stages()[0][0]
    return _run(results, _stages()[start:stop], trace)


def process_part(
    doc: Document, pages: tuple[int, int], budget: DocBudget | None = None
) -> PartResult:
    """The first stage (the partitioner) on one page range of a long document, in the time its
    finished ranges left it (`budget`; none: --doc-timeout for this range alone)."""
    stage = open_stage(_stages()[0][1])
    started = time.perf_counter()
    where = f"{stage.name}: {doc.filename}: {stage.range_unit(doc)} {pages[0]}-{pages[1]}"
    seconds, said = _TIMEOUT, None
    if budget is not None:
        seconds, said = budget.remaining(), budget.over()
    try:
        with _deadline(seconds, where, said):
            part = stage.process_part(doc, pages)
    except DocumentTimeout as exc:  # says where already
        return PartResult(pages, error=str(exc), seconds=time.perf_counter() - started)
    except StageError as exc:  # names the pages already
        return PartResult(pages, error=reason(exc), seconds=time.perf_counter() - started)
    except Exception as exc:  # the document fails, whatever the library raised
        error = f"{where}: {reason(exc)}"
        return PartResult(pages, error=error, seconds=time.perf_counter() - started)
    return PartResult(pages, part=part, seconds=time.perf_counter() - started)


def process_joined(
    doc: Document,
    parts: list[Part],
    trace: bool,
    stop: int | None = None,
    budget: DocBudget | None = None,
) -> list[DocResult]:
    """A long document from its partitioned page ranges (in the time they left, `budget`), then
    the remaining stages (up to `stop`)."""
    (node_id, stage), *rest = _stages()[:stop]
    open_stage(stage)
    result = DocResult(doc)
    started = time.perf_counter()
    seconds = budget.remaining() if budget is not None else None
    try:
        with _deadline(seconds, stage.name, budget.over() if budget is not None else None):
            result.doc = stage.join_parts(doc, parts)
    except Exception as exc:
        result.ok, result.failed_node, result.error = False, node_id, reason(exc)
    else:
        if trace:
            result.node_outputs[node_id] = list(result.doc.elements)
            result.node_notes[node_id] = _notes(result.doc)
    result.node_metrics[node_id] = [0, len(result.doc.elements), time.perf_counter() - started]
    return _run([result], rest, trace)


@dataclass(frozen=True)
class BatchCall:
    """Documents through the stages from `start` up to `stop` (`process_batch`)."""

    docs: tuple[Document, ...]
    trace: bool = False
    start: int = 0
    stop: int | None = None

    def __call__(self) -> list[DocResult]:
        return process_batch(list(self.docs), self.trace, self.start, self.stop)


@dataclass(frozen=True)
class PartCall:
    """One page range of a long document (`process_part`); `docs`: that document alone."""

    docs: tuple[Document, ...]
    pages: tuple[int, int]
    budget: DocBudget | None = None

    def __call__(self) -> PartResult:
        return process_part(self.docs[0], self.pages, self.budget)


@dataclass(frozen=True)
class JoinCall:
    """A long document from its parts, then its stages up to `stop` (`process_joined`)."""

    docs: tuple[Document, ...]
    parts: tuple[Part, ...]
    trace: bool = False
    stop: int | None = None
    budget: DocBudget | None = None

    def __call__(self) -> list[DocResult]:
        return process_joined(self.docs[0], list(self.parts), self.trace, self.stop, self.budget)


#: What a worker is sent: a call, run in the worker by calling it (picklable by value).
Call = BatchCall | PartCall | JoinCall


@dataclass
class PartResult:
    """What a worker hands back for one page range: the part, or why it failed."""

    pages: tuple[int, int]
    part: Part | None = None
    error: str | None = None
    seconds: float = 0.0


def _run(results: list[DocResult], stages: list[tuple[str, Stage]], trace: bool) -> list[DocResult]:
    started = {id(r): time.perf_counter() for r in results}
    for node_id, stage in stages:
        alive = [r for r in results if r.ok]
        if not alive:
            break
        open_stage(stage)
        counts_in = {id(r): len(r.doc.elements) for r in alive}
        if stage.batched:
            began = time.perf_counter()
            try:
                limit = _TIMEOUT * len(alive) if _TIMEOUT else None
                with _deadline(limit, f"{stage.name}: {len(alive)} documents"):
                    done = stage.process_many([r.doc for r in alive])
                for r, doc in zip(alive, done, strict=True):
                    r.doc = doc
            except Exception:  # isolate the failing document: one at a time
                for r in alive:
                    _one(r, node_id, stage)
            else:  # the batch's time, shared out by each document's elements
                spent = time.perf_counter() - began
                total = sum(counts_in.values()) or len(alive)
                for r in alive:
                    share = (counts_in[id(r)] or (0 if sum(counts_in.values()) else 1)) / total
                    r.node_metrics[node_id] = [counts_in[id(r)], len(r.doc.elements), spent * share]
        else:
            for r in alive:
                _one(r, node_id, stage)
        for r in alive:
            metrics = r.node_metrics.setdefault(node_id, [counts_in[id(r)], 0, 0.0])
            metrics[1] = len(r.doc.elements) if r.ok else 0
            if r.ok and node_id == _stages()[0][0]:  # the partitioner: pages for the progress
                r.doc.stats["pages"] = count_pages(r.doc.elements)
        if trace:
            for r in alive:
                if r.ok:
                    r.node_outputs[node_id] = list(r.doc.elements)
                    r.node_notes[node_id] = _notes(r.doc)
    for r in results:
        r.seconds = time.perf_counter() - started[id(r)]
        r.doc.data = None  # the content is not needed back in the parent
    return results


class DocumentTimeout(DocumentError):
    """A document took longer in one node than --doc-timeout allows."""


class _DeadlinePassed(BaseException):
    """What the alarm raises inside the work: not an Exception, so that no `except Exception`
    on the way (a library's per-page handler, a reader's fallback to another reader) takes it
    for a failure of its own and goes on; `_deadline` turns it into DocumentTimeout."""


@contextmanager
def _deadline(seconds: float | None, what: str, said: str | None = None) -> Iterator[None]:
    """Fail the work inside with DocumentTimeout after `seconds` (at once when none are left;
    `said`: the message, else one naming `what`). Worker main threads only: SIGALRM; code stuck
    inside a C call is stopped when it returns to Python, and an import when it is done."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    said = said or f"{what} took longer than {seconds:g} s and was stopped (--doc-timeout)"
    if seconds <= 0:  # the document's other ranges spent its time
        raise DocumentTimeout(said)

    passed: list[bool] = []  # the alarm went off inside the work
    me = sys._getframe()  # this generator's own frame: its bookkeeping is never interrupted

    def fire(signum: int, frame: Any) -> None:
        # Again in 50 ms until the work stops: an exception raised where Python only prints it
        # (a weakref callback, a __del__) is swallowed, and the work would run on unbounded.
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        if frame is me:
            return
        passed.append(True)
        if _importing(frame) or frame.f_code.co_filename == contextlib.__file__:
            return  # a module left half-imported would fail every later document; a with's exit
        raise _DeadlinePassed

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _DeadlinePassed:
        raise DocumentTimeout(said) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if passed:  # the work ended after the alarm (deferred, swallowed): over the limit all the same
        raise DocumentTimeout(said)


def _importing(frame: Any) -> bool:
    """True when the interrupted code is inside an import (the import system's frames)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib."):
            return True
        frame = frame.f_back
    return False


def count_pages(elements: list[dict[str, Any]]) -> int:
    """How many pages the elements come from (0 for a document without pages)."""
    return len({(e.get("metadata") or {}).get("page_number") for e in elements} - {None})


def _notes(doc: Document) -> dict[str, Any]:
    """What a document carries besides its elements, as it stands after a node."""
    return {"warnings": list(doc.warnings), "stats": dict(doc.stats)}


def _one(result: DocResult, node_id: str, stage: Stage) -> None:
    count_in, began = len(result.doc.elements), time.perf_counter()
    try:
        with _deadline(_TIMEOUT, f"{stage.name}: {result.doc.filename}"):
            result.doc = stage.process(result.doc)
    except Exception as exc:  # a bad document fails alone, whatever the library raised
        result.ok = False
        result.failed_node = node_id
        result.error = reason(exc)
    result.node_metrics[node_id] = [count_in, 0, time.perf_counter() - began]
