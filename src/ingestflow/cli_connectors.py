"""`ingestflow connectors ...`: store, list, show, delete and check connectors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from ingestflow.service.connectors import ConnectorStore

app = typer.Typer(
    help="Source and destination connectors: store, list, check.", no_args_is_help=True
)
WorkspaceOpt = Annotated[
    Path, typer.Option("--workspace", envvar="INGESTFLOW_WORKSPACE", help="Workspace folder.")
]
RefArg = Annotated[str, typer.Argument(help="Id, id prefix or name.")]
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


@contextmanager
def _store(workspace: Path) -> Iterator[ConnectorStore]:
    """The workspace's connector store; an ingestflow error becomes a clear exit 2."""
    from ingestflow.errors import IngestflowError
    from ingestflow.service.connectors import ConnectorStore

    store = ConnectorStore(workspace)
    try:
        yield store
    except IngestflowError as exc:
        raise _fail(exc) from None
    finally:
        store.close()


def _echo(value: object) -> None:
    typer.echo(json.dumps(value, indent=2))


@app.command("create")
def create(
    file: Annotated[Path, typer.Argument(help="Connector JSON: {name, type, config}.")],
    workspace: WorkspaceOpt = DEFAULT,
) -> None:
    """Store a connector in the workspace; prints its record (secrets masked)."""
    from ingestflow.errors import WorkflowInvalid
    from ingestflow.spec.parsing import load_json_file

    data, problems = load_json_file(file)
    with _store(workspace) as store:
        if problems:
            raise WorkflowInvalid(problems, what="connector")
        _echo(store.create(data))


@app.command("list")
def list_(
    workspace: WorkspaceOpt = DEFAULT,
    role: Annotated[str | None, typer.Option("--role", help="source or destination")] = None,
) -> None:
    """List stored connectors (secrets masked)."""
    with _store(workspace) as store:
        _echo(store.list(role))


@app.command("show")
def show(ref: RefArg, workspace: WorkspaceOpt = DEFAULT) -> None:
    """Show one stored connector (secrets masked)."""
    with _store(workspace) as store:
        _echo(store.record(ref))


@app.command("delete")
def delete(ref: RefArg, workspace: WorkspaceOpt = DEFAULT) -> None:
    """Delete a stored connector."""
    with _store(workspace) as store:
        store.delete(ref)
        typer.echo(f"deleted {ref}")


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
    _echo(result.as_dict())
    raise typer.Exit(0 if result.ok else 3)
