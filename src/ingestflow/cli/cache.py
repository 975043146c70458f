"""`ingestflow cache`: the node-output cache that lets a traced run start from earlier steps."""

from __future__ import annotations

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, JsonOpt, WorkspaceOpt, group
from ingestflow.cli.output import echo_json, failing_cleanly

cache_app = group("cache", "The node-output cache (traced runs reuse unchanged steps).")


@cache_app.command("info")
def info(workspace: WorkspaceOpt = DEFAULT_WORKSPACE, as_json: JsonOpt = False) -> None:
    """How much the cache holds, and its size bound."""
    from ingestflow.service import Service

    with failing_cleanly(), Service(workspace) as service:
        usage = service.cache_usage()
    if as_json:
        echo_json(usage)
        return
    typer.echo(
        f"{usage['files']} node outputs, {usage['bytes'] / 2**20:.1f} MB of "
        f"{usage['budget_bytes'] / 2**20:.0f} MB (INGESTFLOW_CACHE_MB) in {usage['path']}"
    )


@cache_app.command("clear")
def clear(workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
    """Remove every cached node output (job records and their outputs stay)."""
    from ingestflow.service import Service

    with failing_cleanly(), Service(workspace) as service:
        files, size = service.clear_cache()
    typer.echo(f"removed {files} cached node outputs ({size / 2**20:.1f} MB)")
