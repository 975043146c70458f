"""Service records on the wire: a field a record leaves out stays out, an explicit null stays in,
and the CLI prints a record as the API sends it."""

from __future__ import annotations

import json

import pytest

from ingestflow.cli.output import echo_json
from ingestflow.service.jobs import information
from ingestflow.service.records import JobDetails, WorkflowInformation, wire

FULL_RECORD = {
    "id": "j1",
    "workflow_id": "w1",
    "workflow_name": "local fast",
    "status": "SCHEDULED",
    "created_at": "2026-01-02T03:04:05+00:00",
    "job_type": "ephemeral",
    "input_file_ids": [],
    "output_node_files": [],
    "processing_status": "SCHEDULED",  # a part of the full record JobInformation leaves out
}


def test_a_job_not_run_yet_has_no_runtime_key() -> None:
    assert "runtime" not in information(FULL_RECORD).wire()
    assert information({**FULL_RECORD, "runtime": "PT1.000S"}).wire()["runtime"] == "PT1.000S"
    assert list(information(FULL_RECORD).wire()) == [
        "id",
        "workflow_id",
        "workflow_name",
        "status",
        "created_at",
        "input_file_ids",
        "output_node_files",
        "job_type",
    ]


def test_an_explicit_null_stays_on_the_wire() -> None:
    details = JobDetails.model_validate(
        {"id": "j1", "processing_status": "SCHEDULED", "node_stats": [], "message": None}
    )
    assert details.wire() == {
        "id": "j1",
        "processing_status": "SCHEDULED",
        "node_stats": [],
        "message": None,
    }


def test_a_record_refuses_a_field_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="surprise"):
        JobDetails.model_validate(
            {"id": "j1", "processing_status": "SCHEDULED", "node_stats": [], "surprise": 1}
        )


def test_the_cli_prints_records_as_the_api_sends_them(capsys: pytest.CaptureFixture[str]) -> None:
    record = WorkflowInformation.model_validate(
        {
            "id": "w1",
            "name": "n",
            "status": "active",
            "workflow_type": "custom",
            "sources": [],
            "destinations": [],
            "workflow_nodes": [],
            "schedule": None,
            "reprocess_all": False,
            "created_at": "2026-01-02T03:04:05+00:00",
        }
    )
    echo_json([record])
    assert json.loads(capsys.readouterr().out) == wire([record]) == [record.wire()]
    assert "updated_at" not in record.wire() and record.wire()["schedule"] is None
