"""The launcher: starts SCHEDULED jobs as job processes while a server runs.

At most `max_running` jobs run at once, and never two of one workflow (the second waits,
SCHEDULED, until the first ends). Each round also fails (interrupted) the jobs whose process
died, so that what waits behind them starts. Several servers may serve one workspace: a job is
claimed in the store as its process starts (`store.claims.launch_job`), so one launcher starts
it. Stopping the launcher asks running jobs to stop the way Ctrl-C does (finished documents
kept) and reaps every process it started.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from functools import partial
from pathlib import Path

log = logging.getLogger("ingestflow.server")


class Launcher:
    """A thread that turns SCHEDULED jobs into running job processes."""

    def __init__(
        self,
        workspace: Path,
        max_running: int = 2,
        allow_dirs: Sequence[Path] = (),
        poll_s: float = 1.0,
    ) -> None:
        """`allow_dirs`: the folders besides the workspace a job's Milvus Lite path may name."""
        self.workspace = Path(workspace).resolve()
        self.allow_dirs = [str(Path(d).resolve()) for d in allow_dirs]
        self.max_running = max(1, max_running)
        self.poll_s = poll_s
        self.running: dict[str, tuple[str, subprocess.Popen[bytes]]] = {}  # job -> (workflow, p)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ingestflow-launcher", daemon=True)

    def start(self) -> None:
        """Start launching."""
        self._thread.start()

    def wake(self) -> None:
        """Look for SCHEDULED jobs now (a run was just submitted)."""
        self._wake.set()

    def stop(self, grace_s: float = 20.0) -> None:
        """Stop launching; ask running jobs to stop cleanly, then end what is left."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for _, process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for _, process in self.running.values():
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        self.running.clear()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._reap()
                self._launch()
            except Exception as exc:  # keep launching: one bad round must not stop the server
                log.error("launcher: %s", str(exc).splitlines()[0] if str(exc) else repr(exc))
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _reap(self) -> None:
        for job_id, (_, process) in list(self.running.items()):
            if process.poll() is not None:
                del self.running[job_id]

    def _launch(self) -> None:
        from ingestflow.service.sweep import sweep
        from ingestflow.store import Workspace
        from ingestflow.store.claims import QUEUED, launch_job

        ws = Workspace(self.workspace, check=False)  # every second: checked whole at start-up
        try:
            # a job whose process died (killed, out of memory; this server's or another's) is
            # FAILED, interrupted, now: not left IN_PROGRESS holding its workflow's next runs
            for job_id in sweep(ws):
                log.warning("job %s: %s", job_id, "its process ended before it finished")
            busy = {workflow for workflow, _ in self.running.values()}
            rows = ws.db.execute(
                f"SELECT id, workflow_id, status, {QUEUED} AS queued FROM jobs WHERE status IN "
                "('SCHEDULED', 'IN_PROGRESS') ORDER BY created_at"
            ).fetchall()
            busy |= {r["workflow_id"] for r in rows if r["status"] == "IN_PROGRESS"}
            for row in rows:
                if len(self.running) >= self.max_running:
                    break
                if row["status"] != "SCHEDULED" or not row["queued"] or row["id"] in self.running:
                    continue  # a foreground run's job is its own process's, never launched
                if row["workflow_id"] in busy:
                    continue  # one run of a workflow at a time: this one waits its turn
                process = launch_job(ws.db, row["id"], partial(self._spawn, row["id"]))
                busy.add(row["workflow_id"])  # started here or elsewhere: its turn is taken
                if process is not None:
                    self.running[row["id"]] = (row["workflow_id"], process)
        finally:
            ws.close()

    def _spawn(self, job_id: str) -> subprocess.Popen[bytes]:
        from ingestflow.files import private_folder

        folder = private_folder(self.workspace / "jobs" / job_id)  # the workspace's owner's only
        log = os.open(folder / "job.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        log_file = os.fdopen(log, "ab")  # the child owns it
        try:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ingestflow.service.jobproc",
                    str(self.workspace),
                    job_id,
                    *(arg for folder in self.allow_dirs for arg in ("--allow-dir", folder)),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        finally:
            log_file.close()
