"""`ingestflow validate`: check a workflow or connector file against every rule."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Annotated

import typer

from ingestflow.cli.app import app
from ingestflow.cli.output import echo_problems


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

    The file is judged on its own: connector ids are resolved when a workflow is stored or run
    (template ids are the built-in templates'). A connector body (name, type, config) is checked
    as a connector. `ingestflow.validate(path)` reports the same problems.
    """
    from ingestflow.service.validation import check_file

    try:
        today = date.fromisoformat(as_of) if as_of else None
    except ValueError:
        typer.echo(f"✗ --as-of: not a date (YYYY-MM-DD): {as_of!r}", err=True)
        raise typer.Exit(2) from None
    result = check_file(file, today)
    if result.kind == "file" and not as_json:  # the file could not be read: one line says why
        typer.echo(f"✗ {result.problems[0].message}", err=True)
        raise typer.Exit(2)
    kind, problems, warnings, summary = (
        result.kind,
        result.problems,
        result.warnings,
        result.summary,
    )
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
        echo_problems("✗", problems, err=True)
        echo_problems("!", warnings, err=True)
    else:
        typer.echo(f"✓ {file}: valid {kind} ({summary})")
        echo_problems("!", warnings)
    raise typer.Exit(2 if problems else 0)
