"""`ingestflow workflows`: store workflows in the workspace, list, get, update, delete, run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, JsonOpt, WorkspaceOpt, group
from ingestflow.cli.output import echo_json, failing_cleanly
from ingestflow.cli.run import AsJson, Inputs, OnOversize, Output, Quiet, Trace, Workers
from ingestflow.cli.spread import SpreadInputs

workflows_app = group("workflows", "Stored workflows: create, list, update, delete, run.")
RefArg = Annotated[str, typer.Argument(help="Workflow id, id prefix or name.")]
FileArg = Annotated[Path, typer.Argument(help="Workflow JSON file.")]


def _load(file: Path) -> Any:
    from ingestflow.service.validation import load_body

    return load_body(file)


def _service(workspace: Path) -> Any:
    from ingestflow.service import Service

    return Service(workspace)


@workflows_app.command("create")
def create(file: FileArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
    """Store a workflow (every rule checked; its connectors must be stored); prints its record."""
    with failing_cleanly(f"{file}: "), _service(workspace) as service:
        echo_json(service.workflows.create(_load(file)))


@workflows_app.command("list")
def list_(
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: JsonOpt = False,
    name: Annotated[str | None, typer.Option("--name", help="Names containing this.")] = None,
) -> None:
    """List stored workflows."""
    with failing_cleanly(), _service(workspace) as service:
        records = service.workflows.list(name=name, sort_by="name", page_size=1000)
    if as_json:
        echo_json(records)
        return
    if not records:
        typer.echo("no stored workflows; `ingestflow workflows create FILE` stores one")
        return
    for r in records:
        chain = " → ".join(n.name for n in r.workflow_nodes) or r.template_id or ""
        schedule = r.schedule.crontab_entries[0].cron_expression if r.schedule else ""
        typer.echo(f"{r.id[:8]}  {r.name}  [{r.workflow_type}] {chain}  {schedule}")


@workflows_app.command("get")
def get(ref: RefArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
    """Show a stored workflow's record (secrets masked)."""
    with failing_cleanly(), _service(workspace) as service:
        echo_json(service.workflows.get(ref))


@workflows_app.command("update")
def update(ref: RefArg, file: FileArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
    """Change a stored workflow: the fields in FILE replace the stored ones."""
    with failing_cleanly(f"{file}: "), _service(workspace) as service:
        echo_json(service.workflows.update(ref, _load(file)))


@workflows_app.command("delete")
def delete(ref: RefArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
    """Delete a stored workflow (its jobs' records stay)."""
    with failing_cleanly(), _service(workspace) as service:
        answer = service.workflows.delete(ref)
    typer.echo(f"deleted {answer.id}")


@workflows_app.command("run", cls=SpreadInputs)
def run(
    ref: RefArg,
    inputs: Inputs = None,
    output: Output = None,
    workers: Workers = 0,
    trace: Trace = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    on_oversize: OnOversize = None,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
) -> None:
    """Run a stored workflow now, in the foreground (local files with --input)."""
    from ingestflow.cli.run import run_in_foreground
    from ingestflow.service.requests import ExecutionOptions, RunRequest, job_type_of

    with failing_cleanly(), _service(workspace) as service:
        row = service.workflows.row(ref)
    request = RunRequest(
        row["body"],
        inputs=tuple(inputs or ()),
        output=output,
        output_default=Path("output"),
        trace=trace,
        workflow_id=row["id"],
        job_type=job_type_of(row),
        execution=ExecutionOptions(workers=workers, preload=True),
    )
    raise typer.Exit(
        run_in_foreground(
            workspace, request, row["body"], on_oversize or [], as_json=as_json, quiet=quiet
        )
    )
