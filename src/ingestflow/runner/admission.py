"""Which of the source's documents a run processes, where each starts, and in what batches:
failed listings and unchanged documents are recorded and passed over, reused node outputs
start a document further on, and documents go out largest first in bounded batches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ingestflow.batching import bounded_batches
from ingestflow.connectors.base import Destination, Source
from ingestflow.elements import Document
from ingestflow.runner import events
from ingestflow.runner.job import Job
from ingestflow.runner.tasks import Batch
from ingestflow.store.job_rows import FileResult

if TYPE_CHECKING:
    from ingestflow.runner.deletions import Deletions
    from ingestflow.runner.options import RunOptions


class Admission:
    """The source's documents of one run, admitted into batches for the workers."""

    def __init__(
        self,
        job: Job,
        source: Source,
        destination: Destination,
        options: RunOptions,
        deletions: Deletions | None,
        batch_docs: int,
    ) -> None:
        self.job = job
        self.source = source
        self.destination = destination
        self.opts = options
        self.deletions = deletions
        self.batch_docs = batch_docs  # documents per batch (1 when the stages are slow)

    def documents(self) -> Iterator[Document]:
        """The source's documents that need processing (failed listings and unchanged documents
        are recorded here and not passed on)."""
        job = self.job
        for doc in self.source.documents():
            if self.deletions is not None:
                self.deletions.seen(doc)
            if job.earlier is not None and job.earlier.done(doc):
                continue  # written by this job before it was resumed
            job.found += 1
            job.progress(events.DocumentsFound(job.tally()))
            if doc.error is not None:
                job.record(
                    FileResult(
                        doc.id,
                        doc.filename,
                        "FAILED",
                        error=f"source: {doc.error}",
                        warnings=doc.warnings,
                    )
                )
                continue
            if not job.plan.workflow.reprocess_all and self._unchanged(doc):
                continue
            if self.opts.reuse is not None:
                resume = self.opts.reuse.lookup(doc)
                if resume is not None:
                    doc.elements = resume.elements
                    doc.warnings = list(resume.notes.get("warnings") or [])
                    doc.stats = dict(resume.notes.get("stats") or {})
                    job.resumed[doc.id] = resume
            yield doc

    def batches(self) -> Iterator[Batch]:
        """Batches for the workers, largest documents first within a bounded look-ahead window
        (so a long document starts early instead of holding one core at the end). Documents over
        `batch_bytes` go alone; small ones are grouped so the embedder batches across them."""
        window: list[Document] = []
        for doc in self.documents():
            window.append(doc)
            if len(window) >= self.opts.lookahead:
                yield from self._group(window)
                window = []
        yield from self._group(window)

    def start(self, doc: Document) -> int:
        """The index of the first stage this document runs (after reused outputs)."""
        resume = self.job.resumed.get(doc.id)
        return resume.start if resume is not None else 0

    def _group(self, window: list[Document]) -> Iterator[Batch]:
        """Batches of documents that start at the same stage, largest first."""
        for start in sorted({self.start(doc) for doc in window}):
            yield from self._group_from([d for d in window if self.start(d) == start], start)

    def _group_from(self, window: list[Document], start: int) -> Iterator[Batch]:
        sized = sorted(((doc, _size(doc)) for doc in window), key=lambda p: p[1], reverse=True)
        total = sum(size for _, size in sized)
        # a document that is most of the work in view gets its embedding spread over the
        # workers; otherwise the other documents keep them busy and spreading only costs
        dominant = {
            id(doc) for doc, size in sized if size >= self.opts.batch_bytes and 2 * size > total
        }
        for docs in bounded_batches(sized, self.batch_docs, self.opts.batch_bytes):
            yield Batch(tuple(docs), start, len(docs) == 1 and id(docs[0]) in dominant)

    def _still_there(self, doc: Document) -> bool:
        """True when the destination still holds what this document's last run left there: the
        output is there (or the destination cannot tell), and its fingerprint, when one was
        recorded, is the same (an output another run rewrote from another source or workflow
        is not this document's)."""
        if self.destination.has(doc) is False:
            return False
        recorded = self.job.ws.output_stamp(self.job.workflow_key, doc.record_id)
        return recorded is None or self.destination.stamp(doc) == recorded

    def _unchanged(self, doc: Document) -> bool:
        try:
            doc.version = doc.version or doc.content_hash()
        except OSError:
            return False  # unreadable: let the partitioner report it
        job = self.job
        if job.ws.unchanged(
            job.workflow_key, doc.record_id, doc.version, job.settings_hash
        ) and self._still_there(doc):
            job.record(
                FileResult(
                    doc.id, doc.filename, "SKIPPED", error="unchanged since its last successful run"
                )
            )
            return True
        return False


def _size(doc: Document) -> int:
    if doc.data is not None:
        return len(doc.data)
    try:
        return doc.path.stat().st_size if doc.path else 0
    except OSError:
        return 0
