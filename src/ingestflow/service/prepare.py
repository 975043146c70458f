"""Preparing a run: its workflow checked into a plan, its source and destination opened, its
options settled; nothing run yet (`Runs.start` runs it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.errors import WorkflowInvalid
from ingestflow.service.requests import (
    RequestInvalid,
    RunRequest,
    check_policies,
    request_problem,
    value_problems,
)
from ingestflow.spec.problems import Problem
from ingestflow.store import Workspace

if TYPE_CHECKING:  # the runner is imported when a run is prepared, not with the service
    from ingestflow.runner.executor import RunOptions
    from ingestflow.runner.plan import Plan
    from ingestflow.service.connectors import Connectors


@dataclass
class Prepared:
    """A run ready to start: its plan, connectors and options."""

    plan: Plan
    source: Any  # a source connector (connectors/base.py)
    destination: Any  # a destination connector
    options: RunOptions
    total: int | None


def prepare(ws: Workspace, connectors: Connectors, request: RunRequest) -> Prepared:
    """Check a run request (its workflow body and the run's options), and open its connectors
    (`connectors`: the workspace's `service.connectors.Connectors`); RequestInvalid names the
    request's fields, WorkflowInvalid the body's paths."""
    from ingestflow.runner.executor import RunOptions
    from ingestflow.runner.executors.registry import RayOptions, names
    from ingestflow.runner.plan import build_plan, plan_from_checked

    r, run = request, request.execution
    wrong = value_problems(r)
    if wrong:
        raise RequestInvalid(wrong)
    inputs = list(r.inputs)
    # checked once: by the front end (its result comes with the request), or here
    plan = plan_from_checked(r.checked) if r.checked is not None else build_plan(r.body)
    if run.executor not in names():
        raise request_problem(
            "execution.executor", "unknown executor", found=run.executor, allowed=list(names())
        )
    check_policies(r.on_oversize)
    source_ref = r.source or plan.workflow.source_id
    if r.output is not None and (r.destination or plan.workflow.destination_id):
        raise RequestInvalid([output_conflict(r.output, from_workflow=r.destination is None)])
    destination_ref = r.destination or plan.workflow.destination_id
    output = r.output or r.output_default
    total: int | None = None
    if source_ref is None:
        if not inputs:
            raise request_problem(
                "inputs",
                "this workflow reads local files: give at least one file or folder",
                hint="name the files or folders to read in `inputs`",
            )
        exclude = [ws.root, *([output or Path("output")] if destination_ref is None else [])]
        checked = connectors.local("source", inputs=inputs, exclude=exclude, identity=r.identity)
        source = connectors.build(checked)
        source_key = checked.entry.source_key(checked.config)  # uploads: none
        if all(p.exists() for p in inputs):
            total = source.count()
    else:
        if inputs:
            raise request_problem(
                "inputs",
                "files are for a workflow with a local source; this one reads from a source "
                "connector",
            )
        checked = connectors.resolve(source_ref, "source")
        source = connectors.build(checked)
        source_key = checked.entry.source_key(checked.config)
    output_dir: str | None = None
    if destination_ref is None:
        if r.on_oversize:
            raise request_problem(
                "on_oversize",
                "`on_oversize` applies to a vectordb destination; this run writes local files",
            )
        output = output or Path("output")
        # an output in the workspace (a served job's, the Python API's default) is private too
        inside = output.resolve().is_relative_to(ws.root.resolve())
        checked = connectors.local("destination", output=output, private=inside)
        destination = connectors.build(checked)
        destination_key = checked.entry.identity(checked.config)
        output_dir = str(output.resolve())
    else:
        checked = connectors.resolve(destination_ref, "destination")
        destination = connectors.build(checked, varchar_policy=dict(r.on_oversize))
        destination_key = checked.entry.identity(checked.config)
    options = RunOptions(
        doc_timeout=run.doc_timeout,
        executor=run.executor,
        executor_options={"ray": RayOptions(run.ray_address, run.ray_shared_fs)},
        reuse=_reuse(ws, plan, r),
        workers=run.workers,
        trace=r.trace,
        output_dir=output_dir,
        destination_key=destination_key,
        workflow_id=r.workflow_id,
        job_type=r.job_type,
        job_id=r.job_id,
        preload=run.preload,
        source_key=source_key,
        keep_deleted=r.keep_deleted,
        resume=r.resume,
        expected=total,
    )
    return Prepared(plan, source, destination, options, total)


def _reuse(ws: Workspace, plan: Plan, r: RunRequest) -> Any:
    """Where documents may start from: the node-output cache (a traced run), a job's stored
    outputs (`from_job`), or nowhere (None)."""
    from ingestflow.runner.reuse import NodeCache, Reuse
    from ingestflow.runner.reuse import from_job as job_outputs

    if r.start_at is not None and r.from_job is None:
        raise request_problem("start_at", "`start_at` needs `from_job` (the job to start from)")
    node_cache = NodeCache(ws.root / "cache" / "nodes") if r.trace and r.cache else None
    job = None
    if r.from_job is not None:
        try:
            job = job_outputs(plan, ws.job_record(r.from_job), ws, r.start_at)
        except WorkflowInvalid as exc:  # its problems name `from_job` and `start_at`
            raise RequestInvalid(exc.problems) from None
    if node_cache is None and job is None:
        return None
    return Reuse(plan, node_cache, job)


def output_conflict(output: Path, from_workflow: bool) -> Problem:
    """The problem of an output folder asked for by a run that writes to a destination
    connector (`from_workflow`: named by the workflow's destination_id, not by the run)."""
    named_by = "the workflow's destination_id" if from_workflow else "`destination`"
    fix = "remove destination_id from the workflow" if from_workflow else "leave out `destination`"
    return Problem(
        "output",
        f"this run writes to the destination connector named by {named_by}; an output folder "
        "is for runs that write local files, and nothing would be written to it",
        found=str(output),
        hint=f"leave out `output` to write to the destination connector, or {fix} to write "
        "local files to the folder",
    )
