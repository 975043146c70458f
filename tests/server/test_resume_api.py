"""POST /api/v1/jobs/{id}/resume over real HTTP: a job stopped from the CLI continues in place in
the server's job process (same id, the documents left); 409 for a finished job, 404 for none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runner.test_resume import NAMES, _local
from tests.server.conftest import API, Servers

pytestmark = pytest.mark.slow


def test_a_stopped_job_resumes_through_the_api(tmp_path: Path, serve: Servers) -> None:
    hooked, args = _local(tmp_path)
    stopped = hooked(*args, "--json", STOP_AFTER="1")
    assert stopped.returncode == 130, stopped.stderr
    first = json.loads(stopped.stdout)
    written = {f["filename"] for f in first["files"] if f["status"] == "SUCCESS"}
    out = tmp_path / "out"
    inodes = {name: (out / f"{name}.json").stat().st_ino for name in written}  # a rewrite: new
    server = serve("ws")  # the workspace of the stopped run
    http = server.client()
    answer = http.post(f"{API}/jobs/{first['id']}/resume")
    assert answer.status_code == 202, answer.text
    assert answer.json()["id"] == first["id"]
    assert answer.json()["status"] in ("SCHEDULED", "IN_PROGRESS", "COMPLETED")
    job = server.wait_job(first["id"], deadline_s=240)
    assert job["status"] == "COMPLETED", http.get(f"{API}/jobs/{first['id']}/details").text
    assert len(job["input_file_ids"]) == len(NAMES)
    details = http.get(f"{API}/jobs/{first['id']}/details").json()
    assert details["processing_status"] == "SUCCESS" and details["deleted"] == 0
    assert sorted(p.name for p in out.glob("*.json")) == [f"{n}.json" for n in NAMES]
    assert written and all((out / f"{n}.json").stat().st_ino == inodes[n] for n in written)
    again = http.post(f"{API}/jobs/{first['id']}/resume")
    assert again.status_code == 409, again.text
    assert "there is nothing to resume" in again.json()["detail"]
    missing = http.post(f"{API}/jobs/no-such-job/resume")
    assert missing.status_code == 404, missing.text
    for body in server.bodies():
        assert "Traceback" not in body and str(tmp_path / "ws") not in body
    paths = http.get("/openapi.json").json()["paths"]
    assert "post" in paths[f"{API}/jobs/{{job_id}}/resume"]
