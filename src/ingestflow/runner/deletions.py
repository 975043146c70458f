"""Deletions reach the destination: with `reprocess_all: false`, a document that an earlier run
of the same workflow wrote to this destination from this source, and that the source no longer
lists, has its output removed (its local file, its Milvus rows) and is counted in the job.

The safety rules (docs/incremental.md says them to users):
- only after the whole listing went through: a run that stopped or failed removes nothing;
- a source that says its listing may have missed documents (`Source.listing_problem`: a folder
  it could not read, a wiki space it could not list or cut at its limit) removes nothing, and
  the job says why;
- a listing of no document at all removes nothing (an empty source is taken for a misconfigured
  or unreachable one, never for "delete everything");
- only the documents of this workflow, written from the same source (the same input paths, the
  same wiki and spaces) to the same destination; uploaded files are never a listing;
- `--keep-deleted` (`keep_deleted` in a run request) keeps them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingestflow.elements import Document
from ingestflow.errors import one_line
from ingestflow.runner.events import DocumentRemoved, Listener
from ingestflow.store import sync
from ingestflow.store.jobs import Workspace


class Deletions:
    """What one incremental run listed, and the removal of what it no longer lists."""

    def __init__(
        self,
        ws: Workspace,
        workflow_key: str,
        settings_hash: str,
        source_key: str,
        destination_key: str,
    ) -> None:
        self.ws = ws
        self.workflow_key = workflow_key
        self.settings_hash = settings_hash
        self.keys = (source_key, destination_key)
        self.listed: dict[str, str] = {}  # record id -> file name, of every listed document

    @classmethod
    def for_run(cls, job: Any, plan: Any, opts: Any) -> Deletions | None:
        """The deletions of a run (its `runner.job.Job`, plan and options), or None when it
        removes nothing (reprocess_all, --keep-deleted, uploads, or a destination with no
        identity)."""
        if plan.workflow.reprocess_all or opts.keep_deleted:
            return None
        if not opts.source_key or not opts.destination_key:
            return None
        return cls(
            job.ws, job.workflow_key, job.settings_hash, opts.source_key, opts.destination_key
        )

    def seen(self, doc: Document) -> None:
        """A document the source listed (read or not, changed or not: it is still there)."""
        self.listed[doc.record_id] = doc.filename

    def apply(self, job: Any, source: Any, check_stop: Callable[[], None]) -> None:
        """Remove what left the source, recording each removal in the run's `runner.job.Job`;
        a failed removal counts as a failed document, and the job's message says what was
        done."""
        failed, notes = self.remove(source, job.destination, job.job_id, job.progress, check_stop)
        job.counts["FAILED"] += failed
        job.notes.extend(notes)

    def remove(
        self,
        source: Any,
        destination: Any,
        job_id: str,
        progress: Listener,
        check_stop: Callable[[], None],
    ) -> tuple[int, list[str]]:
        """Remove what left the source; (how many removals failed, notes for the job)."""
        db = self.ws.db
        sync.adopt(db, self.workflow_key, self.settings_hash, self.keys, self.listed.items())
        gone = [
            item
            for item in sync.written(db, self.workflow_key, *self.keys)
            if item.record_id not in self.listed
        ]
        if not gone:
            return 0, []
        problem = source.listing_problem()
        if problem is None and not self.listed:
            problem = (
                "the source listed no document at all, which is taken for a misconfigured or "
                "unreachable source"
            )
        if problem is not None:
            return 0, [
                f"{len(gone)} document(s) written by earlier runs are no longer listed, and "
                f"were kept in the destination: {problem}. They are removed by the next "
                "incremental run that lists the source whole (see docs/incremental.md)"
            ]
        failed = 0
        for seq, item in enumerate(gone, 1):
            check_stop()  # a stop between removals keeps the rest for the next run
            error = None
            try:
                destination.delete(item.record_id, item.filename)
            except Exception as exc:  # one removal failing fails it alone
                error = f"removing its output (it left the source) failed: {one_line(exc)}"
                failed += 1
            with self.ws.transaction():
                sync.record_removal(db, job_id, item, error, seq)
                if error is None:
                    sync.forget(db, self.workflow_key, item.record_id)
            progress(DocumentRemoved(item.record_id, item.filename, error))
        notes = [f"{len(gone) - failed} document(s) that left the source were removed"]
        if failed:
            notes.append(f"{failed} removal(s) failed; the next incremental run tries again")
        return failed, notes
