"""The typed service boundary: a run request's problems name its fields, and each front end says
them in its own words (the Python API its arguments, the CLI its flags; the REST API in
tests/server/test_request_fields.py); the job-type rule of a stored workflow is the service's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ingestflow
from ingestflow.cli import app
from ingestflow.service import Service
from ingestflow.service.requests import (
    ExecutionOptions,
    RequestInvalid,
    RunRequest,
    job_type_of,
    relabel,
    request_problem,
)
from ingestflow.spec.problems import Problem

WORKFLOW = json.loads(Path("examples/partition-only.json").read_text(encoding="utf-8"))


def test_relabel_says_each_field_in_a_front_ends_words() -> None:
    exc = RequestInvalid(
        [
            Problem("start_at", "`start_at` needs `from_job`", hint="give `from_job`"),
            Problem("workflow_nodes[0].name", "`start_at` stays when the table lacks it"),
        ]
    )
    said = relabel(exc, {"start_at": "--start-at", "from_job": "--from-job"})
    assert [(p.path, p.message, p.hint) for p in said.problems] == [
        ("--start-at", "--start-at needs --from-job", "give --from-job"),
        ("workflow_nodes[0].name", "--start-at stays when the table lacks it", None),
    ]
    quoted = relabel(exc, {"start_at": "start"}, quote="`")
    assert quoted.problems[0].message == "`start` needs `from_job`"
    assert str(said).startswith("run request is invalid (2 problem(s))")


def test_the_service_names_request_fields(tmp_path: Path) -> None:
    with Service(tmp_path / "ws") as service:
        with pytest.raises(RequestInvalid, match=r"inputs: this workflow reads local files"):
            service.runs.prepare(RunRequest(WORKFLOW))
        with pytest.raises(RequestInvalid, match=r"execution\.executor: unknown executor"):
            service.runs.prepare(
                RunRequest(WORKFLOW, inputs=(tmp_path,), execution=ExecutionOptions(executor="x"))
            )
        with pytest.raises(RequestInvalid, match=r"on_oversize: each field maps to what to do"):
            service.runs.prepare(
                RunRequest(WORKFLOW, inputs=(tmp_path,), on_oversize={"text": "chop"})  # type: ignore[dict-item]
            )
        with pytest.raises(
            RequestInvalid, match=r"on_oversize: `on_oversize` applies to a vectordb destination"
        ):
            service.runs.prepare(
                RunRequest(WORKFLOW, inputs=(tmp_path,), on_oversize={"t": "drop"})
            )
        with pytest.raises(RequestInvalid, match=r"start_at: `start_at` needs `from_job`"):
            service.runs.prepare(RunRequest(WORKFLOW, inputs=(tmp_path,), start_at="Partitioner"))


def test_the_python_api_names_its_arguments(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with pytest.raises(ingestflow.WorkflowInvalid, match=r"- executor: unknown executor"):
        ingestflow.run(WORKFLOW, [tmp_path], workspace=ws, executor="dask")
    with pytest.raises(ingestflow.WorkflowInvalid, match=r"- inputs: this workflow reads local"):
        ingestflow.run(WORKFLOW, [], workspace=ws)
    with pytest.raises(ingestflow.WorkflowInvalid, match=r"`start_at` needs `from_job`"):
        ingestflow.run(WORKFLOW, [tmp_path], workspace=ws, start_at="Partitioner")


def test_the_cli_names_its_flags_and_parses_on_oversize(tmp_path: Path) -> None:
    def run(*extra: str) -> str:
        args = ["run", "examples/partition-only.json", "--workspace", str(tmp_path / "ws")]
        result = CliRunner().invoke(app, [*args, *extra])
        assert result.exit_code == 2, result.output
        return result.output

    said = run("-i", str(tmp_path), "--on-oversize", "text")
    assert "✗ --on-oversize\n" in said and "expected FIELD=fail|drop|truncate" in said
    said = run("-i", str(tmp_path), "--on-oversize", "text=drop")
    assert "--on-oversize applies to a vectordb destination" in said
    said = run("-i", str(tmp_path), "--executor", "dask")
    assert "✗ --executor\n" in said and '"dask"' in said
    said = run()
    assert "✗ --input\n" in said and "hint: name the files or folders to read in --input" in said


def test_the_job_type_of_a_stored_workflow() -> None:
    custom = {"workflow_type": "custom"}
    assert job_type_of({"kind": "persistent", "body": custom}) == "persistent"
    assert job_type_of({"kind": "persistent", "body": {"workflow_type": "template"}}) == "template"
    assert job_type_of({"kind": "on_demand", "body": custom}) == "ephemeral"


def test_a_request_problem_is_a_workflow_invalid_of_the_run_request() -> None:
    exc = request_problem("output", "why", found="x")
    assert isinstance(exc, ingestflow.WorkflowInvalid) and exc.exit_code == 2
    with pytest.raises(
        RequestInvalid, match=r'(?s)run request is invalid .*output: why; found "x"'
    ):
        raise exc


def test_a_kept_job_reads_its_oversize_policies_in_either_form() -> None:
    from ingestflow.service.resume import kept_policies

    # jobs run before requests were typed kept the CLI's FIELD=POLICY items
    assert kept_policies(["text=drop", "image_base64=truncate"]) == {
        "text": "drop",
        "image_base64": "truncate",
    }
    assert kept_policies({"text": "drop"}) == {"text": "drop"}
    assert kept_policies(None) == {}
