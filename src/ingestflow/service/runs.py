"""Runs: a workflow run in the foreground (the CLI) or as a background job (the API, schedules).

A foreground run builds the plan, opens the connectors and runs the job in this process. A
background run is recorded SCHEDULED with everything it needs (uploaded files stored inside the
workspace, the workflow as it was when submitted); a job process (`ingestflow.service.jobproc`)
runs it later, so the server keeps answering while it does.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.errors import NotFound, WorkflowInvalid
from ingestflow.runner.events import JobPrepared, Listener
from ingestflow.service.prepare import Prepared, prepare
from ingestflow.service.requests import (
    ExecutionOptions,
    JobType,
    RunRequest,
    job_type_of,
    request_problem,
)
from ingestflow.service.sweep import sweep
from ingestflow.service.uploads import Upload, UploadLimits, store_uploads
from ingestflow.spec.problems import Problem
from ingestflow.spec.record import mask_secrets
from ingestflow.store import NodeStats, Workspace

if TYPE_CHECKING:
    from ingestflow.service.connectors import Connectors
    from ingestflow.service.workflows import Workflows

ProgressFn = Listener  # a listener of runner.events (service.progress re-exports them)


class Runs:
    """Foreground runs, background submissions, and the body of a job process."""

    def __init__(self, ws: Workspace, connectors: Connectors, workflows: Workflows) -> None:
        self.ws = ws
        self.connectors = connectors
        self.workflows = workflows

    # --- foreground (CLI) -----------------------------------------------------------------
    def prepare(self, request: RunRequest) -> Prepared:
        """Check a run request and open its connectors (`service.prepare.prepare`)."""
        return prepare(self.ws, self.connectors, request)

    def run_here(
        self,
        request: RunRequest,
        progress: ProgressFn | None = None,
        warnings: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Run a request to its end in this process as a new job, kept so that it can resume in
        place (`service.resume`); returns the job record. `progress` hears `JobPrepared` (with
        the document count when known, and the workflow's `warnings`) before the run starts."""
        from ingestflow.service.resume import remember

        sweep(self.ws)
        prepared = self.prepare(request)
        remember(prepared, request)
        if progress is not None:
            progress(JobPrepared(prepared.total, warnings))
        return self.start(prepared, progress)

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
        job_type: JobType | None = None,
        keep_deleted: bool = False,
    ) -> dict[str, Any]:
        """Record a SCHEDULED job of a stored workflow (with its uploaded files); returns its
        record. The launcher starts it. `keep_deleted`: see `RunRequest`."""
        row = self.workflows.row(ref)
        body = row["body"]
        local = body.get("source_id") is None
        job_id = str(uuid.uuid4())
        uploads = list(uploads)
        if local and not uploads:
            raise request_problem(
                "inputs",
                "this workflow reads local files: send them with the run request",
                hint="send each file as a part named `inputs` in a multipart body",
            )
        if not local and uploads:
            raise request_problem(
                "inputs",
                "files are for a workflow with a local source; this one reads from its source "
                "connector",
            )
        from ingestflow.runner.plan import build_plan

        plan = build_plan(body)  # checked again: the rules or the models may have changed
        folder = (
            store_uploads(self.ws.root, job_id, uploads, limits or UploadLimits())
            if local
            else None
        )
        job_type = job_type or job_type_of(row)
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
            return self.submit(record.id, uploads, limits, job_type="ephemeral")
        except BaseException:
            self.ws.workflows.delete(record.id)
            raise

    def execute(self, job_id: str, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Run a SCHEDULED background job in this process (the job process calls this)."""
        from ingestflow.errors import one_line as reason
        from ingestflow.store.claims import take_job
        from ingestflow.store.owners import process_owner

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
            request = RunRequest(
                run.get("body"),
                inputs=tuple(Path(p) for p in run.get("inputs", [])),
                output=Path(info["output_dir"]) if info.get("output_dir") else None,
                trace=bool(info.get("trace")),
                workflow_id=row["workflow_id"],
                job_type=row["job_type"],
                job_id=job_id,
                identity=run.get("identity"),
                keep_deleted=bool(run.get("keep_deleted")),
                execution=ExecutionOptions(preload=True),  # a job process runs one job
            )
            prepared = self.prepare(request)
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
