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
)


@app.callback()
def _root() -> None:
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

    today = date.fromisoformat(as_of) if as_of else None
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
        app()
    except KeyboardInterrupt:
        sys.exit(130)
