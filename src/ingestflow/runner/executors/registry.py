"""The executor registry: name -> factory, each executor with options of its own.

A run names its executor (`RunOptions.executor`) and may give each executor its own options
(`RunOptions.executor_options`, by name: `RayOptions` for "ray"); `build` looks the name up and
calls the factory. Light on purpose: the service reads the names from here (`names`) without
importing an executor, so `ingestflow validate` and `--help` never import Ray; each factory
imports its executor when a run builds it. Adding an executor is a factory and one `register`
line.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingestflow.connectors.base import Destination, Source
    from ingestflow.runner import events
    from ingestflow.runner.executors.base import Executor
    from ingestflow.runner.options import RunOptions
    from ingestflow.runner.plan import Plan
    from ingestflow.runner.stopping import Stopper


@dataclass(frozen=True)
class NoOptions:
    """The options of an executor that has none of its own."""


@dataclass(frozen=True)
class RayOptions:
    """The Ray executor's own options. `address`: the cluster (None: a local cluster started for
    the run; "auto", "ray://…"); `shared_fs`: every Ray machine sees the local folders at the
    same paths (docs/ray.md)."""

    address: str | None = None
    shared_fs: bool = False


@dataclass(frozen=True)
class Launch:
    """What a factory builds an executor for: the plan, the run's options, the stopper, and what
    an executor may use besides (the connectors, the progress listener, what the workers load
    first, the fork server's context when the workers are preloaded)."""

    plan: Plan
    options: RunOptions
    stopper: Stopper
    source: Source | None = None
    destination: Destination | None = None
    progress: events.Listener | None = None
    loading: Sequence[str] = ()
    preloaded: Any = field(default=None, repr=False)


#: Builds an executor from the launch and the executor's own options (an instance of `options`).
Factory = Callable[[Launch, Any], "Executor"]


@dataclass(frozen=True)
class ExecutorType:
    """One executor: its name, its factory, the class of its own options, and whether its
    workers may be forked from a preloaded server (`runner.preload`)."""

    name: str
    factory: Factory
    options: builtins.type = NoOptions
    preloads: bool = False


EXECUTOR_TYPES: dict[str, ExecutorType] = {}


def register(entry: ExecutorType) -> ExecutorType:
    """Add an executor; a name already taken, or not lowercase, is refused (ValueError)."""
    if entry.name in EXECUTOR_TYPES:
        raise ValueError(
            f"cannot register executor {entry.name!r}: the name is taken; give it another name"
        )
    if not entry.name or entry.name != entry.name.strip().lower():
        raise ValueError(
            f"cannot register executor {entry.name!r}: its name must be lowercase without "
            "surrounding blanks (names are matched so)"
        )
    EXECUTOR_TYPES[entry.name] = entry
    return entry


def names() -> tuple[str, ...]:
    """The executors a run may name, in registration order."""
    return tuple(EXECUTOR_TYPES)


def executor_type(name: str) -> ExecutorType:
    """The registry entry of an executor (KeyError for an unknown name: the service checked)."""
    return EXECUTOR_TYPES[name]


def build(launch: Launch) -> Executor:
    """The executor `launch.options.executor` names, with its own options (those given in
    `executor_options`, else its defaults)."""
    entry = executor_type(launch.options.executor)
    own = launch.options.executor_options.get(entry.name) or entry.options()
    if not isinstance(own, entry.options):
        raise TypeError(
            f"the {entry.name} executor takes {entry.options.__name__}, "
            f"not {type(own).__name__}, in executor_options[{entry.name!r}]"
        )
    return entry.factory(launch, own)


def _local(launch: Launch, own: NoOptions) -> Executor:
    """This process (one worker) or a pool of worker processes sharing the CPUs."""
    import os
    from dataclasses import replace

    from ingestflow.runner.executors.local import InProcess, LocalPool

    plan, opts = launch.plan, launch.options
    workers = opts.worker_count()
    if workers <= 1:
        return InProcess(plan, launch.stopper, opts.trace)
    threads = max(1, (os.cpu_count() or 1) // workers)
    options = plan.context.options.with_threads(threads)
    plan = replace(plan, context=replace(plan.context, options=options))
    return LocalPool(plan, workers, threads, launch.stopper, opts.trace, launch.preloaded)


def _ray(launch: Launch, own: RayOptions) -> Executor:
    """A pool of Ray actors (Ray imported now, never with the registry)."""
    from ingestflow.runner.executors.ray import RayExecutor

    return RayExecutor(launch, own)


# One line per executor.
register(ExecutorType("local", _local, preloads=True))
register(ExecutorType("ray", _ray, RayOptions))
