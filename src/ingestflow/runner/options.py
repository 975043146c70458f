"""How a run goes: its options (worker count, executor, batching, the job's identity)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunOptions:
    """How to run: worker count, tracing, batching, and the workflow's identity in the store."""

    workers: int = 0  # 0: one per core
    trace: bool = False
    batch_docs: int = 4  # documents per task (the embedder batches across them)
    batch_bytes: int = 256 << 10  # a larger document is a task of its own
    lookahead: int = 32  # documents read ahead to start the largest first
    workflow_id: str = "local"
    job_type: str = "ephemeral"
    destination_key: str = ""
    output_dir: str | None = None
    job_id: str | None = None  # a SCHEDULED job already recorded (by the service) to run
    reuse: Any = None  # a runner.reuse.Reuse: start documents from earlier node outputs
    doc_timeout: float | None = 1800.0  # seconds a document may spend in one node
    executor: str = "local"  # a name of runner.executors.registry ("local", "ray")
    #: executor name -> its own options (`registry.RayOptions` for "ray"); absent: its defaults
    executor_options: dict[str, Any] = field(default_factory=dict)
    preload: bool = False  # workers forked from a preloaded server where it pays (runner.preload)
    source_key: str | None = None  # what was listed (runner.deletions); None: uploads
    keep_deleted: bool = False  # keep what left the source in the destination
    resume: bool = False  # job_id is an interrupted or stopped job, continued (runner.resume)
    run_args: dict[str, Any] | None = None  # kept with a new job, to resume it (service.resume)
    expected: int | None = None  # documents the source said it holds, when it could count them

    def worker_count(self) -> int:
        """Workers to start: the given count, or one per available core."""
        return self.workers or len(os.sched_getaffinity(0))
