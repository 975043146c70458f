"""A job resumed in place (`ingestflow jobs resume`): the runner takes up the job's counts, node
figures and runtime where it ended, and passes over the documents the job already wrote (same
file id, same content); the others, and those that failed, are processed as in any run. Which
jobs may resume, and with what, is `service.resume`'s."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ingestflow.elements import Document
from ingestflow.store.job_rows import NodeStats

#: Results that mean "written" (or found unchanged) by the job: not done again on resume.
DONE = ("SUCCESS", "SKIPPED")


@dataclass
class Earlier:
    """What the job did before it was resumed: each file's status, content hash and elements."""

    files: dict[str, tuple[str, str | None, int]]

    def done(self, doc: Document) -> bool:
        """True when the job already wrote (or skipped as unchanged) this very document."""
        earlier = self.files.get(doc.id)
        if earlier is None or earlier[0] not in DONE or doc.error is not None:
            return False
        try:
            doc.version = doc.version or doc.content_hash()
        except OSError:
            return False  # unreadable now: the run says so
        return doc.version == earlier[1]

    def replaced(self, file_id: str, counts: dict[str, int]) -> None:
        """Take a retried document's earlier result out of the job's counts."""
        earlier = self.files.pop(file_id, None)
        if earlier is not None:
            counts[earlier[0]] -= 1
            counts["elements"] -= earlier[2]


def restore(job: Any) -> tuple[Earlier, float]:
    """Set a `runner.job.Job` up to continue its job: counts, sequence, node figures; returns
    what the job did before and how long it ran (its runtime goes on from there)."""
    ws, job_id = job.ws, job.job_id
    row = ws.job_row(job_id)
    files = ws.files(job_id)
    earlier = Earlier({f.file_id: (f.status, f.version, f.elements) for f in files})
    for f in files:
        job.counts[f.status] += 1
        job.counts["elements"] += f.elements
    job.seq = ws.db.execute(
        "SELECT coalesce(max(seq), 0) FROM job_files WHERE job_id = ?", (job_id,)
    ).fetchone()[0]
    stored = json.loads(row["node_stats"] or "[]")
    if [n.get("node_id") for n in stored] == [s.node_id for s in job.stats]:
        job.stats = [
            NodeStats(**{**entry, "ready": 0, "in_progress": 0})  # what was in flight was lost
            for entry in stored
        ]
    return earlier, float(row["runtime_s"] or 0.0)
