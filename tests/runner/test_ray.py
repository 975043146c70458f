"""`ingestflow run --executor ray`: the same elements and job counts as the local executor, a
document that kills its actor failing alone, no Ray process left after a run on a local cluster
of its own, and a clear message without Ray.

The tests share one Ray cluster for the session (`ray_cluster`), which the runs reach with
`--ray-address`; one test starts the run's own local cluster, as `--executor ray` alone does."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.runner.executors import ray as ray_executor
from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow

runner = CliRunner()
WORKFLOW = FIXTURES / "workflows" / "valid" / "02-fast-by-title-embed.json"
CORPUS_DOCS = ("pdf/multi-column-2p.pdf", "example-10k-1p.html", "fake-text.txt")
MARKER = b"INGESTFLOW-TEST-KILL-THE-WORKER"


def run(
    tmp: Path, name: str, inputs: Path | list[Path], *extra: str, workflow: Path = WORKFLOW
) -> tuple[int, dict[str, Any]]:
    """`ingestflow run` in this process (so that a test can patch what the run imports)."""
    given = [a for p in (inputs if isinstance(inputs, list) else [inputs]) for a in ("-i", str(p))]
    args = [
        "run",
        str(workflow),
        *given,
        "--output",
        str(tmp / name),
        "--workspace",
        str(tmp / f"ws-{name}"),
        "--workers",
        "2",
        "--json",
        *extra,
    ]
    result = runner.invoke(app, args)
    assert result.stdout.lstrip().startswith("{"), (result.output, repr(result.exception))
    return result.exit_code, json.loads(result.stdout)


def canonical(elements: list[dict[str, Any]], ids: dict[str, str] | None = None) -> list[Any]:
    """Elements with their random ids renumbered by first appearance (element_id, parent_id,
    table_id, and the ids of the original elements inside a chunk)."""
    ids = {} if ids is None else ids
    out = []
    for element in json.loads(json.dumps(elements)):
        element["element_id"] = ids.setdefault(element["element_id"], f"id{len(ids)}")
        metadata = element.get("metadata", {})
        for key in ("parent_id", "table_id"):
            if metadata.get(key):
                metadata[key] = ids.setdefault(metadata[key], f"id{len(ids)}")
        if "orig_elements" in metadata:
            inner = json.loads(zlib.decompress(base64.b64decode(metadata["orig_elements"])))
            metadata["orig_elements"] = canonical(inner, ids)
        out.append(element)
    return out


def outputs(folder: Path) -> dict[str, list[Any]]:
    return {
        str(path.relative_to(folder)): canonical(json.loads(path.read_text()))
        for path in sorted(folder.rglob("*.json"))
    }


def counts(record: dict[str, Any]) -> dict[str, Any]:
    """What two runs of the same documents must agree on (not times, ids or output folders)."""
    keep = ("success", "failure", "elements_in", "elements_out", "ready", "in_progress", "reused")
    return {
        "status": record["status"],
        "processing_status": record["processing_status"],
        "files": sorted(
            (f["filename"], f["status"], f["error"], f["elements"], tuple(f["warnings"]))
            for f in record["files"]
        ),
        "nodes": [{k: n[k] for k in keep} for n in record["node_stats"]],
    }


#: The process group of the session's Ray cluster (see `session_ray_cluster`), once started.
SESSION_GROUP: list[int] = []


def ray_processes() -> set[int]:
    """Ray's own processes on this machine (GCS, raylet, agents, workers), but for those of the
    session's cluster."""
    found = set()
    for process in psutil.process_iter(["pid", "name", "cmdline"]):
        with contextlib.suppress(OSError):
            if os.getpgid(process.info["pid"]) in SESSION_GROUP:
                continue
        cmdline = " ".join(process.info["cmdline"] or [])
        if (
            process.info["name"] in ("raylet", "gcs_server")
            or cmdline.startswith("ray::")
            or "site-packages/ray/" in cmdline
        ):
            found.add(process.info["pid"])
    return found


@pytest.fixture
def no_ray_left() -> Iterator[None]:
    """The test's runs leave no Ray process behind."""
    before = ray_processes()
    yield
    left = ray_processes() - before
    assert not left, [" ".join(psutil.Process(pid).cmdline())[:120] for pid in left]


@pytest.fixture
def ray_cluster(session_ray_cluster: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The session's Ray cluster, for this test's runs (which must not send a token to it)."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    return session_ray_cluster


@pytest.fixture(scope="session")
def session_ray_cluster() -> Iterator[str]:
    """One Ray cluster for the whole session (`ray start --head`), its address. Its files lie in
    a temporary folder of its own, so that no other `ray.init()` on this machine finds it; its
    processes, in a process group of their own, all end with the session."""
    pytest.importorskip("ray")
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths
    head = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "ray"),
            *("start", "--head", "--block", "--port=0", "--num-cpus=2"),
            *("--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"},
    )
    SESSION_GROUP.append(head.pid)
    try:
        address = temp / "ray_current_cluster"
        deadline = time.monotonic() + 300  # a deadline only: a loaded machine starts it slowly
        while not (address.is_file() and address.read_text().strip()):
            assert head.poll() is None, head.communicate()[1]
            assert time.monotonic() < deadline, "the session's Ray cluster did not start"
            time.sleep(0.2)
        yield address.read_text().strip()
    finally:
        cluster = [p for p in psutil.process_iter(["pid", "cmdline"]) if _ours(p, head.pid, temp)]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGTERM)
        head.wait(timeout=120)
        _, alive = psutil.wait_procs(cluster, timeout=30)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        shutil.rmtree(temp, ignore_errors=True)
        SESSION_GROUP.remove(head.pid)


def _ours(process: psutil.Process, group: int, temp: Path) -> bool:
    """Whether `process` belongs to the session's cluster: in its process group, or naming its
    temporary folder."""
    with contextlib.suppress(OSError):
        if os.getpgid(process.info["pid"]) == group:
            return True
    return str(temp) in " ".join(process.info["cmdline"] or [])


def same_as_local(
    tmp_path: Path, inputs: Path | list[Path], address: str, workflow: Path = WORKFLOW
) -> None:
    code, local = run(tmp_path, "local", inputs, workflow=workflow)
    ray_code, on_ray = run(
        tmp_path, "ray", inputs, "--executor", "ray", "--ray-address", address, workflow=workflow
    )
    assert (ray_code, counts(on_ray)) == (code, counts(local))
    expected = outputs(tmp_path / "local")
    assert expected
    assert outputs(tmp_path / "ray") == expected


def test_ray_gives_the_local_executors_elements(tmp_path: Path, ray_cluster: str) -> None:
    # the library leaves out some types' file time (HTML, CSV) for a file in the temporary
    # folder: documents from there come out the same on Ray too. One run pair reads both the
    # fixture documents (written as NAME.json) and a copy in the temporary folder (docs/NAME.json)
    copied = Path(tempfile.mkdtemp(dir=tempfile.gettempdir()))
    try:
        shutil.copytree(FIXTURES / "docs", copied / "docs")
        same_as_local(tmp_path, [FIXTURES / "docs", copied], ray_cluster)
        names = sorted(p.name for p in (FIXTURES / "docs").iterdir())
        ray = tmp_path / "ray"
        written = sorted(str(p.relative_to(ray)) for p in ray.rglob("*.json"))
        assert written == sorted([f"{n}.json" for n in names] + [f"docs/{n}.json" for n in names])
    finally:
        shutil.rmtree(copied)


def test_a_long_document_is_split_into_page_ranges_on_ray_as_locally(
    tmp_path: Path, ray_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestflow.runner import tasks
    from tests.runner.test_split import long_pdf
    from tests.runner.test_split import workflow as long_workflow

    planned: list[tasks.Task] = []
    plan_tasks = tasks.Planner.tasks

    def recording(self: tasks.Planner, batch: tasks.Batch) -> list[tasks.Task]:
        out = plan_tasks(self, batch)
        planned.extend(out)
        return out

    monkeypatch.setattr(tasks.Planner, "tasks", recording)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "log.pdf").write_bytes(long_pdf())
    shutil.copy2(FIXTURES / "docs" / "notes.txt", folder / "notes.txt")
    workflow = tmp_path / "long.json"  # no embedder: elements compared byte for byte
    workflow.write_text(json.dumps(long_workflow()))
    same_as_local(tmp_path, folder, ray_cluster, workflow)
    ranges = [task for task in planned if isinstance(task, tasks.PageRange)]
    assert len({id(task.split) for task in ranges}) == 2  # split locally, and on Ray
    assert len(ranges) > 2 and all(task.split.doc.filename == "log.pdf" for task in ranges)
    parts = [part for task in ranges for part in task.split.parts]
    assert all(part is not None and part.error is None for part in parts)  # each range ran


@pytest.mark.corpus
def test_ray_on_corpus_documents_with_a_shared_file_system(
    tmp_path: Path, corpus: Path, ray_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ray_executor.SHARED_FS_ENV, "1")  # paths, not bytes
    folder = tmp_path / "in"
    for name in CORPUS_DOCS:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(corpus / "docs" / name, folder / name)
    same_as_local(tmp_path, folder, ray_cluster)


def killing_hook(marker: bytes) -> Callable[[], None]:
    """A setup hook for every Ray worker process: the partitioner ends its process (as a
    crashing native library would) on a document that holds `marker`. A closure, so that Ray
    ships it by value."""

    def hook() -> None:
        import os

        from ingestflow.stages.partition import UnstructuredPartitionStage

        process = UnstructuredPartitionStage.process

        def killing(self: Any, doc: Any) -> Any:
            if marker in doc.read_bytes():
                os._exit(17)
            return process(self, doc)

        UnstructuredPartitionStage.process = killing  # type: ignore[method-assign]

    return hook


def test_a_document_that_kills_its_actor_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_cluster: str
) -> None:
    import ray

    init = ray.init

    def init_with_hook(*args: Any, **kwargs: Any) -> Any:
        kwargs["runtime_env"] = {"worker_process_setup_hook": killing_hook(MARKER)}
        return init(*args, **kwargs)

    monkeypatch.setattr(ray, "init", init_with_hook)
    folder = tmp_path / "in"
    shutil.copytree(FIXTURES / "docs", folder)
    (folder / "boom.txt").write_bytes(b"A title\n\nThis line " + MARKER + b" ends the worker.\n")
    code, record = run(tmp_path, "ray", folder, "--executor", "ray", "--ray-address", ray_cluster)
    assert code == 1
    failed = {f["filename"]: f["error"] for f in record["files"] if f["status"] == "FAILED"}
    assert failed == {"boom.txt": ray_executor.CRASHED}
    written = sorted(p.name for p in (tmp_path / "ray").glob("*.json"))
    assert written == sorted(f"{p.name}.json" for p in (FIXTURES / "docs").iterdir())
    partitioner = record["node_stats"][0]
    assert (partitioner["success"], partitioner["failure"]) == (6, 1)
    assert not list(ray_executor.spool_root().glob("*/*/boom.txt"))  # no spool file left


def test_a_run_on_a_local_cluster_of_its_own_leaves_no_ray_process(
    tmp_path: Path, no_ray_left: None
) -> None:
    pytest.importorskip("ray")
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("notes.txt", "guide.md"):
        shutil.copy2(FIXTURES / "docs" / name, folder / name)
    code, local = run(tmp_path, "local", folder)
    ray_code, on_ray = run(tmp_path, "ray", folder, "--executor", "ray")  # starts its own
    assert (ray_code, counts(on_ray)) == (code, counts(local))
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")


def test_without_ray_the_message_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    result = runner.invoke(
        app,
        [
            "run",
            str(WORKFLOW),
            "--input",
            str(FIXTURES / "docs" / "notes.txt"),
            "--output",
            str(tmp_path / "out"),
            "--workspace",
            str(tmp_path / "ws"),
            "--executor",
            "ray",
        ],
    )
    assert result.exit_code == 3, result.output
    assert ray_executor.NEEDS_RAY in " ".join(result.output.split())
    assert not list((tmp_path / "out").glob("*.json"))
