"""Preparing a run: its workflow checked into a plan, its source and destination opened, its
options settled; nothing run yet (`Runs.start` runs it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestflow.errors import WorkflowInvalid
from ingestflow.spec.problems import Problem
from ingestflow.store import Workspace


@dataclass
class Prepared:
    """A run ready to start: its plan, connectors and options."""

    plan: Any
    source: Any
    destination: Any
    options: Any
    total: int | None


def prepare(
    ws: Workspace,
    connectors: Any,
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
    """Check a workflow body and the run's arguments, and open its connectors (`connectors`:
    the workspace's `service.connectors.Connectors`).

    With `trace` (and `cache`), documents start from the node-output cache; with `from_job`,
    from that job's stored outputs (at the first node whose settings changed, or
    `start_at`). `preload`: this process runs this one job, so its workers may be forked
    from a server that loads their libraries once (`runner.preload`). `identity`: the local
    files' record ids come from it and their names, not their paths (uploads). `output`:
    the folder asked for (an error with a destination connector); `output_default`: where
    local output goes when none is asked for (default ./output). `keep_deleted`: keep what
    left the source in the destination (`runner.deletions`); `resume`: `job_id` is a job
    continued in place (`service.resume`)."""
    from ingestflow.connectors.local import LocalDestination, LocalSource
    from ingestflow.runner.deletions import connector_source_key, local_source_key
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
            ws.root,
            *([output or Path("output")] if destination_ref is None else []),
        ]
        source = LocalSource(inputs, exclude=exclude, identity=identity)
        source_key = local_source_key(inputs) if identity is None else None  # uploads: none
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
        checked = connectors.resolve(source_ref, "source")
        source = connectors.build(checked)
        source_key = connector_source_key(checked.entry.identity(checked.config), checked.config)
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
        destination = LocalDestination(output)
        destination_key = f"local:{output.resolve()}"
        output_dir = str(output.resolve())
    else:
        checked = connectors.resolve(destination_ref, "destination")
        destination = connectors.build(checked, varchar_policy=parse_policies(on_oversize or []))
        destination_key = checked.entry.identity(checked.config)
    if executor not in ("local", "ray"):
        raise WorkflowInvalid(
            [Problem("--executor", "unknown executor", found=executor, allowed=["local", "ray"])],
            what="run request",
        )
    options = RunOptions(
        doc_timeout=doc_timeout,
        executor=executor,
        ray_address=ray_address,
        reuse=_reuse(ws, plan, trace, cache, from_job, start_at),
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
    ws: Workspace, plan: Any, trace: bool, cache: bool, from_job: str | None, start_at: str | None
) -> Any:
    from ingestflow.runner.reuse import NodeCache, Reuse
    from ingestflow.runner.reuse import from_job as job_outputs

    if start_at is not None and from_job is None:
        raise WorkflowInvalid(
            [Problem("--start-at", "--start-at needs --from-job (the job to start from)")],
            what="run request",
        )
    node_cache = NodeCache(ws.root / "cache" / "nodes") if trace and cache else None
    job = None
    if from_job is not None:
        job = job_outputs(plan, ws.job_record(from_job), ws, start_at)
    if node_cache is None and job is None:
        return None
    return Reuse(plan, node_cache, job)


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
