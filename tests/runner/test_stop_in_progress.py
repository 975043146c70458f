"""Ctrl-C says "stopping after the documents in progress", and does it: a long PDF whose page
ranges are being read on two workers is finished and written whole; no new document starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.runner.test_crash import EXE, _jobs, _wait_gone
from tests.runner.test_split import long_pdf, workflow

#: Loaded by the run's Python processes (its folder first on PYTHONPATH): each page range takes
#: at least FLOOR seconds and leaves a file saying it started, so the test can stop the run
#: while the long PDF is surely half-read.
_SLOW_RANGES = """
import pathlib, time
from ingestflow.stages.partition import UnstructuredPartitionStage

_process_part = UnstructuredPartitionStage.process_part


def process_part(self, doc, pages):
    pathlib.Path({marks!r}, f"range-{{pages[0]}}").touch()
    time.sleep({floor})
    return _process_part(self, doc, pages)


UnstructuredPartitionStage.process_part = process_part
"""
FLOOR = 2


@pytest.mark.slow
@pytest.mark.parametrize("notes", [6, 3], ids=["later-batches", "one-batch"])
def test_ctrl_c_finishes_the_long_pdf_in_progress_and_starts_nothing_new(
    tmp_path: Path, notes: int
) -> None:
    """With 3 notes the PDF and the notes are one batch, all handed out before the stop: the
    job still ends STOPPED (it used to end COMPLETED when the stop came after the last batch)."""
    hooks, marks = tmp_path / "hooks", tmp_path / "marks"
    hooks.mkdir()
    marks.mkdir()
    (hooks / "sitecustomize.py").write_text(_SLOW_RANGES.format(marks=str(marks), floor=FLOOR))
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a-log.pdf").write_bytes(long_pdf(120))  # five ranges on two workers
    for n in range(notes):  # listed after it
        (folder / f"z-note-{n}.txt").write_text(f"Note {n}.\n")
    body = workflow()
    body["workflow_nodes"] = body["workflow_nodes"][:1]  # the partitioner's elements, as read
    (tmp_path / "wf.json").write_text(json.dumps(body))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")])),
    }
    args = ["run", str(tmp_path / "wf.json"), "-i", str(folder), "-o", str(tmp_path / "out")]
    args += ["--workspace", str(tmp_path / "ws"), "-w", "2", "--json"]
    process = subprocess.Popen(
        [*EXE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # as a terminal starts it: Ctrl-C goes to the whole group
    )
    deadline = time.monotonic() + 180
    while not list(marks.iterdir()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the long PDF's ranges never started"
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 130, err
    assert "stopping after the documents in progress" in err
    assert not _wait_gone(process.pid)
    (job,) = _jobs(tmp_path / "ws")
    assert job["status"] == "STOPPED", job
    status = {f["filename"]: f["status"] for f in json.loads(out)["files"]}
    assert status.get("a-log.pdf") == "SUCCESS", status
    elements = json.loads((tmp_path / "out" / "a-log.pdf.json").read_text())
    pages = {e["metadata"]["page_number"] for e in elements}
    assert pages == set(range(1, 121))  # the whole document, every range joined
    assert len(list(marks.iterdir())) == 5
