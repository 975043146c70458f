"""The job process: `python -m ingestflow.service.jobproc WORKSPACE JOB_ID` runs one background job.

The launcher starts one per job, so a server keeps answering while jobs run, and a job that
crashes takes only its own process down (the next workspace open marks it FAILED, interrupted).
The launcher hands the job over IN_PROGRESS and owned by this process, so cancelling it sends
this process SIGINT from the start: before the run can stop itself cleanly, that stops the job.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the SCHEDULED job `JOB_ID` of `WORKSPACE`; the job record says how it went.

    It runs under the server's rule for Milvus Lite paths: relative to the workspace, inside it
    or a folder given with `--allow-dir` (repeatable; the launcher passes the server's)."""
    import argparse
    import signal

    # A cancel is SIGINT to this process: it must stop the job whatever this process inherited
    # from the one that launched it (a signal ignored there is ignored here from the start, and
    # a launching thread's blocked signals stay blocked: Python would then never raise
    # KeyboardInterrupt, and a cancelled job would run to its end).
    # what a job process writes lives in its workspace (outputs, node outputs, a Milvus Lite
    # file), which is its owner's only: folders 0700, files 0600
    os.umask(0o077)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    parser = argparse.ArgumentParser(prog="python -m ingestflow.service.jobproc")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("job_id")
    parser.add_argument("--allow-dir", action="append", default=[], type=Path)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)  # exit 2 on bad usage
    try:
        from ingestflow.offline import set_offline_env

        set_offline_env()
        from ingestflow.service import LitePaths, Service

        lite = LitePaths.served(args.workspace, args.allow_dir)
        with Service(args.workspace, create=False, lite=lite) as service:
            record = service.runs.execute(args.job_id)
        return 0 if record["status"] == "COMPLETED" else 1
    except KeyboardInterrupt:
        stopped_early(args.workspace, args.job_id)
        return 1


def stopped_early(workspace: Path, job_id: str) -> None:
    """Mark the job STOPPED when it is still this process's and unfinished (cancelled before
    the run could stop itself)."""
    from ingestflow.store import open_workspace
    from ingestflow.store.job_rows import ACTIVE_STATUSES
    from ingestflow.store.owners import process_owner, same_owner

    with open_workspace(workspace) as ws:
        row = ws.job_row(job_id)
        if row["status"] in ACTIVE_STATUSES and same_owner(row["owner"], process_owner()):
            ws.update_job(
                row["id"],
                status="STOPPED",
                processing_status="STOPPED",
                message="cancelled before it began",
            )


if __name__ == "__main__":
    sys.exit(main())
