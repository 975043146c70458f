"""An output folder with a destination connector is an error, not silently ignored: the run
request rule is the service's, naming the request's fields, and the CLI says them as its flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.errors import WorkflowInvalid
from ingestflow.service import Service
from ingestflow.service.requests import RunRequest

WORKFLOW = json.loads(Path("examples/partition-only.json").read_text(encoding="utf-8"))


def test_output_with_destination_is_refused(tmp_path: Path) -> None:
    with (
        Service(tmp_path / "ws") as service,
        pytest.raises(
            WorkflowInvalid,
            match=r"output: this run writes to the destination connector named by `destination`",
        ) as caught,
    ):
        service.runs.prepare(
            RunRequest(
                WORKFLOW, inputs=(tmp_path,), output=tmp_path / "out", destination="milvus.json"
            )
        )
    assert "leave out `output` to write to the destination connector" in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_output_with_the_workflows_destination_id_is_refused(tmp_path: Path) -> None:
    body = {**WORKFLOW, "destination_id": "milvus lite"}
    with (
        Service(tmp_path / "ws") as service,
        pytest.raises(WorkflowInvalid, match=r"remove destination_id from the workflow"),
    ):
        service.runs.prepare(RunRequest(body, inputs=(tmp_path,), output=tmp_path / "out"))


def test_the_cli_exits_2_naming_both_options(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Hello.\n")
    result = CliRunner().invoke(
        app,
        [
            *("run", "examples/partition-only.json", "-i", str(docs), "-o", str(tmp_path / "out")),
            *("--destination", "examples/milvus-lite-connector.json"),
            *("--workspace", str(tmp_path / "ws")),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "✗ --output\n" in result.output  # the request's fields, said as the CLI's flags
    assert "named by --destination" in result.output and "leave out --output" in result.output
    assert "`" not in result.output
    assert not (tmp_path / "out").exists()
