"""What the commands print: problems, records, errors and job summaries (the progress display is
`cli.progress`).

Human output goes to stdout, progress and errors to stderr; `--json` prints records as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from ingestflow.errors import IngestflowError, InputFileError, WorkflowInvalid


def echo_problems(label: str, problems: list[Any], err: bool = False) -> None:
    """Problems in the form `validate` prints them: path, message, found/allowed, hint."""
    for problem in problems:
        typer.echo(f"  {label} {problem.path}", err=err)
        typer.echo(f"      {problem.message}", err=err)
        facts = []
        if problem.found is not None:
            facts.append(f"found: {compact(problem.found)}")
        if problem.allowed is not None:
            facts.append(f"allowed: {compact(problem.allowed)}")
        if facts:
            typer.echo("      " + "   ".join(facts), err=err)
        if problem.hint:
            typer.echo(f"      hint: {problem.hint}", err=err)


def compact(value: Any) -> str:
    """A value as short JSON."""
    from ingestflow.service.validation import short

    return short(value, limit=200)


#: A run request's fields as the CLI's flags (`service.requests`: problems name the fields).
FLAGS = {
    "inputs": "--input",
    "output": "--output",
    "source": "--source",
    "destination": "--destination",
    "on_oversize": "--on-oversize",
    "trace": "--trace",
    "cache": "--no-cache",
    "from_job": "--from-job",
    "start_at": "--start-at",
    "keep_deleted": "--keep-deleted",
    "execution.workers": "--workers",
    "execution.executor": "--executor",
    "execution.ray_address": "--ray-address",
    "execution.ray_shared_fs": "--ray-shared-fs",
    "execution.doc_timeout": "--doc-timeout",
}


def print_error(exc: IngestflowError, where: str = "") -> None:
    """An error on stderr: an invalid input's headline and each of its problems (a run
    request's fields said as flags); any other error whole (its lines say what failed and how
    to fix it)."""
    from ingestflow.service.requests import RequestInvalid, relabel

    if isinstance(exc, RequestInvalid):
        exc = relabel(exc, FLAGS)
    if isinstance(exc, WorkflowInvalid):
        typer.echo(f"✗ {where}{str(exc).splitlines()[0]}", err=True)
        echo_problems("✗", exc.problems, err=True)
    elif isinstance(exc, InputFileError):  # its message names the file already
        typer.echo(f"✗ {exc}", err=True)
    else:
        typer.echo(f"✗ {where}{exc}", err=True)


@contextmanager
def failing_cleanly(where: str = "") -> Iterator[None]:
    """Turn the service's errors into a message and the error's exit code (2 invalid input or
    not found, 3 a connector or environment problem)."""
    try:
        yield
    except IngestflowError as exc:
        print_error(exc, where)
        raise typer.Exit(exc.exit_code if exc.exit_code != 1 else 2) from None


def echo_json(value: Any) -> None:
    """A record or list as indented JSON on stdout (a service record as the API sends it)."""
    from ingestflow.service.records import wire

    typer.echo(json.dumps(wire(value), indent=2, ensure_ascii=False, default=str))


def seconds(record: dict[str, Any]) -> str:
    """A job's runtime in seconds (records carry ISO 8601 durations, `PT12.345S`)."""
    runtime = str(record.get("runtime") or "")
    if runtime.startswith("PT") and runtime.endswith("S"):
        return f"{float(runtime[2:-1]):.1f} s"
    return runtime or "-"


def summary(record: dict[str, Any], settings: bool = False) -> None:
    """Per-node counts, elements, time, and the outcome (stdout). With `settings`, each node's
    settings (secrets masked) too."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from ingestflow.errors import printable

    console = Console(width=min(100, Console().width))
    table = Table(
        title=f"job {record['id'][:8]} · {record['status']} / {record['processing_status']} · "
        f"{seconds(record)}",
        title_justify="left",
    )
    table.add_column("node")
    table.add_column("type", overflow="fold")
    for col in ("ok", "failed", "in", "out", "seconds"):
        table.add_column(col, justify="right")
    reused = any(n.get("reused") for n in record["node_stats"])
    if reused:
        table.add_column("reused", justify="right")
    for n in record["node_stats"]:
        row = [
            n["node_name"],
            n["node_subtype"] if n["node_type"] in n["node_subtype"] else n["node_type"],
            str(n["success"]),
            str(n["failure"]),
            str(n.get("elements_in", "")),
            str(n.get("elements_out", "")),
            f"{n['seconds']:.2f}" if "seconds" in n else "",
        ]
        table.add_row(*row, *([str(n.get("reused", 0))] if reused else []))
    console.print(table)
    for n in record["node_stats"]:
        if n.get("pages_by_strategy"):  # Auto: which strategy read how many pages
            counts = ", ".join(f"{k} {v}" for k, v in sorted(n["pages_by_strategy"].items()))
            console.print(f"{n['node_name']}: pages by strategy: {counts}", highlight=False)
    if settings:
        nodes = (record.get("workflow") or {}).get("workflow_nodes") or []
        for node in nodes:
            shown = json.dumps(node.get("settings") or {}, ensure_ascii=False, sort_keys=True)
            console.print(f"{node['name']} ({node['subtype']}): {shown}", markup=False)
    files = record["files"]
    ok = sum(f["status"] == "SUCCESS" for f in files)
    skipped = sum(f["status"] == "SKIPPED" for f in files)
    elements = sum(f["elements"] for f in files)
    progress = record.get("progress") or {}
    found = max(len(files), int(progress.get("found") or 0))  # a stopped job's unstarted ones too
    left = f", {found - len(files)} left unprocessed" if found > len(files) else ""
    console.print(
        f"{ok} of {found} documents written ({elements} elements), "
        f"{len(record['failed_files'])} failed, {skipped} skipped (unchanged){left}"
        + (f", {record['deleted']} removed (left the source)" if record.get("deleted") else "")
    )
    for f in record["failed_files"]:  # names and errors escaped: no control code, no markup
        failed = f"{printable(f['document'])}: {printable(f['error'], 1000)}"
        console.print(f"  [red]✗[/red] {escape(failed)}", highlight=False)
    if record.get("message"):
        # soft-wrapped: a path in the note is never cut by a line break
        note = f"note: {printable(record['message'], 2000)}"
        console.print(note, markup=False, highlight=False, soft_wrap=True)
    if record.get("output_dir"):
        console.print(
            f"output: {printable(record['output_dir'], 1000)}", markup=False, highlight=False
        )
    console.print(f"details: ingestflow jobs show {record['id']}", highlight=False)
