"""Worker processes that never import the user's `__main__`.

A spawned (or fork-server) child of `multiprocessing` imports the parent's main module again
before it runs anything (`multiprocessing.spawn.get_preparation_data` passes its path or module
name; the child's `prepare` runs it as `__mp_main__`). For a user's script that calls
`ingestflow.run` at module level, as the README's "From Python" snippet does, every worker would
run the job again: it fails while bootstrapping, every document fails, and each worker records
a phantom job. The workers run only ingestflow's code, so they need nothing from `__main__`:
while a worker process starts, the parent's `__main__` is a bare stand-in module of
ingestflow's own (no path, no module name), so the child imports nothing of the user's.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator
from multiprocessing.context import BaseContext, ForkServerProcess, SpawnProcess
from typing import Any

# Process starts swap a process-wide entry of sys.modules: one at a time.
_swap = threading.Lock()


@contextlib.contextmanager
def _stand_in_main() -> Iterator[None]:
    """`sys.modules["__main__"]` as a bare module while the block runs."""
    with _swap:
        main = sys.modules.get("__main__")
        stand_in = types.ModuleType("__main__", "ingestflow's stand-in while workers start")
        sys.modules["__main__"] = stand_in
        try:
            yield
        finally:
            if main is None:
                sys.modules.pop("__main__", None)
            else:
                sys.modules["__main__"] = main


class MainlessSpawnProcess(SpawnProcess):
    """A spawned process that does not import the parent's `__main__`."""

    def start(self) -> None:
        """Start the process with the stand-in main module in place."""
        with _stand_in_main():
            super().start()


class MainlessForkServerProcess(ForkServerProcess):
    """A fork-server process that does not import the parent's `__main__`."""

    def start(self) -> None:
        """Start the process with the stand-in main module in place."""
        with _stand_in_main():
            super().start()


_PROCESSES: dict[str, type[Any]] = {
    "spawn": MainlessSpawnProcess,
    "forkserver": MainlessForkServerProcess,
}


class _MainlessContext:
    """A multiprocessing context whose `Process` is one of the classes above; everything
    else (queues, locks, the start method) is the wrapped context's."""

    def __init__(self, ctx: BaseContext, process: type[Any]) -> None:
        self._ctx = ctx
        self.Process = process

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


def mainless(ctx: BaseContext) -> Any:
    """`ctx` with processes that never import the parent's `__main__`. A fork context (whose
    children inherit the parent's modules and import nothing) is returned as it is."""
    process = _PROCESSES.get(ctx.get_start_method())
    return ctx if process is None else _MainlessContext(ctx, process)
