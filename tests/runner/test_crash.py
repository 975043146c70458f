"""Crash safety, bad inputs, concurrent runs and clean exits, with real processes and signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.connectors.local import LocalSource
from ingestflow.files import FolderLock

runner = CliRunner()
EXE = [sys.executable, "-c", "from ingestflow.cli import main; main()"]
FAST = {
    "name": "fast",
    "workflow_type": "custom",
    "reprocess_all": False,
    "workflow_nodes": [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {"strategy": "fast"},
        }
    ],
}


def _workflow(tmp: Path, **changes: Any) -> Path:
    path = tmp / "wf.json"
    path.write_text(json.dumps({**FAST, **changes}))
    return path


def _run(tmp: Path, folder: Path, out: Path, *args: str) -> Any:
    return runner.invoke(
        app,
        [
            *("run", str(_workflow(tmp)), "-i", str(folder), "-o", str(out), "-w", "1"),
            *("--workspace", str(tmp / "ws"), "--json", *args),
        ],
    )


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of a session."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


def _wait_gone(sid: int, seconds: float = 15) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _session(sid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _jobs(ws: Path) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["jobs", "list", "--json", "--workspace", str(ws)])
    return json.loads(result.stdout)


def test_bad_entries_are_skipped_alone_and_said(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.txt").write_text("A good document.\n\nWith two paragraphs.")
    (folder / "loop-a").symlink_to("loop-b")
    (folder / "loop-b").symlink_to("loop-a")
    (folder / "dangling").symlink_to("nowhere")
    os.mkfifo(folder / "pipe")  # reading it would wait for a writer for ever
    (folder / os.fsdecode(b"bad-\xff-name.txt")).write_text("a name that is not UTF-8")
    result = _run(tmp_path, folder, tmp_path / "out")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert [f["filename"] for f in record["files"]] == ["good.txt"]
    message = record["message"]
    assert "loop-a: skipped, a symlink loop" in message
    assert "dangling: skipped, a symlink that leads nowhere" in message
    assert "pipe: skipped, not a regular file" in message
    assert "bad-\\xff-name.txt: skipped, its name is not valid UTF-8" in message


def test_an_unreadable_folder_is_said_in_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "in"
    (folder / "locked").mkdir(parents=True)
    (folder / "a.txt").write_text("text")
    real_walk = os.walk

    def walk(top: Any, onerror: Any = None, **kw: Any) -> Any:
        # root may read any folder; what the OS says to anyone else is simulated here
        for dirpath, dirnames, filenames in real_walk(top, onerror=onerror, **kw):
            if Path(dirpath).name == "locked":
                error = PermissionError(13, "Permission denied", dirpath)
                onerror(error)
                continue
            yield dirpath, dirnames, filenames

    monkeypatch.setattr("ingestflow.connectors.local_walk.os.walk", walk)
    source = LocalSource([folder])
    assert [d.filename for d in source.documents()] == ["a.txt"]
    assert source.skipped == [f"{folder / 'locked'}: skipped, permission denied"]


def test_the_output_folder_is_never_read_back_as_input(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Hello there.")
    out = folder / "out"
    for _ in range(2):
        result = _run(tmp_path, folder, out, "--no-cache")
        assert result.exit_code == 0, result.output
        assert [f["filename"] for f in json.loads(result.stdout)["files"]] == ["a.txt"]
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json")) == ["a.txt.json"]


def test_one_run_at_a_time_per_output_folder_and_leftovers_cleaned(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Hello there.")
    out = tmp_path / "out"
    out.mkdir()
    stale = out / ".a.txt.json.k1ll3d.tmp"
    stale.write_text("[{half")
    lock = FolderLock(out)
    assert lock.acquire()
    try:
        busy = _run(tmp_path, folder, out)
        assert busy.exit_code == 3
        assert "being written by another run" in busy.output and str(os.getpid()) in busy.output
    finally:
        lock.release()
    old = os.umask(0o022)
    try:
        done = _run(tmp_path, folder, out)
    finally:
        os.umask(old)
    assert done.exit_code == 0, done.output
    assert not stale.exists()
    assert (out / "a.txt.json").stat().st_mode & 0o777 == 0o644


def test_the_lock_file_goes_at_the_end_and_a_dead_runs_is_taken_over(tmp_path: Path) -> None:
    """No `.ingestflow.lock` is left in an output folder after a run; one a killed run left
    (its pid dead, no process holding it) is taken over, then removed (issue 37, 22)."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Hello there.")
    out = tmp_path / "out"
    lock = out / FolderLock.NAME
    first = _run(tmp_path, folder, out)
    assert first.exit_code == 0, first.output
    assert not lock.exists()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    ).stdout.strip()
    lock.write_text(dead)  # what a killed run leaves: its pid, and no process holding it
    again = _run(tmp_path, folder, out, "--no-cache")
    assert again.exit_code == 0, again.output
    assert not lock.exists()
    assert sorted(p.name for p in out.iterdir()) == ["a.txt.json"]


def test_unchanged_means_unchanged_at_the_destination_too(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Hello there.")
    (folder / "b.txt").write_text("General Kenobi.")
    out = tmp_path / "out"
    first = json.loads(_run(tmp_path, folder, out).stdout)
    assert [f["status"] for f in first["files"]] == ["SUCCESS", "SUCCESS"]
    again = json.loads(_run(tmp_path, folder, out).stdout)
    assert [f["status"] for f in again["files"]] == ["SKIPPED", "SKIPPED"]
    (out / "a.txt.json").unlink()
    redone = json.loads(_run(tmp_path, folder, out).stdout)
    assert {f["filename"]: f["status"] for f in redone["files"]} == {
        "a.txt": "SUCCESS",
        "b.txt": "SKIPPED",
    }
    assert (out / "a.txt.json").exists()


@pytest.mark.slow
def test_two_runs_on_one_workspace_at_once_both_complete(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(4):
        (folder / f"d{i}.txt").write_text(f"Document {i}.\n\nSome text for it.")
    wf = _workflow(tmp_path, reprocess_all=True)
    ws = str(tmp_path / "ws")
    runs = [
        subprocess.Popen(
            [
                *(*EXE, "run", str(wf), "-i", str(folder), "-o", str(tmp_path / f"out{i}")),
                *("--workspace", ws, "-w", "1", "--json"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    records = []
    for process in runs:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        records.append(json.loads(out))
    assert all(r["status"] == "COMPLETED" and len(r["files"]) == 4 for r in records)
    assert {j["id"] for j in _jobs(tmp_path / "ws")} == {r["id"] for r in records}


def _slow_inputs(tmp: Path, count: int = 6) -> Path:
    folder = tmp / "in"
    folder.mkdir()
    paragraph = "The harbour opened in early spring and the first ships arrived. " * 4
    for i in range(count):
        (folder / f"d{i}.txt").write_text("\n\n".join([paragraph] * 1500))
    return folder


def _start(tmp: Path, folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *(*EXE, "run", str(_workflow(tmp)), "-i", str(folder), "-o", str(tmp / "out")),
            *("--workspace", str(tmp / "ws"), "-w", "2", *args),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _wait_in_progress(tmp: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        jobs = _jobs(tmp / "ws") if (tmp / "ws" / "ingestflow.db").exists() else []
        if jobs and jobs[0]["status"] == "IN_PROGRESS" and len(_session(process.pid)) > 1:
            return
        time.sleep(0.3)
    raise AssertionError("the run never got going")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_sigterm_stops_like_ctrl_c_and_leaves_no_process(tmp_path: Path, sig: int) -> None:
    folder = _slow_inputs(tmp_path)
    process = _start(tmp_path, folder)
    _wait_in_progress(tmp_path, process)
    process.send_signal(sig)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert not _wait_gone(process.pid)
    (job,) = _jobs(tmp_path / "ws")
    assert job["status"] == "STOPPED"


@pytest.mark.slow
def test_kill_9_then_a_rerun_completes_with_nothing_lost_or_doubled(tmp_path: Path) -> None:
    folder = _slow_inputs(tmp_path)
    process = _start(tmp_path, folder)
    _wait_in_progress(tmp_path, process)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert not _wait_gone(process.pid), "workers outlived their parent"
    (killed,) = _jobs(tmp_path / "ws")
    assert killed["status"] == "FAILED" and "interrupted" in killed["message"]
    assert not list((tmp_path / "out").rglob("*.tmp"))
    rerun = _start(tmp_path, folder, "--json")
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    record = json.loads(out)
    written = {f["filename"] for f in record["files"] if f["status"] == "SUCCESS"}
    skipped = {f["filename"] for f in record["files"] if f["status"] == "SKIPPED"}
    assert written | skipped == {f"d{i}.txt" for i in range(6)} and not written & skipped
    assert sorted(p.name for p in (tmp_path / "out").glob("*.json")) == [
        f"d{i}.txt.json" for i in range(6)
    ]
    for path in (tmp_path / "out").glob("*.json"):
        json.loads(path.read_text())  # whole files only


@pytest.mark.slow
def test_a_document_over_the_timeout_fails_alone(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "small.txt").write_text("Small and quick.")
    paragraph = "A paragraph of a very long text that takes a while to partition. " * 3
    (folder / "huge.txt").write_text("\n\n".join([paragraph] * 40000))
    result = _run(tmp_path, folder, tmp_path / "out", "--doc-timeout", "1")
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    status = {f["filename"]: (f["status"], f["error"]) for f in record["files"]}
    assert status["small.txt"] == ("SUCCESS", None)
    assert status["huge.txt"][0] == "FAILED"
    assert "took longer than 1 s and was stopped (--doc-timeout)" in status["huge.txt"][1]


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["success", "failure", "invalid"])
def test_no_process_outlives_ingestflow(tmp_path: Path, ending: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Hello there.")
    if ending == "failure":
        (folder / "empty.pdf").write_bytes(b"")
    args = [*EXE, "run", str(_workflow(tmp_path)), "-i", str(folder), "-o", str(tmp_path / "o")]
    args += ["--workspace", str(tmp_path / "ws"), "-w", "2"]
    if ending == "invalid":  # refused after the workers could have started: none may stay
        args += ["--on-oversize", "text=drop"]
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    _, err = process.communicate(timeout=180)
    assert process.returncode == {"success": 0, "failure": 1, "invalid": 2}[ending], err
    assert "Traceback" not in err
    assert not _wait_gone(process.pid)


#: Loaded by every Python process started with its folder on PYTHONPATH (the run's workers): the
#: partitioner ends its process, or fails to allocate, on a document holding a marker.
_DYING_WORKER = """
import os, signal
from ingestflow.stages.partition import UnstructuredPartitionStage

_process = UnstructuredPartitionStage.process


def process(self, doc):
    data = doc.read_bytes()
    if b"KILL-ME" in data:  # what the system's out-of-memory killer does
        os.kill(os.getpid(), signal.SIGKILL)
    if b"SEGV-ME" in data:
        os.kill(os.getpid(), signal.SIGSEGV)
    if b"ALLOC-ME" in data:  # a real allocation the machine cannot give
        bytearray(1 << 60)
    return _process(self, doc)


UnstructuredPartitionStage.process = process
"""


@pytest.mark.slow
def test_a_document_whose_worker_dies_fails_alone_saying_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_DYING_WORKER)
    path = os.environ.get("PYTHONPATH")  # kept: the workers import the ingestflow under test
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hooks), path])))
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(4):
        (folder / f"d{i}.txt").write_text(f"Document {i}.\n\nIt is read as usual.")
    (folder / "killed.txt").write_text("This one is KILL-ME.")
    (folder / "segv.txt").write_text("This one is SEGV-ME.")
    (folder / "alloc.txt").write_text("This one is ALLOC-ME.")
    result = runner.invoke(
        app,
        [
            *("run", str(_workflow(tmp_path)), "-i", str(folder), "-o", str(tmp_path / "out")),
            *("-w", "2", "--workspace", str(tmp_path / "ws"), "--json"),
        ],
    )
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    status = {f["filename"]: (f["status"], f["error"]) for f in record["files"]}
    assert {name for name, (state, _) in status.items() if state == "SUCCESS"} == {
        f"d{i}.txt" for i in range(4)
    }
    killed, segv, alloc = (status[n][1] for n in ("killed.txt", "segv.txt", "alloc.txt"))
    assert killed.startswith("the worker process crashed on this document (killed with SIGKILL")
    assert "runs out of memory" in killed
    assert segv == "the worker process crashed on this document (ended by signal SIGSEGV)"
    assert alloc.startswith("ran out of memory: the document needs more memory")
    assert sorted(p.name for p in (tmp_path / "out").glob("*.json")) == [
        f"d{i}.txt.json" for i in range(4)
    ]
