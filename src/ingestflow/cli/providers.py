"""`ingestflow providers`: the model servers ingestflow is configured to use.

Endpoints come from environment variables (`INGESTFLOW_<PROVIDER>_BASE_URL` …; see the README
section on model servers). Exit codes: 0 every configured endpoint answered (or none is
configured), 3 one did not, 2 a variable is malformed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from ingestflow.cli.app import group

if TYPE_CHECKING:
    from ingestflow.providers.config import Endpoint  # a type only: no import at run time

app = group(
    "providers", "Model servers: list what the environment configures, and check that each answers."
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@app.command("list")
def list_endpoints(as_json: JsonOpt = False) -> None:
    """List the configured endpoints (keys are never shown)."""
    endpoints = _endpoints()
    rows = [
        {
            "name": e.name,
            "protocol": e.protocol,
            "base_url": e.shown_url,
            "model": e.model,
            "api_key": "set" if e.api_key else "none",
            "concurrency": e.concurrency,
            "timeout_s": e.timeout,
        }
        for e in endpoints.values()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo(_NONE)
        return
    for row in rows:
        model = f", model {row['model']}" if row["model"] else ""
        typer.echo(
            f"{row['name']}: {row['protocol']} at {row['base_url']}{model} "
            f"(key {row['api_key']}, {row['concurrency']} at once, {row['timeout_s']:g} s timeout)"
        )


@app.command("check")
def check(as_json: JsonOpt = False) -> None:
    """Call each configured endpoint once and report what answers."""
    from ingestflow.service.admin import check_providers

    results = check_providers(_endpoints())
    if as_json:
        typer.echo(json.dumps([r.__dict__ for r in results], indent=2))
    elif not results:
        typer.echo(_NONE)
    for r in [] if as_json else results:
        mark = "✓" if r.ok else "✗"
        model = f" model {r.model}" if r.model else ""
        typer.echo(
            f"{mark} {r.name} ({r.protocol} at {r.base_url}{model}): {r.detail}"
            + (f" in {r.seconds:.2f} s" if r.ok else "")
        )
    if any(not r.ok for r in results):
        raise typer.Exit(3)


_NONE = (
    "no model server is configured; set INGESTFLOW_<PROVIDER>_BASE_URL (e.g. "
    "INGESTFLOW_PROVIDER_C_BASE_URL=http://127.0.0.1:11434/v1 for Ollama); see the README "
    "section on model servers"
)


def _endpoints() -> dict[str, Endpoint]:
    from ingestflow.errors import EnvironmentProblem
    from ingestflow.service.admin import provider_endpoints

    try:
        return provider_endpoints()
    except EnvironmentProblem as exc:
        typer.echo(f"✗ {exc}", err=True)
        raise typer.Exit(2) from None
