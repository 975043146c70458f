"""The `ingestflow` command line: a thin front end over the spec, runner and service layers."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    name="ingestflow",
    help="Run document-ingestion workflows locally and offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"ingestflow {version('ingestflow')}")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            typer.echo("ingestflow (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run document-ingestion workflows locally and offline."""


def _echo_problems(label: str, problems: list[Any], err: bool = False) -> None:
    for problem in problems:
        typer.echo(f"  {label} {problem.path}", err=err)
        typer.echo(f"      {problem.message}", err=err)
        facts = []
        if problem.found is not None:
            facts.append(f"found: {_compact(problem.found)}")
        if problem.allowed is not None:
            facts.append(f"allowed: {_compact(problem.allowed)}")
        if facts:
            typer.echo("      " + "   ".join(facts), err=err)
        if problem.hint:
            typer.echo(f"      hint: {problem.hint}", err=err)


def _compact(value: Any) -> str:
    from ingestflow.spec.problems import short

    return short(value, limit=200)


@app.command()
def validate(
    file: Annotated[Path, typer.Argument(help="Workflow (or connector) JSON file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="Judge model retirement on this date (YYYY-MM-DD)."),
    ] = None,
) -> None:
    """Check a workflow file against every rule of the spec. Exit 0 valid, 2 invalid.

    The file is judged on its own: connector and template ids are resolved when a workflow is
    stored or run. A connector body (name, type, config) is checked as a connector.
    """
    from ingestflow.spec.parsing import load_json_file
    from ingestflow.spec.validate import looks_like_connector, validate_connector, validate_workflow

    try:
        today = date.fromisoformat(as_of) if as_of else None
    except ValueError:
        typer.echo(f"✗ --as-of: not a date (YYYY-MM-DD): {as_of!r}", err=True)
        raise typer.Exit(2) from None
    data, problems = load_json_file(file)
    warnings: list[Any] = []
    kind = "workflow"
    summary = ""
    if not problems:
        if looks_like_connector(data):
            kind = "connector"
            checked_c = validate_connector(data)
            problems = checked_c.problems
            if checked_c.connector is not None:
                summary = f"{checked_c.connector.type} connector"
        else:
            checked = validate_workflow(data, today=today)
            problems, warnings = checked.problems, checked.warnings
            if checked.workflow is not None:
                labels = {
                    "partition": "Partitioner",
                    "prompter": "Enrichment",
                    "chunk": "Chunker",
                    "embed": "Embedder",
                }
                chain = " → ".join(labels.get(n.type, n.type) for n in checked.nodes)
                summary = f"{checked.workflow.workflow_type}" + (f": {chain}" if chain else "")
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "valid": not problems,
                    "kind": kind,
                    "problems": [p.as_dict() for p in problems],
                    "warnings": [p.as_dict() for p in warnings],
                },
                indent=2,
                ensure_ascii=False,
                default=str,
            )
        )
    elif problems:
        typer.echo(f"✗ {file}: {kind} is invalid, {len(problems)} problem(s)", err=True)
        _echo_problems("✗", problems, err=True)
        _echo_problems("!", warnings, err=True)
    else:
        typer.echo(f"✓ {file}: valid {kind} ({summary})")
        _echo_problems("!", warnings)
    raise typer.Exit(2 if problems else 0)


def main() -> None:
    """Console-script entry point."""
    try:
        code = app(standalone_mode=False)
    except KeyboardInterrupt:
        sys.exit(130)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        sys.exit(130)
    except typer.TyperException as usage:  # bad arguments: the parser's own message, exit 2
        show = getattr(usage, "show", None)
        if show is not None:
            show()
        sys.exit(getattr(usage, "exit_code", 2))
    except Exception as exc:  # an unexpected error: one line, never a traceback
        from ingestflow.runner.worker import reason

        typer.echo(f"✗ ingestflow stopped on an unexpected error: {reason(exc)}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


DEFAULT_WORKSPACE = Path(".ingestflow")
WorkspaceOpt = Annotated[
    Path,
    typer.Option(
        "--workspace", envvar="INGESTFLOW_WORKSPACE", help="Workspace folder (jobs, node outputs)."
    ),
]


@app.command()
def run(
    workflow: Annotated[Path, typer.Argument(help="Workflow JSON file.")],
    inputs: Annotated[
        list[Path] | None,
        typer.Option("--input", "-i", help="A file or folder (recursive); repeat for more."),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder.")] = Path("output"),
    workers: Annotated[
        int, typer.Option("--workers", "-w", min=0, help="Worker processes (0: one per core).")
    ] = 0,
    trace: Annotated[
        bool, typer.Option("--trace", help="Keep each node's output per file in the job.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the job record as JSON.")] = False,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    source: Annotated[
        str | None,
        typer.Option("--source", help="Source connector: a JSON file, or a stored id or name."),
    ] = None,
    destination: Annotated[
        str | None,
        typer.Option(
            "--destination", help="Destination connector: a JSON file, or a stored id or name."
        ),
    ] = None,
    on_oversize: Annotated[
        list[str] | None,
        typer.Option(
            "--on-oversize",
            metavar="FIELD=fail|drop|truncate",
            help="vectordb: what to do with a value over its VARCHAR limit (default: fail the "
            "document); said in the job, never silent. Repeatable.",
        ),
    ] = None,
) -> None:
    """Run a workflow: local files (--input) or a source connector, to an output folder or a
    destination connector. Exit 0 all documents succeeded, 1 some failed, 2 invalid
    input, 3 an environment or connector problem."""
    from ingestflow.cli_run import run_command

    raise typer.Exit(
        run_command(
            workflow,
            inputs or [],
            output,
            workers,
            trace,
            as_json,
            workspace,
            source,
            destination,
            on_oversize or [],
        )
    )


from ingestflow.cli_connectors import app as connectors_app  # noqa: E402

app.add_typer(connectors_app, name="connectors")

from ingestflow.cli_vectordb import app as vectordb_app  # noqa: E402

app.add_typer(vectordb_app, name="vectordb")

from ingestflow.cli_providers import app as providers_app  # noqa: E402

app.add_typer(providers_app, name="providers")

jobs_app = typer.Typer(
    help="Inspect jobs: records, failed files, per-node outputs.", no_args_is_help=True
)
app.add_typer(jobs_app, name="jobs")


@jobs_app.command("list")
def jobs_list(
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 20,
) -> None:
    """List jobs, newest first."""
    from ingestflow.errors import NotFound
    from ingestflow.runner.job import open_workspace

    try:
        with open_workspace(workspace) as ws:
            records = ws.list_jobs(limit)
    except NotFound:
        records = []
    if as_json:
        typer.echo(json.dumps(records, indent=2, default=str))
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
    job_id: Annotated[str, typer.Argument(help="Job id (a unique prefix is enough).")],
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show a job: status, per-node counts, each file's outcome."""
    from ingestflow.errors import NotFound
    from ingestflow.runner.job import open_workspace

    try:
        with open_workspace(workspace) as ws:
            record = ws.job_record(job_id)
    except NotFound as exc:
        typer.echo(f"✗ {exc}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(record, indent=2, default=str))
        return
    from ingestflow.cli_run import summary

    summary(record)
    for f in record["files"]:
        mark = {"SUCCESS": "✓", "FAILED": "✗", "SKIPPED": "="}[f["status"]]
        detail = f["error"] or f"{f['elements']} elements"
        typer.echo(f"  {mark} {f['file_id'][:8]}  {f['filename']}  {detail}")
        for warning in f["warnings"]:
            typer.echo(f"      ! {warning}")


@jobs_app.command("download")
def jobs_download(
    job_id: Annotated[str, typer.Argument(help="Job id (a unique prefix is enough).")],
    file: Annotated[str, typer.Option("--file", help="File id (or prefix) or file name.")],
    node: Annotated[
        str | None, typer.Option("--node", help="Node id or name (default: the last node).")
    ] = None,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
) -> None:
    """Print the elements of one file after one node (nodes are kept with --trace)."""
    from ingestflow.errors import NotFound
    from ingestflow.service.jobs import download

    try:
        typer.echo(
            json.dumps(download(workspace, job_id, file, node), indent=2, ensure_ascii=False)
        )
    except NotFound as exc:
        typer.echo(f"✗ {exc}", err=True)
        raise typer.Exit(2) from None
