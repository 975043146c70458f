"""`ingestflow ui`: the REST server with its web UI on this machine's loopback, and a one-time
sign-in link (as Jupyter prints one)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, WorkspaceOpt, app

DEFAULT_PORT = 8765


@app.command()
def ui(
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")
    ] = DEFAULT_PORT,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the sign-in link; open no browser.")
    ] = False,
    max_jobs: Annotated[
        int, typer.Option("--max-jobs", min=1, help="Jobs running at once; the rest wait.")
    ] = 2,
) -> None:
    """Open the web UI: jobs, each file's pages with its elements drawn over them, two jobs
    compared. Serves on 127.0.0.1 only and prints a link that signs one browser in once; the
    REST API is served beside it under /api/v1 (with API keys, as `ingestflow serve`)."""
    import threading
    import time
    import webbrowser

    import uvicorn

    from ingestflow.cli.output import failing_cleanly
    from ingestflow.cli.serve import listening_socket
    from ingestflow.offline import set_offline_env
    from ingestflow.server.access_log import to_stderr
    from ingestflow.server.app import create_app
    from ingestflow.service import Service
    from ingestflow.service.signin import TOKEN_MINUTES, launch_page

    with failing_cleanly(), Service(workspace):
        pass  # made and checked before anything listens
    set_offline_env()
    app_ = create_app(workspace, max_running=max_jobs, access_log=to_stderr)
    sock = listening_socket("127.0.0.1", port)
    bound = sock.getsockname()[1]
    link = f"http://127.0.0.1:{bound}/ui/signin?token={app_.state.signin.issue_token()}"
    opened: list[Path] = []  # the owner-only page the browser was sent to, removed at exit
    server = uvicorn.Server(
        uvicorn.Config(app_, log_level="warning", server_header=False, access_log=False)
    )

    def announce() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if not server.started:
            return
        typer.echo(
            f"ingestflow UI for workspace {workspace.resolve()}\n"
            f"open this link to sign in (it works once, within {TOKEN_MINUTES:g} minutes; "
            f"stop with Ctrl-C):\n    {link}",
            err=True,
        )
        if not no_browser:
            # the browser's command line is seen by every local user: it gets the URL of a
            # file only this user can read, which sends it on to the link
            opened.append(launch_page(workspace / "ui", link))
            webbrowser.open(opened[-1].as_uri())

    threading.Thread(target=announce, daemon=True).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn shut down cleanly, then raised the Ctrl-C again (as `uvicorn.run` does)
    finally:
        sock.close()
        for path in opened:
            path.unlink(missing_ok=True)
