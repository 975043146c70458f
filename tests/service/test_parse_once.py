"""A workflow is checked once per run: the front end's check (the CLI's, the Python API's) is what
the plan is built from, not the body checked again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import ingestflow
from ingestflow.cli.app import app
from ingestflow.spec import validate
from tests.runner.test_cancel_mark import WORKFLOW  # a Fast partitioner and a chunker


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the workflows checked against the rules, one entry a check."""
    seen: list[str] = []
    first, *rest = validate.RULES

    def counted(workflow: Any, nodes: Any, ctx: Any) -> Any:
        seen.append(workflow.name)
        return first(workflow, nodes, ctx)

    monkeypatch.setattr(validate, "RULES", (counted, *rest))
    return seen


def _notes(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "note.txt").write_text("A note.\n\nWith two paragraphs.\n")
    return folder


def test_a_cli_run_checks_its_workflow_once(tmp_path: Path, checks: list[str]) -> None:
    (tmp_path / "wf.json").write_text(json.dumps(WORKFLOW))
    args = ["run", str(tmp_path / "wf.json"), "-i", str(_notes(tmp_path))]
    args += ["-o", str(tmp_path / "out"), "--workspace", str(tmp_path / "ws"), "-w", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert checks == ["notes"]


def test_a_python_api_run_checks_its_workflow_once(tmp_path: Path, checks: list[str]) -> None:
    wf = ingestflow.load_workflow(WORKFLOW)
    result = ingestflow.run(wf, [_notes(tmp_path)], workspace=tmp_path / "ws", workers=1)
    assert result.job["status"] == "COMPLETED"
    assert checks == ["notes"]


def test_a_template_workflow_is_checked_as_itself_then_as_its_nodes(checks: list[str]) -> None:
    """Its own fields, then the nodes its template expands to: once each; the plan is built
    from that."""
    from ingestflow.runner.plan import plan_from_checked

    body = {
        "name": "from a template",
        "workflow_type": "template",
        "template_id": "fast_partition",
        "source_id": "wiki",
        "destination_id": "milvus",
    }
    wf = ingestflow.load_workflow(body)
    assert wf.checked is not None
    plan = plan_from_checked(wf.checked)
    assert [n.type for n in plan.nodes] == ["partition"]
    assert checks == ["from a template", "from a template"]
