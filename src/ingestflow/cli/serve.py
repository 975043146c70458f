"""`ingestflow serve`: the REST API on this machine."""

from __future__ import annotations

import socket
from contextlib import suppress
from pathlib import Path
from typing import Annotated

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, WorkspaceOpt, app


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port.")] = 8000,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    max_jobs: Annotated[
        int, typer.Option("--max-jobs", min=1, help="Jobs running at once; the rest wait.")
    ] = 2,
    max_files: Annotated[
        int, typer.Option("--max-files", min=1, help="Files one request may upload.")
    ] = 100,
    max_file_mb: Annotated[
        int, typer.Option("--max-file-mb", min=1, help="Size of one uploaded file, in MB.")
    ] = 100,
    allow_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--allow-dir",
            exists=True,
            file_okay=False,
            help="A folder (besides the workspace) where vectordb destinations' Milvus Lite "
            "databases may lie; repeatable. Relative Lite paths resolve inside the workspace.",
        ),
    ] = None,
    max_body_mb: Annotated[
        int,
        typer.Option(
            "--max-body-mb",
            min=1,
            help="Size of a JSON body (a workflow, a connector) or of an on-demand job's "
            "request_data, in MB.",
        ),
    ] = 2,
    keep_jobs_days: Annotated[
        float | None,
        typer.Option(
            "--keep-jobs-days",
            metavar="DAYS",
            help="Remove finished jobs (records, uploads, node outputs) DAYS after they end; "
            "checked at start and hourly. Default: keep all.",
        ),
    ] = None,
) -> None:
    """Serve the REST API under /api/v1 (OpenAPI at /openapi.json, docs at /docs). Every
    request needs a key from `ingestflow keys create` in the `service-api-key` header."""
    from ingestflow.cli.output import failing_cleanly
    from ingestflow.service import Service, UploadLimits

    if keep_jobs_days is not None:
        from ingestflow.service.retention import validate

        with failing_cleanly("--keep-jobs-days: "):
            validate(keep_jobs_days, None)
    with failing_cleanly(), Service(workspace) as service:
        keys = service.keys.active()
    if not keys:
        typer.echo(
            f"✗ no API key in workspace {workspace}: every request needs one. Make one with "
            f"`ingestflow keys create --workspace {workspace}` and start the server again.",
            err=True,
        )
        raise typer.Exit(2)
    import uvicorn

    from ingestflow.offline import set_offline_env
    from ingestflow.server.access_log import to_stderr
    from ingestflow.server.app import create_app

    set_offline_env()
    limits = UploadLimits(max_files, max_file_mb << 20, max_body_mb << 20)
    app_ = create_app(
        workspace,
        limits,
        max_jobs,
        allow_dirs=allow_dir or [],
        keep_jobs_days=keep_jobs_days,
        access_log=to_stderr,
    )
    sock = listening_socket(host, port)  # bound here: the line below names the port it got
    shown = f"[{host}]" if ":" in host else host
    where = f"http://{shown}:{sock.getsockname()[1]}/api/v1"
    typer.echo(f"serving workspace {workspace.resolve()} at {where}", err=True)
    # access_log off: ours (server/access_log.py) has the duration and never the query string
    server = uvicorn.Server(
        uvicorn.Config(app_, log_level="info", server_header=False, access_log=False)
    )
    with sock, suppress(KeyboardInterrupt):  # Ctrl-C: uvicorn has shut down cleanly, as asked
        server.run(sockets=[sock])
    if not server.started:
        raise typer.Exit(3)  # the app's start-up failed; its lifespan said why


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on host:port for uvicorn (`serve`, `ui`); a port that cannot be taken
    ends the command with one line and exit 3."""
    try:
        return socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
        )
    except OSError as exc:
        typer.echo(
            f"✗ cannot listen on {host}:{port}: {exc.strerror or exc}; give another --port "
            "(0 picks a free one), or stop what holds it",
            err=True,
        )
        raise typer.Exit(3) from None
