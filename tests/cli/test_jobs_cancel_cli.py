"""`ingestflow jobs cancel` prints the service's cancel answer in one line."""

from __future__ import annotations

import io
from pathlib import Path

from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.service import Service, Upload
from tests.server.conftest import local_workflow


def test_cancelling_a_job_not_started_says_so(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    with Service(workspace) as service:
        workflow = service.workflows.create(local_workflow("to cancel"))
        job_id = service.runs.submit(workflow.id, [Upload("note.txt", io.BytesIO(b"A note."))])[
            "id"
        ]
    answer = CliRunner().invoke(app, ["jobs", "cancel", job_id[:8], "--workspace", str(workspace)])
    assert answer.exit_code == 0, answer.output
    assert answer.output == f"{job_id}: the job was stopped before it started\n"
    with Service(workspace) as service:
        assert service.jobs.information(job_id).status == "STOPPED"
