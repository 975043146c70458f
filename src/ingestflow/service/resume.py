"""Resuming a job in place (`ingestflow jobs resume JOB`, `POST /api/v1/jobs/{id}/resume`): the
same job goes on with the documents it had not written yet (`runner.resume`).

The rules (docs/resume.md says them to users):
- a STOPPED or FAILED job resumes; a job whose process died (killed, a crash, a reboot) is FAILED,
  "interrupted", as soon as the workspace is opened again;
- a job still scheduled or running is refused (stop it first), and so is a finished one
  (COMPLETED: nothing is left; run the workflow again to retry its failed documents);
- the workflow must be the one the job ran: a workflow file or stored workflow changed or
  deleted since is refused (the job's outputs would mix two versions of it); a job of an
  on-demand workflow, or of a body handed to the Python API, has nothing to compare with and is
  refused too;
- a run from the CLI keeps what its source and destination were: a connector that now points
  elsewhere (other input folders, another wiki or collection) is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ingestflow.errors import Conflict, WorkflowInvalid
from ingestflow.service.requests import ExecutionOptions, RunRequest
from ingestflow.service.sweep import sweep
from ingestflow.spec.record import mask_secrets
from ingestflow.store.job_rows import ACTIVE_STATUSES
from ingestflow.store.owners import process_owner

RESUMABLE = ("STOPPED", "FAILED")
#: What a foreground run keeps with its job (besides its output folder and trace flag).
KEPT = (
    "inputs",
    "source_ref",
    "destination_ref",
    "on_oversize",
    "workers",
    "executor",
    "ray_address",
    "ray_shared_fs",
    "doc_timeout",
    "cache",
    "keep_deleted",
    "from_job",
    "start_at",
)
_DOCS = "see docs/resume.md"


def remember(prepared: Any, request: RunRequest) -> None:
    """Keep with a new foreground job what it takes to run it again in place: the request's
    options (paths made absolute) and what its source and destination were."""
    run = request.execution
    given: dict[str, Any] = {
        "inputs": [str(Path(p).resolve()) for p in request.inputs],
        "source_ref": request.source,
        "destination_ref": request.destination,
        "on_oversize": dict(request.on_oversize),
        "workers": run.workers,
        "executor": run.executor,
        "ray_address": run.ray_address,
        "ray_shared_fs": run.ray_shared_fs or None,
        "doc_timeout": run.doc_timeout,
        "cache": request.cache,
        "keep_deleted": request.keep_deleted,
        "from_job": request.from_job,
        "start_at": request.start_at,
    }
    args = {k: given[k] for k in KEPT if given[k] not in (None, [], {})}
    for ref in ("source_ref", "destination_ref"):  # a connector file, wherever resumed from
        if ref in args and Path(args[ref]).is_file():
            args[ref] = str(Path(args[ref]).resolve())
    opts = prepared.options
    args["keys"] = [opts.source_key, opts.destination_key]
    opts.run_args = args


def check(ws: Any, ref: str) -> Any:
    """The job's row when it may resume; Conflict saying why not otherwise."""
    sweep(ws)  # a job whose process died is FAILED (interrupted) from here on
    row = ws.job_row(ref)
    job, status = row["id"], row["status"]
    if status in ACTIVE_STATUSES:
        raise Conflict(
            f"job {job} is {status.lower().replace('_', ' ')}: only a stopped or failed job "
            f"resumes; wait for it to end, or stop it (`ingestflow jobs cancel {job}`) and "
            f"resume it then ({_DOCS})"
        )
    if status not in RESUMABLE:
        raise Conflict(
            f"job {job} finished ({status}, {row['processing_status']}): there is nothing to "
            "resume; to retry its failed documents, run the workflow again (with reprocess_all "
            f"false only the documents not written are done again) ({_DOCS})"
        )
    info = json.loads(row["info"] or "{}")
    if info.get("on_demand"):
        raise Conflict(
            f"job {job} ran an on-demand workflow, which lived only for that job: submit the "
            f"job again ({_DOCS})"
        )
    if not isinstance(info.get("run"), dict):
        raise Conflict(
            f"job {job} kept no record of how it was run (it ran before jobs could resume): "
            f"run the workflow again ({_DOCS})"
        )
    return row


def _same(stored: Any, body: Any) -> bool:
    """True when a workflow body is the one a job recorded (masked, as given or as checked)."""
    if stored == mask_secrets(body):
        return True
    from ingestflow.runner.plan import build_plan

    try:
        checked = build_plan(body).workflow.model_dump(mode="json")
    except WorkflowInvalid:
        return False
    return stored == mask_secrets(checked)


def body_for(runs: Any, row: Any, info: dict[str, Any]) -> Any:
    """The workflow to resume with: the job's own, unchanged since it ran."""
    from ingestflow.service.validation import load_json

    job, workflow_id = row["id"], str(row["workflow_id"])
    run = info["run"]
    if workflow_id.startswith("file:"):
        where = f"the workflow file {workflow_id[5:]}"
        body, problems = load_json(Path(workflow_id[5:]))
        if problems:
            raise Conflict(f"{where} of job {job} cannot be read now: {problems[0]} ({_DOCS})")
    elif workflow_id.startswith("api:"):
        raise Conflict(
            f"job {job} ran a workflow handed to the Python API as a body, which was not kept: "
            f"run it again ({_DOCS})"
        )
    else:
        where = f"the stored workflow {workflow_id}"
        stored = runs.ws.workflows.get(workflow_id)
        if stored is None:
            raise Conflict(f"{where} of job {job} was deleted since: run it again ({_DOCS})")
        body = stored["body"]
    if not _same(info.get("workflow"), body):
        raise Conflict(
            f"{where} changed since job {job} ran: resumed, its outputs would mix two versions "
            "of the workflow. Run the workflow again as a new job (with reprocess_all false, "
            f"only changed and new documents are done) ({_DOCS})"
        )
    return run.get("body", body)  # a background job keeps its body (secrets and all)


def prepare_resume(runs: Any, row: Any, preload: bool = False) -> Any:
    """A resumable job's run, prepared to continue in place (connectors opened, nothing run)."""
    info = json.loads(row["info"] or "{}")
    body = body_for(runs, row, info)
    run = info["run"]
    request = RunRequest(
        body,
        inputs=tuple(Path(p) for p in run.get("inputs", [])),
        output=Path(info["output_dir"]) if info.get("output_dir") else None,
        source=run.get("source_ref"),
        destination=run.get("destination_ref"),
        on_oversize=kept_policies(run.get("on_oversize")),
        trace=bool(info.get("trace")),
        cache=run.get("cache", True),
        from_job=run.get("from_job"),
        start_at=run.get("start_at"),
        workflow_id=row["workflow_id"],
        job_type=row["job_type"],
        job_id=row["id"],
        identity=run.get("identity"),
        keep_deleted=bool(run.get("keep_deleted")),
        resume=True,
        execution=ExecutionOptions(
            workers=run.get("workers", 0),
            executor=run.get("executor", "local"),
            ray_address=run.get("ray_address"),
            ray_shared_fs=bool(run.get("ray_shared_fs")),
            doc_timeout=run.get("doc_timeout", 1800.0),
            preload=preload,
        ),
    )
    prepared = runs.prepare(request)
    keys = run.get("keys")
    now = [prepared.options.source_key, prepared.options.destination_key]
    if keys is not None and keys != now:
        what = "source" if keys[0] != now[0] else "destination"
        raise Conflict(
            f"job {row['id']}'s {what} is not what it was when the job ran (a connector was "
            "changed, or its inputs are gone): resumed, its outputs would be split over two "
            f"places. Run the workflow again as a new job ({_DOCS})"
        )
    return prepared


def kept_policies(stored: Any) -> dict[str, Any]:
    """A job's kept oversize policies: a map, or (jobs run before requests were typed) a list of
    `FIELD=POLICY` items."""
    if isinstance(stored, list):
        return dict(str(item).partition("=")[::2] for item in stored)
    return dict(stored or {})


def _claim(ws: Any, job_id: str, status: str, owner: str, info: dict[str, Any] | None) -> None:
    """Take a resumable job for this resume (another resume may have taken it meanwhile)."""
    sets = "status = ?, processing_status = ?, owner = ?, message = NULL, finished_at = NULL"
    args: list[Any] = [status, status, owner]
    if info is not None:
        sets += ", info = ?"
        args.append(json.dumps(info))
    taken = ws.db.execute(
        f"UPDATE jobs SET {sets} WHERE id = ? AND status IN (?, ?)", (*args, job_id, *RESUMABLE)
    ).rowcount
    if taken != 1:
        raise Conflict(f"job {job_id} was resumed by another process meanwhile ({_DOCS})")


def resume_here(runs: Any, ref: str) -> Any:
    """Check a job and take it to continue in this process (the CLI); its prepared run."""
    row = check(runs.ws, ref)
    prepared = prepare_resume(runs, row, preload=True)
    _claim(runs.ws, row["id"], "IN_PROGRESS", process_owner(), None)
    return prepared


def schedule(runs: Any, ref: str) -> dict[str, Any]:
    """Check a job and hand it to the launcher to continue (the API); its record, SCHEDULED."""
    row = check(runs.ws, ref)
    prepared = prepare_resume(runs, row)  # checked now: a refusal is the request's answer
    for connector in (prepared.source, prepared.destination):
        connector.close()
    info = json.loads(row["info"] or "{}")
    info["resumed"] = int(info.get("resumed") or 0) + 1
    _claim(runs.ws, row["id"], "SCHEDULED", process_owner(), info)
    return runs.ws.job_record(row["id"])
