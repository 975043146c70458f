"""The progress display of a run (stderr): a Rich status line in a terminal, plain timestamped
lines (at most one every few seconds) when stderr is a pipe or a file, nothing with --quiet."""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import datetime
from typing import Any

from ingestflow.errors import printable
from ingestflow.service.progress import (
    DocumentFailed,
    Event,
    JobFinished,
    ProgressState,
    StopRequested,
    line_interval,
)


class Display:
    """A listener of a run's events that shows them (`quiet`: shows none but a stop request)."""

    def __init__(
        self,
        quiet: bool,
        total: int | None = None,
        terminal: bool | None = None,
        interval: float | None = None,
    ) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.state = ProgressState(total=total)
        terminal = self.console.is_terminal if terminal is None else terminal
        self.mode = "off" if quiet else "rich" if terminal else "lines"
        self.interval = line_interval() if interval is None else interval
        self.progress: Any = None
        # no line for the checks unless they take an interval: a refused input is one line
        self._printed = time.monotonic()  # when the last plain line went out
        self._stage = self.state.stage  # the step it showed
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.mode == "rich":
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.task = self.progress.add_task("starting", total=total, detail="")

    def __enter__(self) -> Display:
        if self.progress is not None:
            self.progress.start()
        elif self.mode == "lines":  # a line now and then even when no event comes (a long page)
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        if self.progress is not None:
            self.progress.stop()

    def __call__(self, event: Event) -> None:
        self.state(event)
        if isinstance(event, StopRequested):
            self._say("stopping after the documents in progress (Ctrl-C again to stop now)")
        elif isinstance(event, DocumentFailed) and self.mode != "off":
            result = event.result
            # a file name may hold a CR or an escape sequence: escaped, as `jobs show` does
            self._say(f"✗ {printable(result.filename)}: {printable(result.error or '', 1000)}")
        if self.mode == "rich":
            state = self.state
            self.progress.update(
                self.task,
                description=state.headline(),
                detail=state.detail(),
                completed=state.tally.done,
                total=state.expected,
            )
        elif self.mode == "lines" and not isinstance(event, JobFinished):
            self._line()

    def _tick(self) -> None:
        while not self._done.wait(min(self.interval, 1.0) / 2):
            self._line()

    def _line(self) -> None:
        """A plain line when the run moved to another step or the interval has passed."""
        with self._lock:
            stage, text = self.state.snapshot()  # together: a step is never skipped unsaid
            if stage == self._stage and time.monotonic() - self._printed < self.interval:
                return
            self._stage, self._printed = stage, time.monotonic()
            stamp = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S")
            _write(f"{stamp} {text}")

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress.console.print(text, markup=False, highlight=False)
        else:
            with self._lock:
                _write(text)


def _write(line: str) -> None:
    """One line to stderr in one system call, past Python's buffer: a worker process forked
    while a line sat in the buffer would write it again when it exits."""
    stream = sys.stderr
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (captured): nothing is forked
        print(line, file=stream, flush=True)
        return
    stream.flush()
    data = f"{line}\n".encode(stream.encoding or "utf-8", errors="replace")
    while data:
        data = data[os.write(fd, data) :]
