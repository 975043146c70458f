"""Imported by a run's fork server before it forks the workers (see `preload`): what the run's
partition strategy declares its workers load first (for the built-in ones,
`stages.partition.preload`: the document library, its spaCy model unless the run reads only
pages under High Res, the partitioners of the run's file types, ONNX Runtime, the stages and
the High Res stack), loaded once for all workers. What this cannot load (a broken install) is
left to the workers, which load what they need themselves and say what went wrong."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
from typing import Any

from ingestflow.patches import imports
from ingestflow.runner.preload import PRELOAD_ENV

# Ctrl-C belongs to the main process (which stops the run cleanly); the standard library makes
# the server ignore it only once this module is loaded, and the workers inherit it ignored.
signal.signal(signal.SIGINT, signal.SIG_IGN)


def load(wanted: dict[str, Any]) -> None:
    """Import what a worker of the run imports before its first document: the settings every
    worker starts with, then what the run's partition strategy declares it preloads (its
    `Strategy.preload`: "module:function", called with this spec)."""
    if wanted.get("threads"):
        # before numpy loads: a forked worker keeps the thread pools its server started with
        os.environ.setdefault("OMP_NUM_THREADS", str(wanted["threads"]))
    if wanted.get("block_torch"):
        # as in a worker of such a plan: spaCy's thinc imports torch when it can
        imports.block("torch")
    from ingestflow.offline import quiet_libraries

    quiet_libraries()
    import ingestflow.runner.worker  # noqa: F401

    hook = str(wanted.get("preload") or "")
    if ":" in hook:
        module, _, function = hook.partition(":")
        getattr(importlib.import_module(module), function)(wanted)


# never stop the server: the workers load what they need themselves
with contextlib.suppress(Exception):
    load(json.loads(os.environ.get(PRELOAD_ENV) or "{}"))
# What was loaded is never collected: out of the collector's reach, a worker's collections
# neither walk it nor write to its pages (which the workers share with the server until then).
gc.freeze()
