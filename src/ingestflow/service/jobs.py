"""Jobs: records, details, failed files, per-node outputs (as elements or as Markdown), and
cancelling.

`get` returns the full record the CLI shows; `information` and `details` are the REST shapes
(JobInformation, JobDetails) the official SDK reads.
"""

from __future__ import annotations

import builtins
import json
import os
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args

from ingestflow.errors import Conflict, NotFound, WorkflowInvalid
from ingestflow.service.records import JobCancel, JobDetails, JobFailedFiles, JobInformation
from ingestflow.spec.problems import Problem
from ingestflow.store import Workspace
from ingestflow.store.job_rows import ACTIVE_STATUSES, JOB_STATUSES
from ingestflow.store.owners import owner_alive

if TYPE_CHECKING:
    from ingestflow.service.page_view import FileView

INFORMATION = (
    "id",
    "workflow_id",
    "workflow_name",
    "status",
    "created_at",
    "runtime",
    "input_file_ids",
    "output_node_files",
    "job_type",
)
PAGE_SIZE = 100  # GET /jobs answered the newest 100 before it had pages
#: How a download writes a file's elements: as they are (JSON), or as Markdown, the document as
#: a reader wants it (`ingestflow.markdown`).
DownloadFormat = Literal["json", "markdown"]
FORMATS: tuple[str, ...] = get_args(DownloadFormat)
_SUFFIXES = {"json": ".json", "markdown": ".md"}


class JobsPage(NamedTuple):
    """One page of job records: the records, how many match in all, whether more follow."""

    records: list[dict[str, Any]]
    total: int
    more: bool


class Jobs:
    """The jobs of a workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def list(
        self, workflow_id: str | None = None, status: str | None = None, limit: int = 100
    ) -> builtins.list[dict[str, Any]]:
        """Full job records, newest first."""
        return self.ws.list_jobs(limit, workflow_id, _status(status))

    def page(
        self,
        workflow_id: str | None = None,
        status: str | None = None,
        page: int = 1,
        page_size: int = PAGE_SIZE,
    ) -> JobsPage:
        """One page of full job records, newest first (pages count from 1, as for workflows),
        with the total and whether a later page has more."""
        problems = []
        if page < 1 or not 1 <= page_size <= 1000:
            problems.append(
                Problem("page", "page counts from 1; page_size is 1 to 1000", [page, page_size])
            )
        try:
            wanted = _status(status)
        except WorkflowInvalid as exc:
            problems.extend(exc.problems)
        if problems:
            raise WorkflowInvalid(problems, what="list request")
        start = (page - 1) * page_size
        records = self.ws.list_jobs(page_size, workflow_id, wanted, offset=start)
        total = self.ws.count_jobs(workflow_id, wanted)
        return JobsPage(records, total, start + len(records) < total)

    def get(self, ref: str) -> dict[str, Any]:
        """The full record: JobInformation, JobDetails, failed files, per-file outcomes."""
        return self.ws.job_record(ref)

    def information(self, ref: str) -> JobInformation:
        """JobInformation (the REST shape)."""
        return information(self.get(ref))

    def details(self, ref: str) -> JobDetails:
        """JobDetails: processing status, per-node counts, message."""
        record = self.get(ref)
        return JobDetails.model_validate(
            {
                "id": record["id"],
                "processing_status": record["processing_status"],
                "node_stats": record["node_stats"],
                "message": record["message"],
                "deleted": record["deleted"],  # documents that left the source, removed
                "progress": record.get("progress"),  # live document counts (found, written, left)
            }
        )

    def failed_files(self, ref: str) -> JobFailedFiles:
        """The documents that failed, each with its reason."""
        return JobFailedFiles.model_validate({"failed_files": self.get(ref)["failed_files"]})

    def cancel(self, ref: str) -> JobCancel:
        """Stop a job: one not started yet is STOPPED at once; a running one stops after the
        documents in progress (finished documents are kept)."""
        row = self.ws.job_row(ref)
        if row["status"] not in ACTIVE_STATUSES:
            raise Conflict(f"job {row['id']} has already finished ({row['status']})")
        message = "the job was stopped before it started"
        if row["status"] == "IN_PROGRESS" and owner_alive(row["owner"]) and _runs_alone(row):
            os.kill(int(row["owner"].split(":")[0]), signal.SIGINT)
            message = "the job stops after the documents in progress; finished ones are kept"
        else:
            self.ws.update_job(
                row["id"],
                status="STOPPED",
                processing_status="STOPPED",
                message="cancelled before it finished",
            )
        return JobCancel(id=row["id"], status="cancelled", message=message)

    def download(self, ref: str, file: str, node: str | None) -> builtins.list[dict[str, Any]]:
        """The elements of one file after one node (no node: the last node's, i.e. the output)."""
        record = self.get(ref)
        matches = [f for f in record["files"] if file in (f["file_id"], f["filename"])] or [
            f for f in record["files"] if f["file_id"].startswith(file)
        ]
        if len(matches) != 1:
            names = ", ".join(f"{f['file_id'][:8]} {f['filename']}" for f in record["files"])
            raise NotFound(
                f"file {file!r} is {'ambiguous' if matches else 'not'} in job "
                f"{record['id']}; its files: {names or 'none'}"
            )
        entry = matches[0]
        if entry["status"] != "SUCCESS":
            raise NotFound(
                f"{entry['filename']} has no output: {entry['status'].lower()} ({entry['error']})"
            )
        nodes = record["node_stats"]
        node_ids = [n["node_id"] for n in json.loads(self.ws.job_row(record["id"])["node_stats"])]
        if node is None:
            from ingestflow.service.diff import output_is_the_jobs

            if output_is_the_jobs(record, entry):
                return json.loads(Path(entry["output"]).read_text(encoding="utf-8"))
            node = node_ids[-1]
        wanted = [
            nid for nid, n in zip(node_ids, nodes, strict=True) if node in (nid, n["node_name"])
        ]
        if not wanted:
            raise NotFound(
                f"node {node!r} is not in job {record['id']}; nodes: " + ", ".join(node_ids)
            )
        path = self.ws.node_output_path(record["id"], wanted[0], entry["file_id"])
        if not path.exists():
            raise NotFound(
                f"node {node!r} output of {entry['filename']} was not kept (or a later run "
                "rewrote the output file): run the workflow with --trace to keep every node's "
                "output"
            )
        return json.loads(path.read_text(encoding="utf-8"))

    def markdown(self, ref: str, file: str, node: str | None = None) -> str:
        """One file's elements after one node (no node: the output) as Markdown."""
        return markdown_of(self.download(ref, file, node))

    def diff(
        self, job_a: str, job_b: str, node: str | None = None, file: str | None = None
    ) -> dict[str, Any]:
        """What changed between two jobs, per node and per file (see `service.diff`)."""
        from ingestflow.service.diff import diff_jobs

        return diff_jobs(self.ws, job_a, job_b, node, file)

    def file_view(self, ref: str, file_id: str, node: int, first_page: int = 1) -> FileView:
        """A file after node `node` (from 1), over its pages from `first_page` on (see
        `service.page_view`)."""
        from ingestflow.service.page_view import file_view

        return file_view(self.ws, ref, file_id, node, first_page)

    def page_image(self, ref: str, file_id: str, number: int) -> tuple[bytes, str]:
        """Page `number` of the document the job read for a file: image bytes, media type."""
        from ingestflow.service.page_view import document_page

        return document_page(self.ws, ref, file_id, number)

    def export_node(
        self, ref: str, node: str | None, folder: Path, format: str = "json"
    ) -> builtins.list[Path]:
        """Write every file's elements after one node (no node: the output) into `folder`, one
        file per document named by its path: JSON (`docs/a.pdf` → `folder/docs/a.pdf.json`)
        or Markdown (`folder/docs/a.pdf.md`)."""
        from ingestflow.files import write_json_atomic

        suffix = _SUFFIXES[download_format(format)]
        record = self.get(ref)
        written: builtins.list[Path] = []
        root = folder.resolve()
        for entry in record["files"]:
            if entry["status"] != "SUCCESS":
                continue
            elements = self.download(record["id"], entry["file_id"], node)
            target = (root / f"{entry['filename']}{suffix}").resolve()
            if not target.is_relative_to(root):  # a source's name may not leave the folder
                target = root / f"{entry['file_id']}{suffix}"
            if suffix == ".json":
                write_json_atomic(target, elements)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(markdown_of(elements), encoding="utf-8")
            written.append(target)
        if not written:
            raise NotFound(f"job {record['id']} has no successful file to write")
        return written

    def prune(
        self, older_than_days: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Remove finished jobs older than some days and/or beyond the newest N, with their
        stored files (see `service.retention`)."""
        from ingestflow.service.retention import prune_jobs

        return prune_jobs(self.ws, older_than_days, keep, dry_run)

    def report(self, ref: str) -> str:
        """One self-contained HTML page about the job (see `service.report`)."""
        from ingestflow.service.report import render

        record = self.get(ref)
        return render(record, lambda index, entry: _elements_after(self.ws, record, index, entry))


def download_format(value: str) -> str:
    """A download format by its name (any case); WorkflowInvalid naming the formats else."""
    wanted = value.strip().lower()
    if wanted in FORMATS:
        return wanted
    raise WorkflowInvalid(
        [Problem("format", "unknown download format", found=value, allowed=list(FORMATS))],
        what="download request",
    )


def markdown_of(elements: Iterable[dict[str, Any]]) -> str:
    """Elements as Markdown, the document as a reader wants it: headings by depth, lists,
    tables as HTML, formulas as `$$…$$`, running heads left out (`ingestflow.markdown`)."""
    from ingestflow.markdown import to_markdown

    return to_markdown(elements)


def _elements_after(ws: Workspace, record: dict[str, Any], index: int, entry: dict[str, Any]):
    from ingestflow.service.diff import elements_of

    return elements_of(ws, record, index, entry)


def _status(status: str | None) -> str | None:
    """A job status filter, upper-cased; WorkflowInvalid when it names no status."""
    if status is not None and status.upper() not in JOB_STATUSES:
        raise WorkflowInvalid(
            [Problem("status", "unknown job status", found=status, allowed=list(JOB_STATUSES))],
            what="list request",
        )
    return status.upper() if status else None


def information(record: dict[str, Any]) -> JobInformation:
    """The JobInformation part of a full job record."""
    return JobInformation.model_validate({k: record[k] for k in INFORMATION if k in record})


def _runs_alone(row: Any) -> bool:
    """True when the job's owner is a process of its own (a job process, a CLI run), not the
    server that only scheduled it."""
    return os.getpid() != int(str(row["owner"]).split(":")[0])
