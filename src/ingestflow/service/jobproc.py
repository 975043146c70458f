"""The job process: `python -m ingestflow.service.jobproc WORKSPACE JOB_ID` runs one background job.

The launcher starts one per job, so a server keeps answering while jobs run, and a job that
crashes takes only its own process down (the next workspace open marks it FAILED, interrupted).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the SCHEDULED job `JOB_ID` of `WORKSPACE`; the job record says how it went."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m ingestflow.service.jobproc WORKSPACE JOB_ID", file=sys.stderr)
        return 2
    from ingestflow.offline import set_offline_env

    set_offline_env()
    from ingestflow.service import Service

    with Service(Path(args[0]), create=False) as service:
        record = service.runs.execute(args[1])
    return 0 if record["status"] == "COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
