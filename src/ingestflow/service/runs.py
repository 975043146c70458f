"""Runs: a workflow run in the foreground (the CLI) or as a background job (the API, schedules).

A foreground run builds the plan, opens the connectors and runs the job in this process. A
background run is recorded SCHEDULED with everything it needs (uploaded files stored inside the
workspace, the workflow as it was when submitted); a job process (`ingestflow.service.jobproc`)
runs it later, so the server keeps answering while it does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ingestflow.errors import NotFound, TooLarge, WorkflowInvalid
from ingestflow.runner.events import Listener
from ingestflow.spec.problems import Problem
from ingestflow.spec.record import mask_secrets
from ingestflow.store import NodeStats, Workspace

ProgressFn = Listener  # a listener of runner.events (service.progress re-exports them)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Upload:
    """One uploaded file: the name the client gave and a stream of its bytes."""

    filename: str
    stream: IO[bytes]


@dataclass(frozen=True)
class UploadLimits:
    """What one request may upload (the hosted service allows 10 files of 10 MB), and how large
    a JSON body or an on-demand job's `request_data` may be (`serve --max-body-mb`)."""

    max_files: int = 100
    max_file_bytes: int = 100 << 20
    # Real workflow and connector bodies are a few KB; parsing takes ~140x their size in memory
    # (a 50 MB body peaked at 6.9 GB), so 2 MB keeps the worst case near 300 MB.
    max_body_bytes: int = 2 << 20


@dataclass
class Prepared:
    """A run ready to start: its plan, connectors and options."""

    plan: Any
    source: Any
    destination: Any
    options: Any
    total: int | None


class Runs:
    """Foreground runs, background submissions, and the body of a job process."""

    def __init__(self, ws: Workspace, connectors: Any, workflows: Any) -> None:
        self.ws = ws
        self.connectors = connectors
        self.workflows = workflows

    # --- foreground (CLI) -----------------------------------------------------------------
    def prepare(
        self,
        body: Any,
        *,
        inputs: list[Path],
        output: Path | None,
        output_default: Path | None = None,
        source_ref: str | None = None,
        destination_ref: str | None = None,
        on_oversize: list[str] | None = None,
        workers: int = 0,
        trace: bool = False,
        workflow_id: str = "local",
        job_type: str = "ephemeral",
        job_id: str | None = None,
        cache: bool = True,
        from_job: str | None = None,
        start_at: str | None = None,
        executor: str = "local",
        ray_address: str | None = None,
        doc_timeout: float | None = 1800.0,
        preload: bool = False,
        identity: str | None = None,
        keep_deleted: bool = False,
        resume: bool = False,
    ) -> Prepared:
        """Check a workflow body and the run's arguments, and open its connectors.

        With `trace` (and `cache`), documents start from the node-output cache; with `from_job`,
        from that job's stored outputs (at the first node whose settings changed, or
        `start_at`). `preload`: this process runs this one job, so its workers may be forked
        from a server that loads their libraries once (`runner.preload`). `identity`: the local
        files' record ids come from it and their names, not their paths (uploads). `output`:
        the folder asked for (an error with a destination connector); `output_default`: where
        local output goes when none is asked for (default ./output). `keep_deleted`: keep what
        left the source in the destination (`runner.deletions`); `resume`: `job_id` is a job
        continued in place (`service.resume`)."""
        from ingestflow.runner.executor import RunOptions
        from ingestflow.runner.plan import build_plan

        plan = build_plan(body)
        source_ref = source_ref or plan.workflow.source_id
        if output is not None and (destination_ref or plan.workflow.destination_id):
            conflict = output_conflict(output, from_workflow=destination_ref is None)
            raise WorkflowInvalid([conflict], what="run request")
        destination_ref = destination_ref or plan.workflow.destination_id
        output = output or output_default
        total: int | None = None
        if source_ref is None:
            if not inputs:
                raise WorkflowInvalid(
                    [
                        Problem(
                            "--input",
                            "this workflow reads local files: give at least one file or folder",
                            hint="`ingestflow run WORKFLOW --input FILE_OR_FOLDER`, or files "
                            "in the request body through the API",
                        )
                    ],
                    what="run request",
                )
            exclude = [
                self.ws.root,
                *([output or Path("output")] if destination_ref is None else []),
            ]
            checked = self.connectors.local(
                "source", inputs=inputs, exclude=exclude, identity=identity
            )
            source = self.connectors.build(checked)
            source_key = checked.entry.source_key(checked.config)  # uploads: none
            if all(p.exists() for p in inputs):
                total = source.count()
        else:
            if inputs:
                raise WorkflowInvalid(
                    [
                        Problem(
                            "--input",
                            "files are for a workflow with a local source; this one reads "
                            "from a source connector",
                        )
                    ],
                    what="run request",
                )
            checked = self.connectors.resolve(source_ref, "source")
            source = self.connectors.build(checked)
            source_key = checked.entry.source_key(checked.config)
        output_dir: str | None = None
        if destination_ref is None:
            if on_oversize:
                raise WorkflowInvalid(
                    [
                        Problem(
                            "--on-oversize",
                            "--on-oversize applies to a vectordb destination; this run "
                            "writes local files",
                        )
                    ],
                    what="run request",
                )
            output = output or Path("output")
            checked = self.connectors.local("destination", output=output)
            destination = self.connectors.build(checked)
            destination_key = checked.entry.identity(checked.config)
            output_dir = str(output.resolve())
        else:
            checked = self.connectors.resolve(destination_ref, "destination")
            destination = self.connectors.build(
                checked, varchar_policy=parse_policies(on_oversize or [])
            )
            destination_key = checked.entry.identity(checked.config)
        if executor not in ("local", "ray"):
            raise WorkflowInvalid(
                [
                    Problem(
                        "--executor", "unknown executor", found=executor, allowed=["local", "ray"]
                    )
                ],
                what="run request",
            )
        options = RunOptions(
            doc_timeout=doc_timeout,
            executor=executor,
            ray_address=ray_address,
            reuse=self._reuse(plan, trace, cache, from_job, start_at),
            workers=workers,
            trace=trace,
            output_dir=output_dir,
            destination_key=destination_key,
            workflow_id=workflow_id,
            job_type=job_type,
            job_id=job_id,
            preload=preload,
            source_key=source_key,
            keep_deleted=keep_deleted,
            resume=resume,
            expected=total,
        )
        return Prepared(plan, source, destination, options, total)

    def _reuse(
        self, plan: Any, trace: bool, cache: bool, from_job: str | None, start_at: str | None
    ) -> Any:
        from ingestflow.runner.reuse import NodeCache, Reuse
        from ingestflow.runner.reuse import from_job as job_outputs

        if start_at is not None and from_job is None:
            raise WorkflowInvalid(
                [Problem("--start-at", "--start-at needs --from-job (the job to start from)")],
                what="run request",
            )
        node_cache = NodeCache(self.ws.root / "cache" / "nodes") if trace and cache else None
        job = None
        if from_job is not None:
            job = job_outputs(plan, self.ws.job_record(from_job), self.ws, start_at)
        if node_cache is None and job is None:
            return None
        return Reuse(plan, node_cache, job)

    def start(self, prepared: Prepared, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Run a prepared run to its end in this process; returns the job record."""
        from ingestflow.runner.executor import JobRunner

        return JobRunner(
            prepared.plan,
            prepared.source,
            prepared.destination,
            self.ws,
            prepared.options,
            progress,
        ).run()

    # --- background (API, schedules) ------------------------------------------------------
    def submit(
        self,
        ref: str,
        uploads: Iterable[Upload] = (),
        limits: UploadLimits | None = None,
        job_type: str | None = None,
        keep_deleted: bool = False,
    ) -> dict[str, Any]:
        """Record a SCHEDULED job of a stored workflow (with its uploaded files); returns its
        record. The launcher starts it. `keep_deleted`: see `prepare`."""
        row = self.workflows.row(ref)
        body = row["body"]
        local = body.get("source_id") is None
        job_id = str(uuid.uuid4())
        uploads = list(uploads)
        if local and not uploads:
            raise WorkflowInvalid(
                [
                    Problem(
                        "input_files",
                        "this workflow reads local files: send them with the run request",
                        hint="multipart form field `input_files` (or `input_files[]`), one part "
                        "per file",
                    )
                ],
                what="run request",
            )
        if not local and uploads:
            raise WorkflowInvalid(
                [
                    Problem(
                        "input_files",
                        "files are for a workflow with a local source; this one reads from "
                        "its source connector",
                    )
                ],
                what="run request",
            )
        from ingestflow.runner.plan import build_plan

        plan = build_plan(body)  # checked again: the rules or the models may have changed
        folder = self.store_uploads(job_id, uploads, limits or UploadLimits()) if local else None
        if job_type is None:
            job_type = "template" if body.get("workflow_type") == "template" else "persistent"
            job_type = "ephemeral" if row["kind"] != "persistent" else job_type
        output_dir = None
        if body.get("destination_id") is None:
            output_dir = str((self.ws.root / "jobs" / job_id / "output").resolve())
        run: dict[str, Any] = {"body": body, "inputs": [str(folder)] if folder else []}
        if local:  # an upload is one document of its workflow, whichever job it came with
            run["identity"] = f"upload:{row['id']}"
        if keep_deleted:
            run["keep_deleted"] = True
        info = {
            "output_dir": output_dir,
            "trace": True,
            "workflow": mask_secrets(body),
            "run": run,
            "on_demand": row["kind"] != "persistent",
        }
        stats = [NodeStats(n.id, n.name, n.type, n.subtype) for n in plan.nodes]
        try:
            with self.ws.transaction():  # a delete of the workflow waits, then sees this job
                if self.ws.workflows.get(row["id"]) is None:
                    raise NotFound(
                        f"workflow {row['id']!r} not found: it was deleted while this run was "
                        "being submitted (nothing was run)"
                    )
                self.ws.create_job(row["id"], row["name"], job_type, stats, info, job_id=job_id)
        except BaseException:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        return self.ws.job_record(job_id)

    def on_demand(
        self, request_data: Any, uploads: Iterable[Upload], limits: UploadLimits | None = None
    ) -> dict[str, Any]:
        """An on-demand job: a workflow that lives only for this job (`template_id` or
        `job_nodes`, local files in and out)."""
        from ingestflow.service.bodies import request_data as parsed
        from ingestflow.service.workflows import ON_DEMAND

        data = parsed(request_data, limits or UploadLimits())
        name = f"on-demand {uuid.uuid4()}"
        if "template_id" in data:  # local files in and out: the template's nodes, as custom
            from ingestflow.spec.templates import TEMPLATES

            template = TEMPLATES.get(str(data["template_id"]))
            if template is None:
                raise WorkflowInvalid(
                    [
                        Problem(
                            "request_data.template_id",
                            "no template has this id",
                            found=data["template_id"],
                            allowed=list(TEMPLATES),
                        )
                    ],
                    what="job request",
                )
            body = {"name": name, "workflow_type": "custom", "workflow_nodes": list(template.nodes)}
        else:
            body = {"name": name, "workflow_type": "custom", "workflow_nodes": data["job_nodes"]}
        record = self.workflows.create(body, kind=ON_DEMAND)
        try:
            return self.submit(record["id"], uploads, limits, job_type="ephemeral")
        except BaseException:
            self.ws.workflows.delete(record["id"])
            raise

    def store_uploads(self, job_id: str, uploads: list[Upload], limits: UploadLimits) -> Path:
        """Copy uploads into `uploads/<job>/<name>` inside the workspace, bounded in count and
        size; whatever a file name says, nothing lands outside that folder. Two files of one name
        are refused: the name is the document's identity in its workflow."""
        if len(uploads) > limits.max_files:
            raise WorkflowInvalid(
                [
                    Problem(
                        "input_files",
                        f"too many files in one request (at most {limits.max_files})",
                        found=len(uploads),
                        hint="split them over several runs, or raise `serve --max-files`",
                    )
                ],
                what="run request",
            )
        names = _upload_names(uploads)
        folder = self.ws.root / "uploads" / job_id
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for upload, name in zip(uploads, names, strict=True):
                _copy_bounded(upload, folder / name, limits.max_file_bytes)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return folder

    def execute(self, job_id: str, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Run a SCHEDULED background job in this process (the job process calls this)."""
        from ingestflow.errors import one_line as reason
        from ingestflow.store.claims import take_job
        from ingestflow.store.jobs import process_owner

        row = self.ws.job_row(job_id)
        if not take_job(self.ws.db, row["id"], process_owner()):
            return self.ws.job_record(job_id)  # cancelled, or started by another process
        info = json.loads(row["info"] or "{}")
        run = info.get("run") or {}
        try:
            if info.get("resumed"):  # continued in place (service.resume)
                from ingestflow.service.resume import prepare_resume

                prepared = prepare_resume(self, row, preload=True)
                return self.start(prepared, progress)
            prepared = self.prepare(
                run.get("body"),
                inputs=[Path(p) for p in run.get("inputs", [])],
                output=Path(info["output_dir"]) if info.get("output_dir") else None,
                trace=bool(info.get("trace")),
                workflow_id=row["workflow_id"],
                job_type=row["job_type"],
                job_id=job_id,
                preload=True,  # a job process runs one job
                identity=run.get("identity"),
                keep_deleted=bool(run.get("keep_deleted")),
            )
            return self.start(prepared, progress)
        except Exception as exc:
            current = self.ws.job_row(job_id)
            if current["status"] in ("SCHEDULED", "IN_PROGRESS"):
                message = reason(exc)  # every problem, on one line (not just the heading)
                self.ws.update_job(
                    job_id, status="FAILED", processing_status="FAILED", message=message
                )
            return self.ws.job_record(job_id)
        finally:
            if info.get("on_demand"):
                self.ws.workflows.delete(row["workflow_id"])


def run_node(
    body: Any, node: str, elements: list[dict[str, Any]], path: Path | None, filename: str
) -> list[dict[str, Any]]:
    """One node of a workflow in this process: a partitioner on the file at `path`, any other
    node on `elements`. Nothing is recorded."""
    from ingestflow.connectors.local import file_record_id
    from ingestflow.elements import Document
    from ingestflow.offline import set_offline_env
    from ingestflow.runner.plan import build_plan

    set_offline_env()
    plan = build_plan(body)
    names = [n.name for n in plan.nodes]
    index = next((i for i, n in enumerate(plan.nodes) if node in (n.name, n.id)), None)
    if index is None:
        raise WorkflowInvalid(
            [Problem("node", f"no node is called {node!r}", allowed=names)], what="request"
        )
    planned = plan.nodes[index]
    if planned.type == "partition":
        if path is None or not path.is_file():
            raise WorkflowInvalid(
                [Problem("path", "a partitioner runs on a file: give its path", found=str(path))],
                what="request",
            )
        record = file_record_id(path)
        doc = Document(record, record, path.name, path=path)
    else:
        if path is not None:
            raise WorkflowInvalid(
                [Problem("path", f"the {planned.name} node runs on elements, not on a file")],
                what="request",
            )
        doc = Document(filename, filename, filename, elements=[dict(e) for e in elements])
    stage = plan.stages()[index]
    stage.open()
    try:
        done = stage.process_many([doc])[0] if stage.batched else stage.process(doc)
    finally:
        stage.close()
    return done.elements


#: The longest file name the usual filesystems take (NAME_MAX), in bytes of UTF-8.
MAX_NAME_BYTES = 255
#: A longer suffix is not an extension (`.pdf`, `.docx`): it is cut with the rest of the name.
_MAX_SUFFIX_BYTES = 32


def safe_filename(name: str | None, number: int) -> str:
    """A file name that is only a name: no folders, no `..`, no control characters, and at
    most MAX_NAME_BYTES of UTF-8, cut before its extension and never inside a character."""
    base = unicodedata.normalize("NFC", str(name or "")).replace("\\", "/").split("/")[-1]
    base = base.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate names no file
    base = re.sub(r"[\x00-\x1f\x7f]", "", base).strip()
    if base in ("", ".", "..") or base.startswith("."):
        base = f"upload-{number}{Path(base).suffix if base not in ('.', '..') else ''}"
    if len(base.encode("utf-8")) <= MAX_NAME_BYTES:
        return base
    stem, suffix = os.path.splitext(base)
    if len(suffix.encode("utf-8")) > _MAX_SUFFIX_BYTES:
        stem, suffix = base, ""
    room = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
    # "ignore" drops only the bytes of a character the cut split (the rest is valid UTF-8)
    return stem.encode("utf-8")[:room].decode("utf-8", "ignore").rstrip() + suffix


def _upload_names(uploads: list[Upload]) -> list[str]:
    """The names uploads are stored under; WorkflowInvalid when two files have one name."""
    names = [safe_filename(upload.filename, number) for number, upload in enumerate(uploads)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise WorkflowInvalid(
                [
                    Problem(
                        "input_files",
                        f"two files are named {name!r}: a file's name is the document's "
                        "identity in its workflow (a re-run replaces it)",
                        found=name,
                        hint="rename one of them, or send them in separate runs",
                    )
                ],
                what="run request",
            )
        seen.add(name)
    return names


def _copy_bounded(upload: Upload, target: Path, limit: int) -> None:
    written = 0
    with open(target, "wb") as out:
        while chunk := upload.stream.read(_CHUNK):
            written += len(chunk)
            if written > limit:
                raise TooLarge(
                    f"{safe_filename(upload.filename, 0)} is larger than the {size_text(limit)} "
                    "a file may be (raise `serve --max-file-mb` to accept larger files)"
                )
            out.write(chunk)


def size_text(size: int) -> str:
    """A size for messages: bytes, KB or MB, whichever reads best."""
    if size < 1 << 10:
        return f"{size} bytes"
    if size < 1 << 20:
        return f"{size / (1 << 10):g} KB"
    return f"{size / (1 << 20):g} MB"


def parse_policies(items: list[str]) -> dict[str, str]:
    """`FIELD=fail|drop|truncate` options as a policy map; WorkflowInvalid when malformed."""
    policies: dict[str, str] = {}
    for item in items:
        field, _, policy = item.partition("=")
        if not field or policy not in ("fail", "drop", "truncate"):
            raise WorkflowInvalid(
                [Problem("--on-oversize", f"expected FIELD=fail|drop|truncate, found {item!r}")],
                what="run request",
            )
        policies[field] = policy
    return policies


def output_conflict(output: Path, from_workflow: bool) -> Problem:
    """The problem of an output folder asked for by a run that writes to a destination
    connector (`from_workflow`: named by the workflow's destination_id, not by the run)."""
    named_by = "the workflow's destination_id" if from_workflow else "--destination"
    fix = "remove destination_id from the workflow" if from_workflow else "leave out --destination"
    return Problem(
        "--output",
        f"this run writes to the destination connector named by {named_by}; an output folder "
        "is for runs that write local files, and nothing would be written to it",
        found=str(output),
        hint=f"leave out --output to write to the destination connector, or {fix} to write "
        "local files to the folder",
    )
