"""`ingestflow run`: a workflow file run in the foreground, with progress and a summary."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, WorkspaceOpt, app
from ingestflow.cli.spread import SpreadInputs
from ingestflow.service.requests import (
    OVERSIZE_POLICIES,
    ExecutionOptions,
    OversizePolicy,
    RunRequest,
    request_problem,
)

Inputs = Annotated[
    list[Path] | None,
    typer.Option(
        "--input",
        "-i",
        metavar="PATH",
        help="Files or folders (recursive): `-i a b` or `-i a -i b`.",
    ),
]
Output = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FOLDER",
        help="Output folder (local files; default ./output). Not with a destination connector.",
    ),
]
Workers = Annotated[
    int,
    typer.Option("--workers", "-w", min=0, help="Worker processes (0: one per core)."),
]
Trace = Annotated[bool, typer.Option("--trace", help="Keep each node's output per file.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print the job record as JSON.")]
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="No progress while it runs (the summary and errors are still printed). Progress "
        "goes to stderr: a status line in a terminal, else a timestamped line every "
        "INGESTFLOW_PROGRESS_INTERVAL seconds (default 5).",
    ),
]
FromJob = Annotated[
    str | None,
    typer.Option(
        "--from-job",
        metavar="JOB",
        help="Start from that job's stored node outputs (it ran with --trace): each document "
        "starts at the first node whose settings changed.",
    ),
]
StartAt = Annotated[
    str | None,
    typer.Option("--start-at", metavar="NODE", help="With --from-job: start at this node."),
]
NoCache = Annotated[
    bool,
    typer.Option(
        "--no-cache", help="With --trace: neither reuse nor keep outputs in the node cache."
    ),
]
DocTimeout = Annotated[
    float,
    typer.Option(
        "--doc-timeout",
        metavar="SECONDS",
        min=0,
        help="A document that spends longer in one node fails alone (0: no limit).",
    ),
]
Executor = Annotated[
    str,
    typer.Option(
        "--executor",
        metavar="local|ray",
        help="Where documents are processed: local worker processes, or a Ray cluster "
        "(`pip install -e .[ray]`).",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="ADDR",
        help="With --executor ray: `auto` or ray://host:port for an existing cluster (default: "
        "a local cluster started for the run).",
    ),
]
RayShared = Annotated[
    bool,
    typer.Option(
        "--ray-shared-fs",
        help="With --executor ray and --ray-address: every machine of the cluster sees the "
        "input and output folders at the same paths (a shared file system), so the actors read "
        "the files and write the outputs themselves (always so on a local cluster).",
    ),
]
OnOversize = Annotated[
    list[str] | None,
    typer.Option(
        "--on-oversize",
        metavar="FIELD=fail|drop|truncate",
        help="vectordb: what to do with a value over its VARCHAR limit (default: fail the "
        "document); said in the job, never silent. Repeatable.",
    ),
]

KeepDeleted = Annotated[
    bool,
    typer.Option(
        "--keep-deleted",
        help="With reprocess_all false: keep in the destination the documents that left the "
        "source (by default their output is removed).",
    ),
]


@app.command(cls=SpreadInputs)
def run(
    workflow: Annotated[Path, typer.Argument(help="Workflow JSON file.")],
    inputs: Inputs = None,
    output: Output = None,
    workers: Workers = 0,
    trace: Trace = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    source: Annotated[
        str | None,
        typer.Option(
            "--source", metavar="CONNECTOR", help="Source: a JSON file, or a stored id or name."
        ),
    ] = None,
    destination: Annotated[
        str | None,
        typer.Option(
            "--destination",
            metavar="CONNECTOR",
            help="Destination: a JSON file, or a stored id or name.",
        ),
    ] = None,
    on_oversize: OnOversize = None,
    from_job: FromJob = None,
    start_at: StartAt = None,
    no_cache: NoCache = False,
    executor: Executor = "local",
    ray_address: RayAddress = None,
    ray_shared_fs: RayShared = False,
    doc_timeout: DocTimeout = 1800,
    keep_deleted: KeepDeleted = False,
) -> None:
    """Run a workflow: local files (--input) or a source connector, to an output folder or a
    destination connector. Exit 0 all documents succeeded, 1 some failed, 2 invalid
    input, 3 an environment or connector problem."""
    from ingestflow.service import early

    def body() -> Any:
        from ingestflow.service.validation import load_body

        return load_body(workflow)

    try:
        # the workers' libraries start loading now, while the workflow is checked
        early.start(
            workflow,
            inputs or [],
            workers=workers,
            workspace=workspace,
            output=output or Path("output"),
            executor=executor,
            source=source,
        )
        request = RunRequest(
            None,  # the body, read in run_in_foreground (its errors are the run's)
            inputs=tuple(inputs or ()),
            output=output,
            output_default=Path("output"),
            source=source,
            destination=destination,
            trace=trace,
            cache=not no_cache,
            from_job=from_job,
            start_at=start_at,
            workflow_id=f"file:{workflow.resolve()}",
            keep_deleted=keep_deleted,
            execution=ExecutionOptions(
                workers,
                executor,
                ray_address,
                doc_timeout or None,
                preload=True,
                ray_shared_fs=ray_shared_fs,
            ),
        )
        code = run_in_foreground(
            workspace,
            request,
            body,
            on_oversize or [],
            where=f"{workflow}: ",
            as_json=as_json,
            quiet=quiet,
        )
    finally:
        early.stop()  # the run stops it; not if it ended before it began
    raise typer.Exit(code)


def run_in_foreground(
    workspace: Path,
    request: RunRequest,
    body: Any,
    on_oversize: list[str],
    where: str = "",
    as_json: bool = False,
    quiet: bool = False,
) -> int:
    """Run a request in this process through the service, with a progress display; the exit
    code. `body` is the workflow body, or a function that returns it, and `on_oversize` the
    `FIELD=POLICY` options, both read inside the error handling."""
    import sqlite3

    from ingestflow import api
    from ingestflow.cli.output import echo_json, print_error, summary
    from ingestflow.cli.progress import Display
    from ingestflow.errors import IngestflowError, WorkflowInvalid
    from ingestflow.service import Service

    try:
        workflow = api.load_workflow(body() if callable(body) else body)
        policies = oversize_policies(on_oversize)
        request = replace(
            request, body=workflow.body, checked=workflow.checked, on_oversize=policies
        )
        with Display(quiet or as_json) as display, Service(workspace) as service:
            record = service.runs.run_here(request, display, workflow.warnings)
    except WorkflowInvalid as exc:
        headline = str(exc).splitlines()[0]
        print_error(exc, where if headline.startswith(("workflow", "template")) else "")
        return 2
    except IngestflowError as exc:
        print_error(exc)
        return exc.exit_code if exc.exit_code != 1 else 2
    except (OSError, sqlite3.Error) as exc:
        typer.echo(f"✗ {exc.__class__.__name__}: {exc} (workspace {workspace})", err=True)
        return 3
    for warning in workflow.warnings:
        typer.echo(f"! {warning}", err=True)
    if as_json:
        echo_json(record)
    else:
        summary(record)
    if record["status"] == "STOPPED":
        return 130
    return 1 if record["failed_files"] else 0


def oversize_policies(items: list[str]) -> dict[str, OversizePolicy]:
    """`--on-oversize FIELD=fail|drop|truncate` options as a policy per field; RequestInvalid
    (of the `on_oversize` field) when one is malformed."""
    policies: dict[str, OversizePolicy] = {}
    for item in items:
        name, _, policy = item.partition("=")
        if not name or policy not in OVERSIZE_POLICIES:
            raise request_problem(
                "on_oversize", f"expected FIELD=fail|drop|truncate, found {item!r}"
            )
        policies[name] = policy
    return policies
