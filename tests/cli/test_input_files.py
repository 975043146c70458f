"""Workflow and connector files the user names are read safely by every command that reads one:
a FIFO, a device (`/dev/zero`), a directory or a file over the limit is refused at once, exit 2,
with one line naming the file and what it is (in a subprocess: a reader that blocks or never
ends fails the test at its deadline instead of hanging it)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ingestflow.spec.input_file import MAX_INPUT_BYTES
from tests.conftest import FIXTURES

VALID = FIXTURES / "workflows" / "valid" / "02-fast-by-title-embed.json"
#: Generous: each command, refused at once, takes a few seconds to start.
DEADLINE = 120
#: A reader without a bound runs out of this much memory in a second or two, instead of
#: taking the shared machine's.
MEMORY = 3 << 30


def fifo(tmp: Path) -> tuple[Path, str]:
    path = tmp / "pipe.json"
    os.mkfifo(path)  # no writer ever opens it: opening it to read would block for ever
    return path, "is a named pipe (FIFO), not a regular file"


def dev_zero(tmp: Path) -> tuple[Path, str]:
    return Path("/dev/zero"), "is a character device, not a regular file"


def directory(tmp: Path) -> tuple[Path, str]:
    (tmp / "folder.json").mkdir()
    return tmp / "folder.json", "is a directory, not a regular file"


def too_large(tmp: Path) -> tuple[Path, str]:
    path = tmp / "huge.json"
    path.write_bytes(b" " * MAX_INPUT_BYTES + b"{}")
    return path, f"is {MAX_INPUT_BYTES + 2:,} bytes, over the 10 MB limit"


KINDS: dict[str, Callable[[Path], tuple[Path, str]]] = {
    "fifo": fifo,
    "dev-zero": dev_zero,
    "directory": directory,
    "too-large": too_large,
}


def ingestflow(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script in its own session, killed (with anything it started) and the test
    failed when it runs past DEADLINE."""
    exe = Path(sys.executable).parent / "ingestflow"

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    with subprocess.Popen(
        [str(exe), *args],
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=limit_memory,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"`ingestflow {' '.join(args)}` still ran after {DEADLINE} s (killed)")
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def assert_refused(done: subprocess.CompletedProcess[str], path: Path, said: str) -> None:
    """Exit 2, and one line on stderr naming the file and what it is."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"✗ {path} ") and said in line, line


@pytest.mark.parametrize("kind", list(KINDS))
def test_validate_refuses_what_is_not_a_small_regular_file(tmp_path: Path, kind: str) -> None:
    path, said = KINDS[kind](tmp_path)
    assert_refused(ingestflow(tmp_path, "validate", str(path)), path, said)


@pytest.mark.parametrize(
    ("kind", "command"),
    [
        pytest.param("fifo", ["run", "{file}", "-i", str(VALID)], id="run-fifo"),
        pytest.param("dev-zero", ["run", "{file}", "-i", str(VALID)], id="run-dev-zero"),
        pytest.param("too-large", ["run", str(VALID), "--source", "{file}"], id="run-source"),
        pytest.param(
            "fifo", ["run", str(VALID), "-i", str(VALID), "--destination", "{file}"], id="run-dest"
        ),
        pytest.param("dev-zero", ["workflows", "create", "{file}"], id="workflows-create"),
        pytest.param("fifo", ["workflows", "update", "wf", "{file}"], id="workflows-update"),
        pytest.param("directory", ["sources", "create", "{file}"], id="sources-create"),
        pytest.param("fifo", ["destinations", "create", "{file}"], id="destinations-create"),
        pytest.param("dev-zero", ["sources", "update", "src", "{file}"], id="sources-update"),
        pytest.param(
            "too-large", ["destinations", "update", "dst", "{file}"], id="destinations-update"
        ),
    ],
)
def test_every_command_that_reads_a_file_refuses_the_same(
    tmp_path: Path, kind: str, command: list[str]
) -> None:
    path, said = KINDS[kind](tmp_path)
    args = [str(path) if a == "{file}" else a for a in command]
    done = ingestflow(tmp_path, *args, "--workspace", str(tmp_path / "ws"))
    assert_refused(done, path, said)


def test_a_file_just_under_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "padded.json"
    body = VALID.read_bytes()
    path.write_bytes(body + b" " * (MAX_INPUT_BYTES - len(body)))
    done = ingestflow(tmp_path, "validate", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
