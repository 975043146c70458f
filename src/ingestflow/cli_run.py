"""`ingestflow run`: progress display, summary table and exit codes around the runner."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import typer

from ingestflow.errors import IngestflowError, WorkflowInvalid


def load_workflow(path: Path) -> Any:
    """Read a workflow file, or exit 2 with the same problems `validate` prints."""
    from ingestflow.spec.parsing import load_json_file

    data, problems = load_json_file(path)
    if problems:
        raise WorkflowInvalid(problems)
    return data


def print_problems(exc: WorkflowInvalid, path: Path) -> None:
    """Problems in the same form `validate` prints them."""
    from ingestflow.cli import _echo_problems

    headline = exc.args[0].splitlines()[0]
    where = f"{path}: " if headline.startswith(("workflow", "template")) else ""
    typer.echo(f"✗ {where}{headline}", err=True)
    _echo_problems("✗", exc.problems, err=True)


class Display:
    """A Rich live progress line while the job runs (stderr), silent with --json."""

    def __init__(self, quiet: bool, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = Console(stderr=True)
        self.quiet = quiet
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
            disable=quiet,
        )
        self.task = self.progress.add_task("documents", total=total, detail="")

    def __enter__(self) -> Display:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        if event == "stopping":
            self.progress.console.print(
                "stopping after the documents in progress (Ctrl-C again to stop now)"
            )
        elif event == "start":
            self.progress.update(self.task, description=f"job {data['job_id'][:8]}")
        elif event == "pages":  # a long document, its page ranges spread over the workers
            detail = f"{data['filename']}: {data['done']} of {data['pages']} pages"
            self.progress.update(self.task, detail=detail)
        elif event == "file":
            c = data["counts"]
            detail = f"{c['elements']} elements, {c['FAILED']} failed, {c['SKIPPED']} skipped"
            self.progress.update(self.task, advance=1, detail=detail)
            result = data["result"]
            if result.status == "FAILED" and not self.quiet:
                self.progress.console.print(f"[red]✗[/red] {result.filename}: {result.error}")


def summary(record: dict[str, Any]) -> None:
    """A table of per-node counts and the outcome, on stderr."""
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    table = Table(
        title=f"job {record['id']}  ·  {record['status']} / "
        f"{record['processing_status']}  ·  {record.get('runtime', '')}"
    )
    for col in ("node", "type", "subtype", "success", "failure"):
        table.add_column(col, justify="right" if col in ("success", "failure") else "left")
    for n in record["node_stats"]:
        table.add_row(
            n["node_name"], n["node_type"], n["node_subtype"], str(n["success"]), str(n["failure"])
        )
    console.print(table)
    files = record["files"]
    ok = sum(f["status"] == "SUCCESS" for f in files)
    skipped = sum(f["status"] == "SKIPPED" for f in files)
    elements = sum(f["elements"] for f in files)
    console.print(
        f"{ok} of {len(files)} documents written ({elements} elements), "
        f"{len(record['failed_files'])} failed, {skipped} skipped (unchanged)"
    )
    for f in record["failed_files"]:
        console.print(f"  [red]✗[/red] {f['document']}: {f['error']}")
    if record.get("output_dir"):
        console.print(f"output: {record['output_dir']}")
    console.print(f"details: ingestflow jobs show {record['id']}")


def run_command(
    workflow: Path,
    inputs: list[Path],
    output: Path,
    workers: int,
    trace: bool,
    as_json: bool,
    workspace: Path,
    source_ref: str | None = None,
    destination_ref: str | None = None,
    on_oversize: list[str] | None = None,
) -> int:
    """The body of `ingestflow run`; returns the exit code."""
    from ingestflow.connectors.local import LocalDestination, LocalSource
    from ingestflow.runner.executor import RunOptions, run_workflow
    from ingestflow.runner.plan import build_plan
    from ingestflow.service.connectors import open_destination, open_source, resolve_connector

    try:
        data = load_workflow(workflow)
        plan = build_plan(data)
        source_ref = source_ref or plan.workflow.source_id
        destination_ref = destination_ref or plan.workflow.destination_id
        if source_ref is None:
            if not inputs:
                raise WorkflowInvalid(
                    [
                        _problem(
                            "--input",
                            "a workflow with a local source "
                            "needs at least one --input file or folder",
                        )
                    ]
                )
            source = LocalSource(inputs)
            total: int | None = source.count() if _all_exist(inputs) else None
        else:
            if inputs:
                raise WorkflowInvalid(
                    [
                        _problem(
                            "--input",
                            "--input is for a local source; this run reads from a source connector",
                        )
                    ]
                )
            source = open_source(resolve_connector(source_ref, workspace, "source"))
            total = None
        if destination_ref is None:
            if on_oversize:
                raise WorkflowInvalid(
                    [
                        _problem(
                            "--on-oversize",
                            "--on-oversize applies to a "
                            "vectordb destination; this run writes local files",
                        )
                    ]
                )
            destination = LocalDestination(output)
            destination_key = f"local:{output.resolve()}"
            output_dir: str | None = str(output.resolve())
        else:
            checked = resolve_connector(destination_ref, workspace, "destination")
            destination = open_destination(
                checked, {"varchar_policy": parse_policies(on_oversize or [])}
            )
            destination_key = f"vectordb:{checked.config.uri}:{checked.config.collection_name}"
            output_dir = None
        options = RunOptions(
            workers=workers,
            trace=trace,
            output_dir=output_dir,
            destination_key=destination_key,
            workflow_id=f"file:{workflow.resolve()}",
        )
        with Display(as_json, total) as display:
            record = run_workflow(plan, source, destination, workspace, options, display)
    except WorkflowInvalid as exc:
        print_problems(exc, workflow)
        return 2
    except IngestflowError as exc:
        typer.echo(f"✗ {exc}", err=True)
        return exc.exit_code if exc.exit_code != 1 else 2
    except (OSError, sqlite3.Error) as exc:
        typer.echo(f"✗ {exc.__class__.__name__}: {exc} (workspace {workspace})", err=True)
        return 3
    for warning in plan.warnings:
        typer.echo(f"! {warning}", err=True)
    if as_json:
        typer.echo(json.dumps(record, indent=2, ensure_ascii=False, default=str))
    else:
        summary(record)
    if record["status"] == "STOPPED":
        return 130
    return 1 if record["failed_files"] else 0


def parse_policies(items: list[str]) -> dict[str, str]:
    """`FIELD=fail|drop|truncate` options as a policy map; WorkflowInvalid when malformed."""
    policies: dict[str, str] = {}
    for item in items:
        field, _, policy = item.partition("=")
        if not field or policy not in ("fail", "drop", "truncate"):
            raise WorkflowInvalid(
                [_problem("--on-oversize", f"expected FIELD=fail|drop|truncate, found {item!r}")]
            )
        policies[field] = policy
    return policies


def _problem(path: str, message: str) -> Any:
    from ingestflow.spec.problems import Problem

    return Problem(path, message)


def _all_exist(paths: list[Path]) -> bool:
    return all(p.exists() for p in paths)
