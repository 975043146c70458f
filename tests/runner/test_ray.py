"""`ingestflow run --executor ray`: the same elements and job counts as the local executor, a
document that kills its actor failing alone, no Ray process left after a run, and a clear message
without Ray."""

from __future__ import annotations

import base64
import json
import shutil
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.runner import ray_executor
from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow

runner = CliRunner()
WORKFLOW = FIXTURES / "workflows" / "valid" / "02-fast-by-title-embed.json"
CORPUS_DOCS = ("pdf/multi-column-2p.pdf", "example-10k-1p.html", "fake-text.txt")
MARKER = b"INGESTFLOW-TEST-KILL-THE-WORKER"


def run(tmp: Path, name: str, inputs: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """`ingestflow run` in this process (so that a test can patch what the run imports)."""
    args = [
        "run",
        str(WORKFLOW),
        "--input",
        str(inputs),
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


def ray_processes() -> set[int]:
    """Ray's own processes on this machine: GCS, raylet, agents, workers."""
    found = set()
    for process in psutil.process_iter(["pid", "name", "cmdline"]):
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


def same_as_local(tmp_path: Path, inputs: Path) -> None:
    code, local = run(tmp_path, "local", inputs)
    ray_code, on_ray = run(tmp_path, "ray", inputs, "--executor", "ray")
    assert (ray_code, counts(on_ray)) == (code, counts(local))
    expected = outputs(tmp_path / "local")
    assert expected
    assert outputs(tmp_path / "ray") == expected


def test_ray_gives_the_local_executors_elements(tmp_path: Path, no_ray_left: None) -> None:
    pytest.importorskip("ray")
    same_as_local(tmp_path, FIXTURES / "docs")
    # the library leaves out some types' file time (HTML, CSV) for a file in the temporary
    # folder: documents from there come out the same on Ray too
    copied = Path(tempfile.mkdtemp(dir=tempfile.gettempdir()))
    try:
        shutil.copytree(FIXTURES / "docs", copied / "docs")
        same_as_local(tmp_path / "temp", copied / "docs")
    finally:
        shutil.rmtree(copied)


@pytest.mark.corpus
def test_ray_on_corpus_documents_with_a_shared_file_system(
    tmp_path: Path, corpus: Path, no_ray_left: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ray")
    monkeypatch.setenv(ray_executor.SHARED_FS_ENV, "1")  # paths, not bytes
    folder = tmp_path / "in"
    for name in CORPUS_DOCS:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(corpus / "docs" / name, folder / name)
    same_as_local(tmp_path, folder)


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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ray_left: None
) -> None:
    ray = pytest.importorskip("ray")
    init = ray.init

    def init_with_hook(*args: Any, **kwargs: Any) -> Any:
        kwargs["runtime_env"] = {"worker_process_setup_hook": killing_hook(MARKER)}
        return init(*args, **kwargs)

    monkeypatch.setattr(ray, "init", init_with_hook)
    folder = tmp_path / "in"
    shutil.copytree(FIXTURES / "docs", folder)
    (folder / "boom.txt").write_bytes(b"A title\n\nThis line " + MARKER + b" ends the worker.\n")
    code, record = run(tmp_path, "ray", folder, "--executor", "ray")
    assert code == 1
    failed = {f["filename"]: f["error"] for f in record["files"] if f["status"] == "FAILED"}
    assert failed == {"boom.txt": ray_executor.CRASHED}
    written = sorted(p.name for p in (tmp_path / "ray").glob("*.json"))
    assert written == sorted(f"{p.name}.json" for p in (FIXTURES / "docs").iterdir())
    partitioner = record["node_stats"][0]
    assert (partitioner["success"], partitioner["failure"]) == (6, 1)
    assert not list(ray_executor._spool_root().glob("*/*/boom.txt"))  # no spool file left


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
