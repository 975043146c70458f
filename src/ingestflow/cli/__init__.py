"""The `ingestflow` command line: thin front ends over the service layer, one module per group.

Modules import `cli.app` (the root command) and `cli.output`; this package imports them all to
register their commands, so there is no import cycle.
"""

from __future__ import annotations

import atexit
import contextlib
import sys

import typer

from ingestflow.cli import (  # noqa: F401 - each registers its commands
    cache,
    connectors,
    jobs,
    keys,
    providers,
    run,
    serve,
    templates,
    ui,
    validate,
    vectordb,
    workflows,
)
from ingestflow.cli.app import app


def _terminate_like_ctrl_c(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    """Console-script entry point. SIGTERM stops the way Ctrl-C does (a run records its job as
    STOPPED, keeps what finished, and ends its workers)."""
    import signal

    signal.signal(signal.SIGTERM, _terminate_like_ctrl_c)
    try:
        _main()
    finally:
        # registered last, so run first at exit: a signal during the other exit clean-ups
        # (multiprocessing's) ends the process plainly, not with a KeyboardInterrupt traceback
        atexit.register(_default_signals)


def _default_signals() -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _main() -> None:
    """Run the command; exit with its code (never a traceback)."""
    try:
        code = app(standalone_mode=False)
    except KeyboardInterrupt:  # a command that had no clean stop of its own: say so
        with contextlib.suppress(OSError, ValueError):  # a closed terminal: nothing to say on
            typer.echo("✗ stopped by Ctrl-C or SIGTERM", err=True)
        sys.exit(130)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        sys.exit(130)
    except typer.TyperException as usage:  # bad arguments: the parser's own message, exit 2
        show = getattr(usage, "show", None)
        if show is not None:
            show()
        sys.exit(getattr(usage, "exit_code", 2))
    except Exception as exc:  # an unexpected error: one line, never a traceback
        from ingestflow.errors import one_line as reason

        typer.echo(f"✗ ingestflow stopped on an unexpected error: {reason(exc)}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


__all__ = ["app", "main"]
