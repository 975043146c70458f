"""`ingestflow sources|destinations|connectors`: store, list, get, update, delete and check
connectors. `connectors` covers both roles."""

from pathlib import Path
from typing import Annotated, Any

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, JsonOpt, WorkspaceOpt, group
from ingestflow.cli.output import echo_json, failing_cleanly

RefArg = Annotated[str, typer.Argument(help="Id, id prefix or name.")]
FileArg = Annotated[Path, typer.Argument(help="Connector JSON: {name, type, config}.")]


def _load(file: Path) -> Any:
    from ingestflow.service.validation import load_body

    return load_body(file, what="connector")


def _service(workspace: Path) -> Any:
    from ingestflow.service import Service

    return Service(workspace)


def connector_group(name: str, role: str | None) -> typer.Typer:
    """The commands of one role (None: both)."""
    what = role or "connector"
    sub = group(
        name,
        f"{what.capitalize()} connectors: store, list, check (records never show secrets).",
    )

    @sub.command("create")
    def create(file: FileArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
        """Store a connector in the workspace; prints its record (secrets masked)."""
        with failing_cleanly(), _service(workspace) as service:
            echo_json(service.connectors.create(_load(file), role))

    @sub.command("list")
    def list_(
        workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
        role_: Annotated[
            str | None,
            typer.Option("--role", help="source or destination", hidden=role is not None),
        ] = None,
        type_: Annotated[str | None, typer.Option("--type", help="Only this type.")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """List stored connectors (secrets masked)."""
        with failing_cleanly(), _service(workspace) as service:
            records = service.connectors.list(role or role_, type_)
        if as_json:
            echo_json(records)
            return
        if not records:
            typer.echo(f"no stored {what}s; `ingestflow {name} create FILE` stores one")
        for r in records:
            where = r.config.get("url") or r.config.get("uri") or ""
            typer.echo(f"{r.id[:8]}  {r.name}  [{r.type}]  {where}")

    @sub.command("get")
    def get(ref: RefArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
        """Show one stored connector (secrets masked)."""
        with failing_cleanly(), _service(workspace) as service:
            echo_json(service.connectors.get(ref, role))

    sub.command("show", hidden=True)(get)

    @sub.command("update")
    def update(ref: RefArg, file: FileArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
        """Replace a connector's config (and name) from a file; a secret written as ******** keeps
        its stored value."""
        with failing_cleanly(), _service(workspace) as service:
            echo_json(service.connectors.update(ref, _load(file), role))

    @sub.command("delete")
    def delete(ref: RefArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
        """Delete a stored connector no workflow uses."""
        with failing_cleanly(), _service(workspace) as service:
            answer = service.connectors.delete(ref, role)
        typer.echo(f"deleted {answer.id}")

    @sub.command("check")
    def check(
        ref: Annotated[str, typer.Argument(help="Connector JSON file, or a stored id or name.")],
        workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    ) -> None:
        """Check that the connector's endpoint answers and its credentials work, without crawling
        or writing. Exit 0 SUCCESS, 3 FAILURE, 2 invalid connector."""
        with failing_cleanly(), _service(workspace) as service:
            result = service.connectors.check_now(ref, role or "")
        echo_json(result)
        raise typer.Exit(0 if result["ok"] else 3)

    return sub


connector_group("sources", "source")
connector_group("destinations", "destination")
connector_group("connectors", None)
