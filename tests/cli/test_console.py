"""The `ingestflow` command's entry point (`ingestflow.console`): every exit handler the command
registered runs, everything it printed arrives, and the exit status is the one it asked for,
though the process ends without the interpreter's teardown."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

from tests.conftest import REPO

#: A stand-in for the CLI: registers an exit handler as the command's libraries do, prints a lot
#: into a pipe, and exits the way the test asks.
COMMAND = """
import atexit, sys
import ingestflow.cli as cli
from ingestflow import console

def main():
    atexit.register(lambda: print("the command's exit handler ran"))  # left in the buffer
    print("x" * 200_000)  # more than a pipe holds: flushed before the process ends
    sys.stderr.write("said on stderr\\n")
    {exit}

cli.main = main
console.run()
"""


def command(exit: str) -> subprocess.CompletedProcess[str]:
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as in a pipe
    return subprocess.run(
        [sys.executable, "-c", COMMAND.format(exit=exit)],
        capture_output=True,
        text=True,
        timeout=60,
        env=buffered,
    )


def test_the_console_script_is_this_entry_point():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["ingestflow"] == "ingestflow.console:run"


def test_exit_handlers_run_output_arrives_and_the_status_is_kept():
    done = command("sys.exit(3)")
    assert done.returncode == 3
    assert done.stdout.startswith("x" * 200_000)
    assert done.stdout.endswith("the command's exit handler ran\n")
    assert done.stderr == "said on stderr\n"


def test_a_normal_return_exits_zero_and_a_message_exits_one():
    assert command("pass").returncode == 0
    done = command("sys.exit('the command failed')")
    assert done.returncode == 1
    assert done.stderr.endswith("the command failed\n")
    assert done.stdout.endswith("the command's exit handler ran\n")


def test_the_real_command_keeps_its_exit_codes(tmp_path):
    cli = [sys.executable, "-c", "from ingestflow.console import run; run()"]
    help_text = subprocess.run([*cli, "--help"], capture_output=True, text=True, timeout=60)
    assert help_text.returncode == 0 and "Usage" in help_text.stdout
    wrong = subprocess.run([*cli, "no-such-command"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "no-such-command" in wrong.stderr
    invalid = tmp_path / "wf.json"
    invalid.write_text('{"name": "x", "workflow_type": "custom", "workflow_nodes": []}')
    checked = subprocess.run(
        [*cli, "validate", str(invalid)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 2 and checked.stdout + checked.stderr


def test_a_command_stopped_by_ctrl_c_says_so(monkeypatch, capsys):
    """A Ctrl-C (or SIGTERM) that reaches the entry point (a stop before a run could record it,
    a second Ctrl-C) ends the command with 130 and one line, never silently."""
    import pytest

    import ingestflow.cli as cli

    def interrupted(**_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "app", interrupted)
    with pytest.raises(SystemExit, match="130"):
        cli._main()
    assert capsys.readouterr().err == "✗ stopped by Ctrl-C or SIGTERM\n"
