"""What the workspace keeps of a job: its statuses, per-node counts, per-file outcomes, and the
JobDetails node entry made from them (`jobs.Workspace` stores and reads them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JOB_STATUSES = ("SCHEDULED", "IN_PROGRESS", "COMPLETED", "STOPPED", "FAILED")
ACTIVE_STATUSES = ("SCHEDULED", "IN_PROGRESS")
INTERRUPTED = "interrupted: the process running this job ended before it finished"


def iso_duration(seconds: float) -> str:
    """Seconds as an ISO 8601 duration (`PT12.345S`)."""
    return f"PT{seconds:.3f}S"


@dataclass
class NodeStats:
    """Per-node document counts of a job."""

    node_id: str
    node_name: str
    node_type: str
    node_subtype: str
    ready: int = 0
    in_progress: int = 0
    success: int = 0
    failure: int = 0
    # Pages per partition strategy (Auto): {"fast": n, "hi_res": n}
    pages_by_strategy: dict[str, int] = field(default_factory=dict)
    elements_in: int = 0  # elements the node received, over all documents
    elements_out: int = 0  # elements it handed on
    seconds: float = 0.0  # time it spent, over all documents (in worker processes)
    reused: int = 0  # documents whose output of this node came from the cache or a job
    pages: int = 0  # a partitioner's pages so far (a long document's ranges as they end)
    enriched: int = 0  # an enrichment node's elements acted on so far

    def as_dict(self) -> dict[str, Any]:
        """JobDetails' node_stats entry."""
        return dict(self.__dict__)


@dataclass
class FileResult:
    """The outcome of one document in a job."""

    file_id: str
    filename: str
    status: str  # SUCCESS | FAILED | SKIPPED
    error: str | None = None
    elements: int = 0
    output: str | None = None
    warnings: list[str] = field(default_factory=list)
    version: str | None = None  # the content hash the job saw


_COUNTS = ("node_name", "node_type", "node_subtype", "ready", "in_progress", "success", "failure")
_FIGURES = ("node_id", "elements_in", "elements_out", "seconds", "reused")


def node_entry(node: dict[str, Any]) -> dict[str, Any]:
    """JobDetails' node entry (the four counts), and what a job measured of the node."""
    entry = {k: node[k] for k in _COUNTS}
    entry |= {k: node[k] for k in _FIGURES if k in node}
    if "seconds" in entry:
        entry["seconds"] = round(float(entry["seconds"]), 3)
    for live in ("pages", "enriched"):  # only where the node has them
        if node.get(live):
            entry[live] = node[live]
    if node.get("pages_by_strategy"):
        entry["pages_by_strategy"] = node["pages_by_strategy"]
    return entry
