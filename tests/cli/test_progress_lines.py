"""Progress a user can trust: plain timestamped lines while a run goes when its output is a
pipe (CI, nohup, a log file), none with --quiet, and a clear error for a bad interval."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.cli.test_polish_cli import EXE, FAST
from tests.runner.test_long_text import book

STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")


class PipedRun:
    """`ingestflow run` with stdout and stderr piped, stderr read line by line as it comes,
    noting whether the run was still going when each line arrived."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [*EXE, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        self.lines: list[tuple[str, bool]] = []  # (line, the run was still going)
        self.out: list[str] = []
        # one reader per pipe: communicate() would read stderr too and take lines from _read
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.out_reader = threading.Thread(target=self._read_out, daemon=True)
        self.out_reader.start()

    def _read_out(self) -> None:
        assert self.process.stdout is not None
        self.out.append(self.process.stdout.read())

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append((line.rstrip("\n"), self.process.poll() is None))

    def finish(self, seconds: float = 400) -> tuple[int, str, str]:
        """Exit code, stdout and stderr, once it ends (killed and failed after `seconds`)."""
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the run did not end in {seconds} s: {self.lines}") from None
        self.reader.join(10)
        self.out_reader.join(10)
        out = "".join(self.out)
        return self.process.returncode, out, "\n".join(line for line, _ in self.lines)


@pytest.mark.slow
def test_a_long_run_in_a_pipe_prints_timestamped_progress_while_it_goes(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "book.txt").write_bytes(book("prose", paragraphs=4000))  # three line ranges
    (folder / "note.txt").write_text("A short note beside the long book.\n")
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(FAST))
    run = PipedRun(
        [
            *("run", str(wf), "-i", str(folder), "-o", str(tmp_path / "out")),
            *("--workspace", str(tmp_path / "ws"), "-w", "2"),
        ],
        {"INGESTFLOW_PROGRESS_INTERVAL": "0.5"},
    )
    code, out, err = run.finish()
    assert code == 0, err
    progress = [(line, going) for line, going in run.lines if STAMP.match(line)]
    assert progress, err
    assert any(going for _, going in progress), "no progress line came before the run ended"
    assert "\x1b[" not in err  # plain lines: no terminal control codes in a pipe
    said = [line for line, _ in progress]
    assert any(re.search(r"job [0-9a-f]{8}: loading the partitioner", line) for line in said), err
    assert any(re.search(r"partitioning book\.txt: \d+ of \d+ lines", line) for line in said), err
    assert any("2 of 2 documents done (2 written, 0 failed)" in line for line in said), err
    # every stderr line is one of ours: a timestamped progress line
    assert all(STAMP.match(line) for line, _ in run.lines if line.strip()), err
    assert "2 of 2 documents written" in out  # the summary on stdout, as before


@pytest.mark.slow
def test_quiet_prints_no_progress_only_the_summary(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "note.txt").write_text("A short note.\n\nA second paragraph.\n")
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(FAST))
    args = ["run", str(wf), "-i", str(folder), "-o", str(tmp_path / "out")]
    run = PipedRun(
        [*args, "--workspace", str(tmp_path / "ws"), "-w", "1", "--quiet"],
        {"INGESTFLOW_PROGRESS_INTERVAL": "0.1"},
    )
    code, out, err = run.finish()
    assert code == 0, err
    assert err == ""
    assert "1 of 1 documents written" in out


def test_a_bad_progress_interval_is_named_with_what_is_allowed(tmp_path: Path) -> None:
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(FAST))
    (tmp_path / "a.txt").write_text("Hello.")
    result = CliRunner().invoke(
        app,
        ["run", str(wf), "-i", str(tmp_path / "a.txt"), "--workspace", str(tmp_path / "ws")],
        env={"INGESTFLOW_PROGRESS_INTERVAL": "soon"},
    )
    assert result.exit_code == 3, result.output
    assert "INGESTFLOW_PROGRESS_INTERVAL='soon'" in result.output
    assert "expected a number above 0" in result.output


def test_progress_lines_wait_their_interval_but_not_a_change_of_step() -> None:
    import contextlib
    import io

    from ingestflow.cli.progress import Display
    from ingestflow.service.progress import (
        DocumentWritten,
        JobStarted,
        PagesPartitioned,
        StopRequested,
        Tally,
    )
    from ingestflow.store.job_rows import FileResult

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        display = Display(quiet=False, terminal=False, interval=3600)
        display(JobStarted("abcdef12-x", 2, ("the partitioner",)))  # a new step: a line
        for done in (24, 48, 72):  # the same step within the interval: one line only
            display(PagesPartitioned("long.pdf", done, 619, "pages", 26))
        result = FileResult("f", "long.pdf", "SUCCESS", elements=9)
        display(DocumentWritten(result, Tally(found=1, written=1, elements=9)))
        display(StopRequested())
    lines = err.getvalue().splitlines()
    assert [STAMP.sub("", line) for line in lines] == [
        "job abcdef12: loading the partitioner, reading the first documents · "
        "0 documents done (0 written, 0 failed)",
        "job abcdef12: partitioning long.pdf: 24 of 619 pages · 0 documents done (0 written, "
        "0 failed)",
        "job abcdef12: processing documents · 1 of 1 documents done (1 written, 0 failed)",
        "stopping after the documents in progress (Ctrl-C again to stop now)",
        "job abcdef12: stopping after the documents in progress · 1 of 1 documents done "
        "(1 written, 0 failed)",
    ]


def test_each_step_of_a_ray_executor_is_a_line_of_its_own() -> None:
    """Starting a Ray cluster, its actors and stopping it are said as they happen (issue 37:
    a minute of "loading the partitioner" while a cluster started)."""
    import contextlib
    import io

    from ingestflow.cli.progress import Display
    from ingestflow.service.progress import ExecutorStep, JobStarted

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        display = Display(quiet=False, terminal=False, interval=3600)
        display(JobStarted("abcdef12-x", 2, ("the partitioner",)))
        display(ExecutorStep("ray cluster", "starting a local Ray cluster (2 CPUs)"))
        display(ExecutorStep("ray actors", "starting 2 Ray actors: each loads the partitioner"))
        display(ExecutorStep("ray stop", "stopping the local Ray cluster"))
    lines = [STAMP.sub("", line).split(" · ")[0] for line in err.getvalue().splitlines()]
    assert lines == [
        "job abcdef12: loading the partitioner, reading the first documents",
        "job abcdef12: starting a local Ray cluster (2 CPUs)",
        "job abcdef12: starting 2 Ray actors: each loads the partitioner",
        "job abcdef12: stopping the local Ray cluster",
    ]
