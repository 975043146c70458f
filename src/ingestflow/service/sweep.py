"""The jobs whose process died: failed as interrupted, except a queued job that can still run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingestflow.store import Workspace
from ingestflow.store.job_rows import INTERRUPTED

UPLOADS_GONE = (
    "interrupted before it started, and its uploaded files are no longer in the workspace: "
    "run it again with its files"
)


def sweep(ws: Workspace) -> list[str]:
    """Mark FAILED ("interrupted") the unfinished jobs whose process died; returns their ids.
    A background job accepted but never started stays SCHEDULED (the next launcher runs it)
    while it has what it needs."""
    return ws.sweep_interrupted(unstartable)


def unstartable(info: dict[str, Any]) -> str | None:
    """Why a job that never started cannot be started now (None: it can), by its stored info."""
    run = info.get("run")
    if not isinstance(run, dict) or not isinstance(run.get("body"), dict):
        return INTERRUPTED  # a foreground run: only its own process could have run it
    for folder in map(Path, run.get("inputs") or []):
        if not folder.is_dir() or not any(folder.iterdir()):
            return UPLOADS_GONE
    return None
