"""Starting and stopping the Ray cluster of a run (`executors.ray`): Ray's lines kept off the
terminal, a local cluster started without the helper processes a one-run cluster never uses,
and none of its processes left after the run."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: What a local cluster of one run leaves out (Ray's `RayParams`): the autoscaler's monitor
#: (the cluster never grows) and the log monitor (the run reads no worker's log: it starts Ray
#: with `log_to_driver=False`). `ray start` has switches for both (`--no-monitor`,
#: `--include-log-monitor=false`); `ray.init` has none.
LEFT_OUT = {"no_monitor": True, "include_log_monitor": False}


@contextmanager
def lean(ray: Any) -> Iterator[None]:
    """While inside, a local cluster that `ray.init` starts leaves out the processes of
    `LEFT_OUT`: ~3 s less to start on a busy 2-core machine, and less to stop
    (benchmarks/RESULTS.md, "Ray on a few small files"). Where Ray's private names have changed,
    the cluster starts with them, as before."""
    from ingestflow.patches import ray as ray_patches

    def leaner_of(init: Any) -> Any:
        def leaner(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            for name, value in LEFT_OUT.items():
                if hasattr(self, name):
                    setattr(self, name, value)

        return leaner

    with ray_patches.params_init(leaner_of):
        yield


@contextmanager
def quiet(ray: Any) -> Iterator[None]:
    """Keep Ray's own lines off the terminal during the run (what matters is in the job record:
    a dead worker's "(raylet) A worker died..." would land in `--json` output)."""
    import logging

    ray_logger = logging.getLogger("ray")
    level = ray_logger.level
    ray_logger.setLevel(logging.ERROR)
    from ingestflow.patches import ray as ray_patches

    try:
        # no public switch for Ray's printer of its workers' lines
        with ray_patches.print_to_stdstream(lambda _: lambda data, ignore_prefix=False: None):
            yield
    finally:
        ray_logger.setLevel(level)


def sigterm_handler() -> Any:
    """This thread's SIGTERM handler, or None when signals are not this thread's to set."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGTERM)


def reap(processes: list[Any], timeout: float = 10.0) -> None:
    """Wait for the local cluster's processes to end after `ray.shutdown()`; kill what remains
    (no raylet, GCS or worker outlives the run)."""
    import psutil

    _, alive = psutil.wait_procs(processes, timeout=timeout)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(alive, timeout=5)
