"""`ingestflow connectors ...`: store, list, show, delete and check connectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Source and destination connectors: store, list, check.", no_args_is_help=True
)
WorkspaceOpt = Annotated[
    Path, typer.Option("--workspace", envvar="INGESTFLOW_WORKSPACE", help="Workspace folder.")
]
DEFAULT = Path(".ingestflow")


def _fail(exc: Exception, code: int = 2) -> typer.Exit:
    from ingestflow.errors import WorkflowInvalid

    if isinstance(exc, WorkflowInvalid):
        from ingestflow.cli import _echo_problems

        typer.echo(f"✗ {exc.args[0].splitlines()[0]}", err=True)
        _echo_problems("✗", exc.problems, err=True)
    else:
        typer.echo(f"✗ {exc}", err=True)
    return typer.Exit(code)


@app.command("create")
def create(
    file: Annotated[Path, typer.Argument(help="Connector JSON: {name, type, config}.")],
    workspace: WorkspaceOpt = DEFAULT,
) -> None:
    """Store a connector in the workspace; prints its record (secrets masked)."""
    from ingestflow.errors import IngestflowError
    from ingestflow.service.connectors import ConnectorStore
    from ingestflow.spec.parsing import load_json_file

    data, problems = load_json_file(file)
    store = ConnectorStore(workspace)
    try:
        if problems:
            from ingestflow.errors import WorkflowInvalid

            raise WorkflowInvalid(problems, what="connector")
        typer.echo(json.dumps(store.create(data), indent=2))
    except IngestflowError as exc:
        raise _fail(exc) from None
    finally:
        store.close()


@app.command("list")
def list_(
    workspace: WorkspaceOpt = DEFAULT,
    role: Annotated[str | None, typer.Option("--role", help="source or destination")] = None,
) -> None:
    """List stored connectors (secrets masked)."""
    from ingestflow.service.connectors import ConnectorStore

    store = ConnectorStore(workspace)
    try:
        typer.echo(json.dumps(store.list(role), indent=2))
    finally:
        store.close()


@app.command("show")
def show(
    ref: Annotated[str, typer.Argument(help="Id, id prefix or name.")],
    workspace: WorkspaceOpt = DEFAULT,
) -> None:
    """Show one stored connector (secrets masked)."""
    from ingestflow.errors import NotFound
    from ingestflow.service.connectors import ConnectorStore

    store = ConnectorStore(workspace)
    try:
        typer.echo(json.dumps(store.record(ref), indent=2))
    except NotFound as exc:
        raise _fail(exc) from None
    finally:
        store.close()


@app.command("delete")
def delete(
    ref: Annotated[str, typer.Argument(help="Id, id prefix or name.")],
    workspace: WorkspaceOpt = DEFAULT,
) -> None:
    """Delete a stored connector."""
    from ingestflow.errors import NotFound
    from ingestflow.service.connectors import ConnectorStore

    store = ConnectorStore(workspace)
    try:
        store.delete(ref)
        typer.echo(f"deleted {ref}")
    except NotFound as exc:
        raise _fail(exc) from None
    finally:
        store.close()


@app.command("check")
def check(
    ref: Annotated[str, typer.Argument(help="Connector JSON file, or a stored id or name.")],
    workspace: WorkspaceOpt = DEFAULT,
) -> None:
    """Check that the connector's endpoint answers and its credentials work, without crawling or
    writing. Exit 0 SUCCESS, 3 FAILURE, 2 invalid connector."""
    from ingestflow.connectors.check import check_connector
    from ingestflow.errors import IngestflowError
    from ingestflow.service.connectors import resolve_connector

    try:
        checked = resolve_connector(ref, workspace, role="")
    except IngestflowError as exc:
        raise _fail(exc) from None
    assert checked.connector is not None
    result = check_connector(checked.connector.type, checked.config)
    typer.echo(json.dumps(result.as_dict(), indent=2))
    raise typer.Exit(0 if result.ok else 3)
