"""A workspace is its owner's only: the folder 0700, its folders 0700 and files 0600 (uploads,
node outputs, the node cache, Milvus Lite files), whatever the umask; one made open by an
earlier version is tightened when it is opened (issue 37, 14)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.service.uploads import Upload, UploadLimits, store_uploads
from ingestflow.store.jobs import Workspace
from tests.cli.test_polish_cli import FAST

runner = CliRunner()


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o022)  # what most users have: files 0644, folders 0755
    try:
        yield
    finally:
        os.umask(old)


def _open_to_others(root: Path) -> list[str]:
    """Everything under `root` (itself included) that a group or other user may use."""
    paths = [root, *root.rglob("*")]
    return [
        f"{p.relative_to(root.parent)} {p.stat().st_mode & 0o777:o}"
        for p in paths
        if not p.is_symlink() and p.stat().st_mode & 0o077
    ]


@pytest.mark.usefixtures("open_umask")
def test_a_traced_run_and_uploads_leave_nothing_open_to_others(tmp_path: Path) -> None:
    docs = tmp_path / "in"
    docs.mkdir()
    (docs / "a.txt").write_text("A paragraph of text.")
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(FAST))
    ws = tmp_path / "ws"
    args = ["run", str(wf), "-i", str(docs), "-o", str(tmp_path / "o"), "-w", "1", "--trace"]
    ran = runner.invoke(app, [*args, "--workspace", str(ws)])
    assert ran.exit_code == 0, ran.output
    assert list(ws.glob("jobs/*/nodes/*/*.json")) and list(ws.glob("cache/nodes/*/*.json"))
    store_uploads(ws, "job-1", [Upload("b.txt", io.BytesIO(b"Uploaded."))], UploadLimits())
    assert (ws / "uploads" / "job-1" / "b.txt").is_file()
    assert _open_to_others(ws) == []
    # the run's own output folder, outside the workspace, still follows the umask
    assert (tmp_path / "o" / "a.txt.json").stat().st_mode & 0o777 == 0o644


@pytest.mark.usefixtures("open_umask")
def test_an_open_workspace_is_tightened_when_opened(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    Workspace(ws).close()
    (ws / "uploads" / "j").mkdir(parents=True)
    (ws / "uploads" / "j" / "a.txt").write_text("Uploaded by an earlier version.")
    (ws / "milvus.db").write_bytes(b"lite")
    for path in (ws, ws / "uploads", ws / "uploads" / "j"):
        path.chmod(0o755)
    (ws / "uploads" / "j" / "a.txt").chmod(0o644)
    (ws / "milvus.db").chmod(0o644)
    Workspace(ws).close()
    assert _open_to_others(ws) == []
    assert (ws / "uploads" / "j" / "a.txt").stat().st_mode & 0o777 == 0o600
    assert (ws / "uploads").stat().st_mode & 0o777 == 0o700


@pytest.mark.usefixtures("open_umask")
def test_an_output_folder_in_the_workspace_is_private_too(tmp_path: Path) -> None:
    """The Python API's default output (and a served job's) lies in the workspace."""
    import ingestflow

    docs = tmp_path / "in" / "sub"
    docs.mkdir(parents=True)
    (docs / "a.txt").write_text("A paragraph of text.")
    ws = tmp_path / "ws"
    result = ingestflow.run(FAST, [tmp_path / "in"], workspace=ws, workers=1, trace=False)
    assert result.ok, result.job["failed_files"]
    assert list(ws.glob("outputs/*/sub/a.txt.json"))
    assert _open_to_others(ws) == []


@pytest.mark.usefixtures("open_umask")
def test_a_served_jobs_folder_and_log_are_its_owners_only(tmp_path: Path) -> None:
    """The launcher makes `jobs/<job>/` and its `job.log` (they were 0755 and 0644 under a
    common umask); the job process it starts writes under an owner-only umask."""
    from ingestflow.service.launcher import Launcher

    ws = tmp_path / "ws"
    Workspace(ws).close()
    launcher = Launcher(ws)
    process = launcher._spawn("no-such-job")  # the job process finds no job and ends
    assert process.wait(timeout=120) != 0
    assert _open_to_others(ws) == []
    assert (ws / "jobs" / "no-such-job" / "job.log").stat().st_mode & 0o777 == 0o600
