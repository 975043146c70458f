"""How a run stops on SIGINT or SIGTERM: the first asks the stream to stop at its next check
point, a second stops it now; from then on the run is winding down (its workers ended, its job
recorded as STOPPED), which is quick, and further signals no longer cut that short: a job is
never left half-recorded, nor a worker left running."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: How often `Stopper.check` asks its `cancelled` callable (a read of the job's row).
POLL_S = 1.0


class Stopper:
    """The stop requests of one run (`on_request`: told of the first). Besides signals, a run
    stops when `cancelled` says so (a cancel recorded in the job's row, for when no signal could
    reach this process), asked at a check point at most once every `POLL_S` seconds."""

    def __init__(self, on_request: Callable[[], None]) -> None:
        self.requested = False
        self.ending = False  # winding down: signals are no longer raised
        self.now = False  # a second signal: stop now, not after the documents in progress
        self._on_request = on_request
        self.cancelled: Callable[[], bool] = lambda: False
        self._polled = 0.0

    @contextmanager
    def installed(self) -> Iterator[None]:
        """The handlers for SIGINT and SIGTERM while inside (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {
            sig: signal.signal(sig, self._handle) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.ending:
            return  # the run ends as soon as its workers are ended and its job recorded
        if self.requested:
            self.ending = self.now = True
            raise KeyboardInterrupt
        self.requested = True
        self._on_request()

    def check(self) -> None:
        """Stop here (KeyboardInterrupt) when a stop was asked for."""
        self.listen()
        if self.requested:
            self.ending = True
            raise KeyboardInterrupt

    def listen(self) -> None:
        """Hear a cancel recorded in the job's row (it counts as a first stop request) without
        acting on it: for waits on documents in progress, which a first stop lets finish."""
        if not self.requested and not self.ending:
            now = time.monotonic()
            if now - self._polled >= POLL_S:
                self._polled = now
                if self.cancelled():
                    self.requested = True
                    self._on_request()

    def finish_in_progress(self) -> None:
        """A first stop ended the stream of new documents (`check`): the documents in progress
        are finished now, and until they are, a second signal stops the run at once."""
        self.ending = False

    def wind_down(self) -> None:
        """The run is ending: let nothing interrupt its clean-up."""
        self.ending = True
