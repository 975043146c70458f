"""A run's worker server started as `ingestflow run` begins, before the workflow is checked
(`runner.preload.early`): reachable by the front ends without importing the rest of the
service, whose imports are the time this saves."""

from __future__ import annotations

from pathlib import Path


def start(
    workflow: Path,
    inputs: list[Path],
    *,
    workers: int,
    workspace: Path,
    output: Path,
    executor: str = "local",
    source: str | None = None,
) -> None:
    """Start the server a run of the workflow file over these local files will most likely
    want (a guess: the run keeps it or replaces it); never raises. Only for what `runs.prepare`
    reads as local files run by the local executor; the folders never read as input are the
    ones it leaves out (the workspace, the output)."""
    if executor != "local" or source is not None or not inputs:
        return
    from ingestflow.runner import preload

    preload.early(workflow, inputs, workers, exclude=[workspace, output])


def stop() -> None:
    """Stop the server this process started, if any (the run stops its own; not one that
    ended before it began)."""
    from ingestflow.runner import preload

    preload.stop()
