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

import ingestflow
from ingestflow.cli import app
from ingestflow.runner.executors import ray as ray_executor
from ingestflow.service.progress import ExecutorStep
from tests.conftest import FIXTURES
from tests.runner.test_wiki_run import wiki  # noqa: F401  (the fake wiki, a fixture)

# slow; Ray runs on a loaded 2-core machine: a longer time limit than the suite's 300 s
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

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
    for process in psutil.process_iter(["pid", "ppid", "name", "cmdline"]):
        with contextlib.suppress(OSError):
            # the cluster's own processes, and its workers: Ray puts each worker in a process
            # group of its own, under the cluster's raylet (one started mid-test is not a leak)
            if {os.getpgid(process.info["pid"]), os.getpgid(process.info["ppid"])} & set(
                SESSION_GROUP
            ):
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
    reaper = _reaper(head.pid, temp)
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
        try:
            head.wait(timeout=3)
        except subprocess.TimeoutExpired:
            # after a session's runs, Ray's GCS takes ~30 s to act on SIGTERM (measured): the
            # cluster is the session's own, its files go with it, nothing needs its shutdown
            with contextlib.suppress(ProcessLookupError):
                os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=60)
        _, alive = psutil.wait_procs(cluster, timeout=5)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        shutil.rmtree(temp, ignore_errors=True)
        SESSION_GROUP.remove(head.pid)
        with contextlib.suppress(OSError):  # done: the reaper leaves without killing anything
            assert reaper.stdin is not None
            reaper.stdin.write(b"done\n")
            reaper.stdin.close()
        reaper.wait(timeout=30)


#: The reaper of the session's cluster (`_reaper`): argv owner pid, cluster group, temp folder.
REAPER = """
import os, select, shutil, signal, sys
import psutil
owner, group, temp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
said = b""
while os.getppid() == owner:  # the session's process is alive (else this one was adopted)
    if select.select([0], [], [], 0.5)[0]:
        chunk = os.read(0, 64)
        said += chunk
        if not chunk:  # the pipe closed: the session's process has ended
            break
if said.startswith(b"done"):
    sys.exit(0)
doomed = []
try:
    doomed += psutil.Process(group).children(recursive=True)
except psutil.Error:
    pass
for process in psutil.process_iter(["pid", "cmdline"]):
    try:
        if os.getpgid(process.pid) == group or temp in " ".join(process.info["cmdline"] or []):
            doomed.append(process)
    except (OSError, psutil.Error):
        continue
try:
    os.killpg(group, signal.SIGKILL)
except OSError:
    pass
for process in doomed:
    try:
        process.kill()
    except psutil.Error:
        pass
psutil.wait_procs(doomed, timeout=10)
shutil.rmtree(temp, ignore_errors=True)
"""


def _reaper(group: int, temp: Path) -> subprocess.Popen[bytes]:
    """A process that ends the session's cluster (its process group, the processes under its
    head or naming its folder) when the session's process ends without its teardown: killed
    (SIGKILL, a time limit's exit), or ended by what it starts. The teardown tells it "done"
    (docs/testing.md)."""
    return subprocess.Popen(
        [sys.executable, "-c", REAPER, str(os.getpid()), str(group), str(temp)],
        stdin=subprocess.PIPE,
        start_new_session=True,  # not in the group a Ctrl-C or a group kill reaches first
    )


def _ours(process: psutil.Process, group: int, temp: Path) -> bool:
    """Whether `process` belongs to the session's cluster: in its process group, or naming its
    temporary folder."""
    with contextlib.suppress(OSError):
        if os.getpgid(process.info["pid"]) == group:
            return True
    return str(temp) in " ".join(process.info["cmdline"] or [])


def same_as_local(
    tmp_path: Path,
    inputs: Path | list[Path],
    address: str,
    *extra: str,
    workflow: Path = WORKFLOW,
) -> None:
    code, local = run(tmp_path, "local", inputs, workflow=workflow)
    ray_code, on_ray = run(
        tmp_path,
        "ray",
        inputs,
        *("--executor", "ray", "--ray-address", address, *extra),
        workflow=workflow,
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
    tmp_path: Path, ray_cluster: str, monkeypatch: pytest.MonkeyPatch, driver_writes: list[str]
) -> None:
    """The same ranges and elements as locally; the actor that joins the ranges writes the
    document."""
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
    same_as_local(tmp_path, folder, ray_cluster, "--ray-shared-fs", workflow=workflow)
    assert sorted(driver_writes) == ["log.pdf", "notes.txt"]  # the local run's, none on Ray
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


# --- the actors write the destination -------------------------------------------------------


@pytest.fixture
def driver_writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The documents this process (the driver) writes to a destination from now on: the actors
    run the classes unpatched."""
    from ingestflow.connectors.local import LocalDestination
    from ingestflow.connectors.vectordb_destination import VectorDBDestination

    written: list[str] = []
    for cls in (LocalDestination, VectorDBDestination):
        original = cls.write

        def recording(self: Any, doc: Any, original: Any = original) -> list[str]:
            written.append(doc.filename)
            return original(self, doc)

        monkeypatch.setattr(cls, "write", recording)
    return written


def test_actors_write_local_files_on_a_shared_folder(
    tmp_path: Path, ray_cluster: str, driver_writes: list[str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("notes.txt", "guide.md", "page.html"):
        shutil.copy2(FIXTURES / "docs" / name, folder / name)
    code, local = run(tmp_path, "local", folder)
    driver_writes.clear()
    address = ("--executor", "ray", "--ray-address", ray_cluster)
    ray_code, on_ray = run(tmp_path, "ray", folder, *address, "--ray-shared-fs")
    assert (ray_code, counts(on_ray)) == (code, counts(local))
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")
    assert driver_writes == []  # every file came from an actor
    assert "wrote every document" not in (on_ray["message"] or "")
    # a folder not declared shared: the driver writes it, and the job says so
    ray_code, unshared = run(tmp_path, "unshared", folder, *address)
    assert (ray_code, counts(unshared)) == (code, counts(local))
    assert outputs(tmp_path / "unshared") == outputs(tmp_path / "local")
    assert sorted(driver_writes) == sorted(p.name for p in folder.iterdir())
    assert "the run's own process wrote every document" in unshared["message"]


def test_actors_run_this_checkout(ray_cluster: str) -> None:
    """The actors import the `ingestflow` this test runs (PYTHONPATH reaches them); an actor of
    a Fast plan opens its stages without torch (spaCy's thinc imports it when it can), as a
    local worker does."""
    import ray

    from ingestflow.runner.plan import build_plan

    plan = build_plan(json.loads(WORKFLOW.read_text()))
    ray.init(address=ray_cluster, log_to_driver=False)
    try:
        actor = ray.remote(ray_executor.StagesActor).options(num_cpus=1).remote(plan, 1)
        pid, package = ray.get(actor.where.remote(), timeout=300)
        held = ray.get(actor.warm.remote(), timeout=300)
        ray.kill(actor)
    finally:
        ray.shutdown()
    assert pid != os.getpid() and package == ingestflow.__file__
    assert held == {"torch": False, "onnxruntime": True}


def server_run(
    tmp: Path, name: str, inputs: Path, connector: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    """`ingestflow run` of the server tests' workflow (partition, chunk, embed) into a
    vectordb destination connector."""
    from tests.connectors.test_vectordb_server import WORKFLOW as SERVER_WORKFLOW

    workflow = tmp / "server-workflow.json"
    workflow.write_text(json.dumps({**SERVER_WORKFLOW, "reprocess_all": True}))
    args = ["run", str(workflow), "-i", str(inputs), "--destination", str(connector)]
    args += ["--workspace", str(tmp / f"ws-{name}"), "--workers", "2", "--json", *extra]
    result = runner.invoke(app, args)
    assert result.stdout.lstrip().startswith("{"), (result.output, repr(result.exception))
    return result.exit_code, json.loads(result.stdout)


def server_rows(server: Any, collection: str) -> list[tuple[str, str]]:
    """(record_id, text) of every row (`rows` fails on a duplicated primary key)."""
    from tests.connectors.test_vectordb_server import rows

    return sorted((row["record_id"], row["text"]) for row in rows(server, collection))


def killed_after_writing(flag: str) -> Callable[[], None]:
    """A setup hook for every Ray worker process: the first document written to a vectordb
    destination ends its process right after the write (as a machine lost before the outcome
    reached the driver); `flag`, a file, says it happened."""

    def hook() -> None:
        import os
        from pathlib import Path

        from ingestflow.connectors.vectordb_destination import VectorDBDestination

        write = VectorDBDestination.write

        def killing(self: Any, doc: Any) -> Any:
            said = write(self, doc)
            try:
                with Path(flag).open("x"):
                    pass
            except FileExistsError:
                return said
            os._exit(17)

        VectorDBDestination.write = killing  # type: ignore[method-assign]

    return hook


def test_actors_write_a_milvus_server_with_the_rows_of_a_local_run(
    tmp_path: Path,
    ray_cluster: str,
    milvus_server: Any,
    driver_writes: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The actors write the rows; one killed right after writing a document loses nothing and
    leaves no duplicate: the document is redone, and its rows replaced."""
    import ray

    from tests.connectors.conftest import SERVER_PASSWORD
    from tests.connectors.test_vectordb_server import connector, make

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("notes.txt", "guide.md", "page.html"):
        shutil.copy2(FIXTURES / "docs" / name, folder / name)
    collections = {name: make(milvus_server, dim=384) for name in ("local", "ray", "killed")}
    files = {}
    for name, collection in collections.items():
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(connector(milvus_server.uri, collection)))
    code, local = server_run(tmp_path, "local", folder, files["local"])
    expected = server_rows(milvus_server, collections["local"])
    assert code == 0 and len({record for record, _ in expected}) == 3
    driver_writes.clear()
    address = ("--executor", "ray", "--ray-address", ray_cluster)
    ray_code, on_ray = server_run(tmp_path, "ray", folder, files["ray"], *address)
    assert (ray_code, counts(on_ray)) == (code, counts(local))
    assert server_rows(milvus_server, collections["ray"]) == expected
    assert driver_writes == []  # every row came from an actor
    assert SERVER_PASSWORD not in json.dumps(on_ray)

    flag = tmp_path / "killed"
    init = ray.init

    def init_with_hook(*args: Any, **kwargs: Any) -> Any:
        kwargs["runtime_env"] = {"worker_process_setup_hook": killed_after_writing(str(flag))}
        return init(*args, **kwargs)

    monkeypatch.setattr(ray, "init", init_with_hook)
    ray_code, killed = server_run(tmp_path, "killed", folder, files["killed"], *address)
    assert flag.is_file()  # an actor died after a write
    assert (ray_code, counts(killed)) == (code, counts(local))
    assert server_rows(milvus_server, collections["killed"]) == expected
    assert driver_writes == []


# --- the actors read the source ---------------------------------------------------------------


def test_actors_read_the_wiki_pages(
    tmp_path: Path,
    ray_cluster: str,
    wiki: Any,  # noqa: F811  (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The driver lists the pages; each actor reads the pages it runs with a client of its own
    (the credentials reach it, never the job record); the same outputs as a local run."""
    from ingestflow.connectors.wiki_source import WikiSource
    from tests.runner import test_wiki_run as wiki_run

    source = wiki_run.connector(tmp_path, wiki, extract_files=False)  # images inlined, by actors
    workflow = tmp_path / "wiki-workflow.json"
    workflow.write_text(json.dumps(wiki_run.WORKFLOW))

    def wiki_run_(name: str, *extra: str) -> tuple[int, dict[str, Any]]:
        args = ["run", str(workflow), "--source", str(source), "-o", str(tmp_path / name)]
        args += ["--workspace", str(tmp_path / f"ws-{name}"), "--workers", "2", "--json"]
        result = runner.invoke(app, [*args, *extra])
        assert result.stdout.lstrip().startswith("{"), (result.output, repr(result.exception))
        return result.exit_code, json.loads(result.stdout)

    code, local = wiki_run_("local")
    assert code == 0 and len(local["files"]) == 5
    read_here: list[str] = []
    monkeypatch.setattr(WikiSource, "read_page", lambda self, *a: read_here.append(a[1]))
    page_reads = len(wiki.requests_to("/rest/api/content/11"))
    address = ("--executor", "ray", "--ray-address", ray_cluster, "--ray-shared-fs")
    ray_code, on_ray = wiki_run_("ray", *address)
    assert (ray_code, counts(on_ray)) == (code, counts(local))
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")
    assert read_here == []  # no page read by the driver
    assert len(wiki.requests_to("/rest/api/content/11")) == page_reads + 1  # once, by an actor
    assert wiki_run.TOKEN not in json.dumps(on_ray)
    assert "source was read by the run's own process" not in (on_ray["message"] or "")
    # again, incrementally: unchanged pages are skipped on the listing's versions (not read), a
    # page deleted between the listing and its read fails alone with the source's reason
    from tests.fakes.confluence import Fault

    wiki.pages["21"].version = 2
    wiki.pages["21"].body = "<p>Note one, revised.</p>"
    wiki.pages["22"].version = 2  # listed as changed, then gone when an actor reads it
    wiki.inject("/rest/api/content/22", Fault.gone())
    ray_code, again = wiki_run_("ray", *address)
    assert ray_code == 1
    status = {f["filename"]: (f["status"], f["error"]) for f in again["files"]}
    assert status["DEV/21-note-1.html"] == ("SUCCESS", None)
    assert status["DEV/11-release-plan.html"][0] == "SKIPPED"
    assert status["DEV/22-note-2.html"] == (
        "FAILED",
        "source: page 22: deleted or no longer visible since it was listed (HTTP 404)",
    )
    assert len(wiki.requests_to("/rest/api/content/11")) == page_reads + 1  # not read again
    assert "revised" in (tmp_path / "ray" / "DEV" / "21-note-1.html.json").read_text()


def test_an_incremental_ray_run_skips_unchanged_documents_and_removes_deleted_ones(
    tmp_path: Path, ray_cluster: str, driver_writes: list[str]
) -> None:
    """`reprocess_all: false` on Ray, the actors writing: the driver's record of what was
    written (the unchanged-document index) skips what did not change, and what left the source
    leaves the output folder."""
    from tests.runner import test_deletions as deletions

    folder = deletions._inputs(tmp_path)
    address = ("--executor", "ray", "--ray-address", ray_cluster, "--ray-shared-fs")
    code, first = deletions._run(tmp_path, *address)
    assert code == 0 and {f["status"] for f in first["files"]} == {"SUCCESS"}
    assert deletions._outputs(tmp_path) == ["a.txt.json", "c.html.json", "sub/b.md.json"]
    (folder / "sub" / "b.md").unlink()
    (folder / "a.txt").write_text("Alpha document, changed.\n")
    code, second = deletions._run(tmp_path, *address)
    assert code == 0, second
    statuses = {f["filename"]: f["status"] for f in second["files"]}
    assert statuses == {"a.txt": "SUCCESS", "c.html": "SKIPPED"}
    assert second["deleted"] == 1 and second["deleted_files"][0]["filename"] == "sub/b.md"
    assert deletions._outputs(tmp_path) == ["a.txt.json", "c.html.json"]
    assert "changed" in (tmp_path / "out" / "a.txt.json").read_text()
    assert driver_writes == []


#: Loaded by every Python process of a run started with its folder first on PYTHONPATH (the
#: driver, and the actors of the local cluster it starts): logs each document a destination
#: writes, and whether the driver or an actor wrote it; the driver stops the run (SIGINT, as
#: Ctrl-C) once it has recorded STOP_AFTER documents written.
STOP_HOOK = """
import os, signal
from ingestflow.connectors.local import LocalDestination
from ingestflow.runner.job import Job

os.environ.setdefault("HOOK_DRIVER", str(os.getpid()))  # the first process: the driver
write, record = LocalDestination.write, Job.record
recorded = [0]


def logged(self, doc):
    said = write(self, doc)
    with open(os.environ["WRITES_LOG"], "a") as log:
        who = "driver" if os.getpid() == int(os.environ["HOOK_DRIVER"]) else "actor"
        log.write(f"{who} {doc.filename}\\n")
    return said


def stopping(self, result):
    record(self, result)
    recorded[0] += result.status == "SUCCESS"
    if str(recorded[0]) == os.environ.get("STOP_AFTER"):
        os.kill(os.getpid(), signal.SIGINT)


LocalDestination.write = logged
Job.record = stopping
"""


def test_a_stopped_ray_job_resumes_in_place(tmp_path: Path) -> None:
    """A Ray run (its own local cluster, the actors writing) stopped part-way resumes in place
    (`jobs resume`, on Ray again): every document recorded once, the ones recorded before the
    stop not written again, all written by actors."""
    from tests.runner import test_resume as resume

    hooked, args = resume._local(tmp_path)
    names = [f"d{i:02}.txt" for i in range(12)]  # 3 batches: more than one actor has in flight
    for path in (tmp_path / "in").iterdir():
        path.unlink()
    for i, name in enumerate(names):
        (tmp_path / "in" / name).write_text(f"Document {i}.\n\nIts own paragraph, number {i}.")
    (tmp_path / "hooks" / "sitecustomize.py").write_text(STOP_HOOK)
    stopped = hooked(*args, "--executor", "ray", "--json", STOP_AFTER="1")
    assert stopped.returncode == 130, stopped.stderr
    first = json.loads(stopped.stdout)
    assert first["status"] == "STOPPED"
    recorded = {f["filename"] for f in first["files"] if f["status"] == "SUCCESS"}
    assert 0 < len(recorded) < len(names)
    writers = {line.split()[0] for line in hooked.log.read_text().splitlines()}
    # a process of its own, hooked as the first (the resume runs on a Ray cluster of its own,
    # which the test process must not start: a process that ran on a cluster of its own then
    # loses the actors it starts on the session's)
    done = hooked("jobs", "resume", first["id"], "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["id"] == first["id"] and record["status"] == "COMPLETED"
    rewritten = [line.split() for line in hooked.log.read_text().splitlines()]
    assert rewritten and not recorded & {name for _, name in rewritten}  # only what was left
    assert sorted(f["filename"] for f in record["files"]) == names
    assert {f["status"] for f in record["files"]} == {"SUCCESS"}
    written = sorted(p.name for p in (tmp_path / "out").glob("*.json"))
    assert written == [f"{n}.json" for n in names]
    assert writers | {who for who, _ in rewritten} == {"actor"}


def test_milvus_lite_is_written_by_the_driver_and_the_job_says_so(
    tmp_path: Path, ray_cluster: str
) -> None:
    """A Lite .db is one process's file: on Ray the driver writes it (the actors process), and
    the job's message says so."""
    from tests.runner.test_crash import EXE
    from tests.runner.test_deletions import _rows
    from tests.runner.test_vectordb_kill import setup

    docs, conn, wf = setup(tmp_path)
    ran = subprocess.run(
        [
            *(*EXE, "run", str(wf), "-i", str(docs), "--destination", str(conn)),
            *("--workspace", str(tmp_path / "ws"), "--json", "--workers", "2"),
            *("--executor", "ray", "--ray-address", ray_cluster),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr
    record = json.loads(ran.stdout)
    assert "takes one writer (Milvus Lite" in record["message"]
    rows = _rows(tmp_path / "milvus.db")
    assert {record_id for record_id, _ in rows} == {f["file_id"] for f in record["files"]}


# Last of the in-process runs: after a run on a local cluster of its own, the actors this
# process then starts on the session cluster die before they run (Ray keeps state of the local
# cluster in the process, RAY_AUTH_MODE=token among it; putting the environment back is not
# enough). One run a process is the CLI's and the job processes' case.
def test_a_run_on_a_local_cluster_of_its_own_leaves_no_ray_process(
    tmp_path: Path, no_ray_left: None
) -> None:
    pytest.importorskip("ray")
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("notes.txt", "guide.md"):
        shutil.copy2(FIXTURES / "docs" / name, folder / name)
    code, local = run(tmp_path, "local", folder)
    steps: list[str] = []
    helpers: list[str] = []

    def heard(event: Any) -> None:
        if isinstance(event, ExecutorStep):
            steps.append(event.doing)
            if event.step == "ray actors":  # the cluster is up: which processes it started
                for pid in ray_processes():  # (not the session cluster's)
                    with contextlib.suppress(psutil.Error):
                        helpers.append(" ".join(psutil.Process(pid).cmdline()))

    on_ray = ingestflow.run(  # starts its own cluster
        WORKFLOW,
        [folder],
        output=tmp_path / "ray",
        workspace=tmp_path / "ws-ray",
        workers=2,
        executor="ray",
        progress=heard,
    ).job
    assert counts(on_ray) == counts(local) and code == 0
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")
    # what the run said it was doing, beyond its documents
    assert steps == [
        "starting a local Ray cluster (2 CPUs)",
        "starting 2 Ray actors: each loads the partitioner and the embedding model, then reads "
        "its first documents",
        "stopping the local Ray cluster",
    ]
    # the helpers a one-run cluster never uses are left out (ray_cluster.LEFT_OUT)
    assert any("gcs_server" in line for line in helpers), helpers
    assert not [line for line in helpers if "log_monitor" in line or "monitor.py" in line]
