"""`ingestflow templates`: the built-in workflow templates."""

from __future__ import annotations

from typing import Annotated

import typer

from ingestflow.cli.app import JsonOpt, group
from ingestflow.cli.output import echo_json, failing_cleanly

templates_app = group("templates", "Built-in workflow templates (workflow_type `template`).")


@templates_app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """List the templates."""
    from ingestflow.service.templates import Templates

    items = Templates().list()
    if as_json:
        echo_json(items)
        return
    for item in items:
        typer.echo(f"{item.id:<24} {item.description}")


@templates_app.command("get")
def get(template_id: Annotated[str, typer.Argument(help="Template id.")]) -> None:
    """Show a template with its nodes, as JSON."""
    from ingestflow.service.templates import Templates

    with failing_cleanly():
        echo_json(Templates().get(template_id))
