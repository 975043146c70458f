"""`ingestflow keys`: the API keys `ingestflow serve` accepts."""

from __future__ import annotations

from typing import Annotated

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, JsonOpt, WorkspaceOpt, group
from ingestflow.cli.output import echo_json, failing_cleanly

keys_app = group("keys", "API keys for `ingestflow serve`: create, list, revoke.")


@keys_app.command("create")
def create(
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    name: Annotated[str | None, typer.Option("--name", help="A label to tell keys apart.")] = None,
) -> None:
    """Make a key. It is printed once, alone on the last line; only a digest is stored."""
    from ingestflow.service import Service

    with failing_cleanly(), Service(workspace) as service:
        record, key = service.keys.create(name)
    typer.echo(f"key {record.id} created; it is shown only now, keep it safe:", err=True)
    typer.echo(key)


@keys_app.command("list")
def list_(workspace: WorkspaceOpt = DEFAULT_WORKSPACE, as_json: JsonOpt = False) -> None:
    """List keys (never the keys themselves: their id, name and last four characters)."""
    from ingestflow.service import Service

    with failing_cleanly(), Service(workspace) as service:
        records = service.keys.list()
    if as_json:
        echo_json(records)
        return
    if not records:
        typer.echo("no keys; `ingestflow keys create` makes one")
    for r in records:
        state = f"revoked {r.revoked_at[:19]}" if r.revoked_at else "active"
        typer.echo(f"{r.id[:8]}  …{r.ends_with}  {r.name or '-'}  {state}")


@keys_app.command("revoke")
def revoke(
    key_id: Annotated[str, typer.Argument(help="Key id (a unique prefix is enough).")],
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
) -> None:
    """Revoke a key: requests carrying it are refused from now on."""
    from ingestflow.service import Service

    with failing_cleanly(), Service(workspace) as service:
        record = service.keys.revoke(key_id)
    typer.echo(f"revoked {record.id}")
