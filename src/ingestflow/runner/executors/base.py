"""What every executor offers the runner: run planned tasks on its workers, handing each result
back as it comes and running the tasks that result leads to."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any

from ingestflow.runner.tasks import Task

#: Told of a finished task: (the task, its result, how many workers may share what follows:
#: 1 when the others have enough queued work); returns the tasks it leads to.
OnResult = Callable[[Task, Any, int], Sequence[Task]]


class Executor(ABC):
    """Runs tasks on workers. Used as a context manager: its workers (or its cluster) are
    reachable inside, and `workers` says how many there are."""

    workers: int = 1

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        return None

    @abstractmethod
    def run(self, tasks: Iterator[Task], on_result: OnResult) -> None:
        """Run every task (pulled from `tasks` only when there is room: bounded in-flight work)
        and the tasks their results lead to; `on_result` hears each result once. A worker that
        dies fails only the documents it was running (`tasks.crashed`). A stop request raises
        KeyboardInterrupt from here, with no worker left running."""
