"""`ingestflow jobs`: list, show, download a node's output, cancel."""

from __future__ import annotations

from typing import Annotated

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, JsonOpt, WorkspaceOpt, group
from ingestflow.cli.output import echo_json, failing_cleanly

jobs_app = group("jobs", "Inspect jobs: records, failed files, per-node outputs.")
JobArg = Annotated[str, typer.Argument(help="Job id (a unique prefix is enough).")]


def _service(workspace: object, create: bool = False):
    from ingestflow.service import Service

    return Service(workspace, create=create)  # type: ignore[arg-type]


@jobs_app.command("list")
def jobs_list(
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 20,
    workflow: Annotated[
        str | None, typer.Option("--workflow", help="Only this workflow's jobs (its id).")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only jobs in this status.")
    ] = None,
) -> None:
    """List jobs, newest first."""
    from ingestflow.errors import NotFound

    with failing_cleanly():
        try:
            with _service(workspace) as service:
                service.sweep()
                records = service.jobs.list(workflow, status, limit)
        except NotFound:  # no workspace yet: no jobs
            records = []
    if as_json:
        echo_json(records)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "workflow", "status", "processing", "files", "failed", "runtime", "created")
    for r in records:
        table.add_row(
            r["id"],
            r["workflow_name"],
            r["status"],
            r["processing_status"],
            str(len(r["input_file_ids"])),
            str(len(r["failed_files"])),
            r.get("runtime", ""),
            r["created_at"][:19],
        )
    Console().print(table)


@jobs_app.command("show")
def jobs_show(
    job_id: JobArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE, as_json: JsonOpt = False
) -> None:
    """Show a job: status, per-node counts, each file's outcome."""
    from ingestflow.cli.output import summary

    with failing_cleanly(), _service(workspace) as service:
        service.sweep()
        record = service.jobs.get(job_id)
    if as_json:
        echo_json(record)
        return
    summary(record)
    if record.get("message"):
        typer.echo(f"  message: {record['message']}")
    for f in record["files"]:
        mark = {"SUCCESS": "✓", "FAILED": "✗", "SKIPPED": "="}[f["status"]]
        detail = f["error"] or f"{f['elements']} elements"
        typer.echo(f"  {mark} {f['file_id'][:8]}  {f['filename']}  {detail}")
        for warning in f["warnings"]:
            typer.echo(f"      ! {warning}")


@jobs_app.command("download")
def jobs_download(
    job_id: JobArg,
    file: Annotated[str, typer.Option("--file", help="File id (or prefix) or file name.")],
    node: Annotated[
        str | None, typer.Option("--node", help="Node id or name (default: the last node).")
    ] = None,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
) -> None:
    """Print the elements of one file after one node (nodes are kept with --trace)."""
    with failing_cleanly(), _service(workspace) as service:
        elements = service.jobs.download(job_id, file, node)
    echo_json(elements)


@jobs_app.command("cancel")
def jobs_cancel(job_id: JobArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
    """Stop a job: one not started yet at once, a running one after the documents in progress."""
    with failing_cleanly(), _service(workspace) as service:
        answer = service.jobs.cancel(job_id)
    typer.echo(f"{answer['id']}: {answer['message']}")
