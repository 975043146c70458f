"""Workers forked from a preloaded server: the worker's libraries imported once per run.

A spawned worker starts by importing `unstructured`, spaCy and its model, ONNX Runtime and the
stages (~2.5 s of CPU on this project's machines), and every worker pays it again. Instead, as
soon as a run begins — while the main process is still doing its prechecks — the runner starts
a fork server (the standard library's `forkserver`) that imports all of that once
(`preloaded`); each worker is then a fork of it, started with everything loaded. Where the
source can tell the extensions of its files before the run (a local folder: `suffixes`), the
library's partitioner of each of those types is loaded there too (the PDF one alone is ~1.4 s
of CPU a process, once the rest is in), and so is its element serialiser (which imports
pandas); a type nobody foresaw is imported by a worker when it first meets it. The server's
start grows by what the workers no longer import each: on the benchmark's 24 documents, 2.3 CPU
seconds fewer for the same wall time (`benchmarks/RESULTS.md`).

Under High Res over PDFs and images alone the library's spaCy model (~0.35 s to load) is not
loaded: their High Res reading never asks it, and a worker that meets another type after all
loads it at its first use, as the library does. Over PDFs alone rapidocr is not imported either
(~0.5 s: its import reads its model catalogue): text layers need no OCR, and a worker that meets
a scanned table imports it then. Nor are modules imported that the reading may never use, in the
server or any process that reads (`patches.unstructured.lazy_imports`): spaCy itself (~0.4 s
with thinc and its CLI; a stand-in imports it at first use), the library's drawing aids
(matplotlib) and numba (the XY-cut module's two compiled functions are ingestflow's own).

Under High Res and Auto the server also imports the High Res stack: every library module
ingestflow patches (the PDF and image partitioners, the layout inference package, which imports
pandas), ONNX Runtime, OpenCV, rapidocr and the
stages, which each worker imported itself before (~4–5 CPU s a worker; benchmarks/RESULTS.md,
"High Res speed: one import of the stack per run"). No model is loaded there: each worker opens
its own ONNX sessions when its first document needs them, so no session is shared across a fork.

Used where it is safe: the Fast, High Res and Auto strategies (not the VLM, whose pages go to a
model server), the local executor with two or more workers, and a process that runs one job
(the `run` commands and the API's job processes; `RunOptions.preload`): the server's imports
are fixed for its lifetime, and it lives for one run. Anything else spawns workers as before,
and so does `INGESTFLOW_PRELOAD=0`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.spec.strategies import Strategy, strategy_of

if TYPE_CHECKING:
    from ingestflow.runner.plan import Plan

#: The environment variable that tells the server what to load (JSON; see `preloaded`).
PRELOAD_ENV = "_INGESTFLOW_PRELOAD_SPEC"
#: Set to 0 to spawn every worker (to compare, or to rule the server out).
SWITCH_ENV = "INGESTFLOW_PRELOAD"

#: Extensions of the files High Res reads as pages (PDFs and images): their reading never asks
#: the library's spaCy model, so a High Res run over such files alone does not load it.
PAGED_SUFFIXES = frozenset(
    {".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".heic", ".webp"}
)
#: At most this many extensions in a spec (a folder rarely holds more types than this).
MOST_SUFFIXES = 64
_EXTENSION = re.compile(r"\.[a-z0-9]{1,10}")

_started: str | None = None  # the spec of the server this process started, if running


def spec(plan: Plan, workers: int, suffixes: set[str] | None = None) -> dict[str, Any] | None:
    """What a fork server should load for this run, or None when its workers are spawned.
    `suffixes`: the extensions of the run's files, where the source can tell (the partitioner
    of each of their types is loaded too; at most MOST_SUFFIXES of them, each a dot and 1 to
    10 letters or digits: the spec travels in an environment variable, which has a size
    limit)."""
    from ingestflow.runner.worker import torch_unused
    from ingestflow.spec.settings import PartitionSettings

    if not _enabled(workers):
        return None
    first = plan.nodes[0].settings if plan.nodes else None
    if not isinstance(first, PartitionSettings):
        return None
    strategy = first.partition_strategy
    if not strategy.preloaded:  # its workers gain nothing from the server (the VLM's pages)
        return None
    onnx = any(node.type == "embed" for node in plan.nodes)
    return _wanted(workers, torch_unused(plan), onnx, suffixes, strategy)


def guess(body: Any, workers: int, suffixes: set[str] | None) -> dict[str, Any] | None:
    """The spec that `spec` will most likely give for this workflow body, read as it is (no
    plan built): one whose first node is a partitioner that names the Fast or High Res strategy,
    or Auto."""
    from ingestflow.local_model import runs_without_torch

    if not _enabled(workers):
        return None
    nodes = body.get("workflow_nodes") if isinstance(body, dict) else None
    if not isinstance(nodes, list) or not nodes or not isinstance(nodes[0], dict):
        return None
    first = nodes[0]
    settings = first.get("settings")
    if first.get("type") != "partition" or not isinstance(settings, dict):
        return None
    strategy = strategy_of(first.get("subtype"), settings)  # None: the plan decides
    if strategy is None or not strategy.preloaded:
        return None
    onnx = any(isinstance(node, dict) and node.get("type") == "embed" for node in nodes)
    return _wanted(workers, runs_without_torch(), onnx, suffixes, strategy)


def _enabled(workers: int) -> bool:
    return os.environ.get(SWITCH_ENV, "1").strip() != "0" and workers >= 2


def _wanted(
    workers: int, block_torch: bool, onnx: bool, suffixes: set[str] | None, strategy: Strategy
) -> dict[str, Any]:
    kept = sorted(s for s in suffixes or () if _EXTENSION.fullmatch(s))[:MOST_SUFFIXES]
    return {
        "threads": max(1, (os.cpu_count() or 1) // workers),  # as the runner gives a worker
        "block_torch": block_torch,
        "onnx": onnx,
        "preload": strategy.preload,  # what the server imports, as the strategy declares
        "hi_res": strategy.lays_out_pages,  # its workers run the High Res stack
        "nlp": strategy.nlp_on_pages or not (kept and set(kept) <= PAGED_SUFFIXES),
        "suffixes": kept,
    }


def early(workflow: Path, inputs: list[Path], workers: int, exclude: list[Path]) -> None:
    """Start, from the workflow file alone, the server the run of `workflow` over the local
    files `inputs` will most likely want: at once, rather than once the plan is built (the
    spec's checks take ~0.5 s to import and run, and the server's loading is what a small run
    waits for). A guess: the runner asks for the server it wants (`start`), which keeps this
    one when the spec is the same and replaces it otherwise; the caller `stop`s it whatever
    happens. Nothing here fails the run."""
    workers = workers or len(os.sched_getaffinity(0))  # as `RunOptions.worker_count`
    try:
        # the local source's own walk, without the connector's imports (this delays the start)
        from ingestflow.connectors import local_walk
        from ingestflow.spec.input_file import read_input_file

        # the run reads it by the same rules: no FIFO waited on, no /dev/zero read for ever
        body = json.loads(read_input_file(workflow))
        if guess(body, workers, None) is None:
            return  # no server: no need to look at the files
        skipped = [Path(p).resolve() for p in exclude]  # as LocalSource resolves them
        wanted = guess(body, workers, local_walk.suffixes([Path(p) for p in inputs], skipped))
        if wanted is not None:
            start(wanted)
    except Exception:  # the run itself says what is wrong with the file, the folder or the server
        stop()


def start(wanted: dict[str, Any]) -> BaseContext:
    """Start the fork server now (it loads in the background) and return the context whose
    processes it forks. A server this process started for another spec is stopped first."""
    global _started
    blob = json.dumps(wanted, sort_keys=True)
    if _started is not None and _started != blob:
        stop()
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ingestflow.runner.preloaded"])
    # the server's environment is this one as it starts; kept until `stop`, so that a server
    # the standard library restarts (after a crash) loads the same
    os.environ[PRELOAD_ENV] = blob
    _started = blob
    from ingestflow.runner import pools

    try:
        pools.start_fork_server()
    except BaseException:
        stop()  # nothing of it is left for the workers spawned instead
        raise
    return ctx


def stop() -> None:
    """Stop the fork server this process started (its workers have ended by then)."""
    global _started
    if _started is None:
        return
    _started = None
    os.environ.pop(PRELOAD_ENV, None)
    from ingestflow.runner import pools

    # it would notice its owner's pipe closing only once done loading: a run that stopped
    # early (a failed precheck, Ctrl-C) must not wait for that
    pools.stop_fork_server()
