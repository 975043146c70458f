"""The Ray executor reads what connectors declare (`Source.local_files`,
`Destination.one_writer_only`), never their names."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestflow.connectors.base import Destination, Source
from ingestflow.connectors.local import LocalSource
from ingestflow.connectors.vectordb_destination import VectorDBDestination
from ingestflow.runner.executor import RunOptions
from ingestflow.runner.executors.registry import Launch, RayOptions
from ingestflow.runner.plan import build_plan
from ingestflow.runner.stopping import Stopper
from tests.runner.test_split import workflow


class Files(Source):
    """A source of local files by another name."""

    name = "files"
    local_files = True


class Single(Destination):
    """A destination only one process may write, saying why."""

    name = "ledger"
    one_writer_only = "a ledger has one pen"


def notes(source: Source, destination: Destination) -> list[str]:
    pytest.importorskip("ray")
    from ingestflow.runner.executors.ray import RayExecutor

    launch = Launch(build_plan(workflow()), RunOptions(executor="ray"), Stopper(lambda: None))
    launch = Launch(launch.plan, launch.options, launch.stopper, source, destination)
    return RayExecutor(launch, RayOptions()).notes  # no cluster before `with`


def test_the_built_in_connectors_declare_their_capabilities(tmp_path: Path) -> None:
    assert LocalSource([tmp_path]).local_files and not Source.local_files
    assert VectorDBDestination.one_writer_only.startswith("Milvus Lite")
    assert Destination.one_writer_only == ""


def test_the_ray_executor_follows_the_declarations() -> None:
    assert notes(Files(), Single()) == [
        "the ledger destination takes one writer (a ledger has one pen): the run's own "
        "process wrote every document, the Ray actors processed them"
    ]
    plain = Source()
    assert notes(plain, Destination()) == [
        "the destination destination takes one writer: the run's own process wrote every "
        "document, the Ray actors processed them",
        "the source source was read by the run's own process (it cannot hand the actors "
        "references to read themselves with these settings)",
    ]
