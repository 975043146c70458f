"""A cancel that could not signal the run's process (it only records STOPPED in the job's row)
still stops the run at its next check point, and a run that ends before it hears keeps the
job STOPPED rather than writing COMPLETED over the cancel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ingestflow
from ingestflow.runner import stopping
from ingestflow.service.progress import DocumentWritten, Event, JobStarted
from ingestflow.store import open_workspace

WORKFLOW = {
    "name": "notes",
    "workflow_type": "custom",
    "workflow_nodes": [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {"strategy": "fast"},
        },
        {"name": "Chunker", "type": "chunk", "subtype": "chunk_by_title", "settings": {}},
    ],
}


def _notes(folder: Path, count: int) -> Path:
    folder.mkdir()
    for i in range(count):
        (folder / f"note-{i:02d}.txt").write_text(f"Note {i}.\n\nIt has two paragraphs.\n")
    return folder


class CancelOnFirstWrite:
    """A listener that records STOPPED in the job's row (as `jobs cancel` does when the run's
    process cannot be signalled) once the first document is written."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.heard: list[Event] = []
        self.job_id = ""

    def __call__(self, event: Event) -> None:
        self.heard.append(event)
        if isinstance(event, JobStarted):
            self.job_id = event.job_id
        if isinstance(event, DocumentWritten) and len(self.written()) == 1:
            with open_workspace(self.workspace) as ws:
                ws.update_job(
                    self.job_id,
                    status="STOPPED",
                    processing_status="STOPPED",
                    message="cancelled before it finished",
                )

    def written(self) -> list[DocumentWritten]:
        return [e for e in self.heard if isinstance(e, DocumentWritten)]


def _run(tmp_path: Path, count: int) -> tuple[dict[str, Any], CancelOnFirstWrite]:
    """A one-worker run over `count` notes whose first written document is followed by a
    recorded cancel; the job record and the listener."""
    listen = CancelOnFirstWrite(tmp_path / "ws")
    result = ingestflow.run(
        WORKFLOW,
        [_notes(tmp_path / "in", count)],
        workspace=tmp_path / "ws",
        output=tmp_path / "out",
        workers=1,
        progress=listen,
    )
    return result.job, listen


def test_a_recorded_cancel_stops_the_run_at_its_next_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stopping, "POLL_S", 0.0)  # ask the row at every check point
    job, listen = _run(tmp_path, 12)
    assert job["status"] == "STOPPED", job["message"]
    written = listen.written()
    assert 1 <= len(written) < 12  # stopped between documents, the finished ones kept
    assert job["progress"]["left"] > 0
    assert len(list((tmp_path / "out").glob("*.json"))) == len(written)


def test_a_run_that_ends_before_it_hears_of_a_cancel_stays_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stopping, "POLL_S", 3600.0)  # the row is asked once, at the start
    job, listen = _run(tmp_path, 3)
    assert len(listen.written()) == 3  # it did not hear
    assert job["status"] == "STOPPED"
    assert job["message"].startswith("cancelled before it finished; the run had ended")
