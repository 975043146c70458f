"""A run's worker server started as `ingestflow run` begins, before the workflow is checked
(`runner.preload.early`): reachable by the front ends without importing the rest of the
service, whose imports are the time this saves."""

from __future__ import annotations

from pathlib import Path


def start(workflow: Path, inputs: list[Path], workers: int, exclude: list[Path]) -> None:
    """Start the server a run of the workflow file over these local files will most likely
    want (a guess: the run keeps it or replaces it); never raises."""
    from ingestflow.runner import preload

    preload.early(workflow, inputs, workers, exclude)


def stop() -> None:
    """Stop the server this process started, if any (the run stops its own; not one that
    ended before it began)."""
    from ingestflow.runner import preload

    preload.stop()
