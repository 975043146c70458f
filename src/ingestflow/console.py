"""The `ingestflow` command's entry point: the CLI (`cli.main`), and an exit that skips the
interpreter's teardown.

When a Python process exits, the interpreter first runs its exit handlers: it joins the
threads, runs `atexit` (logging's flush, multiprocessing's clean-up, temporary folders). Then it
frees every module and object one by one. After a run, that second part alone takes ~0.3 s
(about a thousand modules: the CLI, the service, the library's checks). It changes nothing the
operating system does not do at once when the process ends, so the command ends there
(benchmarks/RESULTS.md, "High Res speed: the command's exit").

Only the console script does this. `cli.main()` called from Python (a test, a script) returns
or raises as any function does.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

_code = 0  # the exit status the command asked for


def run() -> None:
    """Run the CLI as the `ingestflow` command."""
    global _code
    # registered before anything else can register: the last handler to run
    atexit.register(_end)
    try:
        from ingestflow.cli import main

        main()
    except SystemExit as done:
        _code = _status(done.code)
        raise
    except BaseException:
        _code = 1  # the interpreter prints what escaped, then runs the handlers
        raise


def _status(code: object) -> int:
    """The process's exit status for `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    return 1  # a message: the interpreter has printed it to stderr by then


def _end() -> None:
    """After every other exit handler: flush what is buffered and end the process."""
    if "logging" in sys.modules:  # its own handler may be registered after this one
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(_code)
