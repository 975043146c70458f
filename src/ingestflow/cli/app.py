"""The root `ingestflow` command and the options every command group shares."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def _plain_help() -> None:
    """Help that names values plainly. Typer's rich help shows type placeholders (`<bool>` on
    every flag, `<list[Path]>`, `{workflow}`); here a flag shows none, a value its metavar or its
    type in capitals (PATH, INTEGER), and an argument its name in capitals."""
    from typer import core

    def label(param: Any, ctx: Any) -> str | None:
        if getattr(param, "is_flag", False):
            return None
        if param.metavar is not None:
            return str(param.metavar)
        text = core._TyperParameter.display_type(param, ctx).strip("<>")
        text = text.removeprefix("list[").removesuffix("]").replace(" range", "")
        return {"int": "INTEGER", "str": "TEXT", "float": "NUMBER"}.get(text, text.upper())

    def usage(param: Any) -> str:
        name = str(param.display_name_raw).upper()
        name = name if param.required else f"[{name}]"
        return name + ("..." if param.nargs != 1 else "")

    from ingestflow.patches import typer as typer_patches

    typer_patches.help_labels(label, usage)  # left out where typer's classes differ


_plain_help()

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
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Show the libraries' own log lines and warnings too."),
    ] = False,
) -> None:
    """Run document-ingestion workflows locally and offline."""
    import os

    from ingestflow.offline import VERBOSE_ENV, quiet_libraries

    if verbose:
        os.environ[VERBOSE_ENV] = "1"
    quiet_libraries()
