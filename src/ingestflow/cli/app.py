"""The root `ingestflow` command and the options every command group shares."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="ingestflow",
    help="Run document-ingestion workflows locally and offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

DEFAULT_WORKSPACE = Path(".ingestflow")
WorkspaceOpt = Annotated[
    Path,
    typer.Option(
        "--workspace",
        envvar="INGESTFLOW_WORKSPACE",
        help="Workspace folder (jobs, stored connectors and workflows, keys).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def group(name: str, help_text: str) -> typer.Typer:
    """A command group added to the root command."""
    sub = typer.Typer(
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.add_typer(sub, name=name)
    return sub


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
