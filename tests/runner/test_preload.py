"""Workers forked from a preloaded server (`runner.preload`): when it is used, what the server
loads, and that a run through it writes what spawned workers write and leaves nothing behind."""

from __future__ import annotations

import json
import multiprocessing.forkserver
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.connectors.local import LocalSource
from ingestflow.runner import preload
from ingestflow.runner.plan import build_plan
from tests.conftest import FIXTURES

runner = CliRunner()


def workflow(strategy: str = "fast", embed: bool = True) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {"strategy": strategy, "unique_element_ids": False},
        },
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_title",
            "settings": {"max_characters": 500},
        },
    ]
    if embed:
        nodes.append(
            {
                "name": "Embedder",
                "type": "embed",
                "subtype": "ibm",
                "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
            }
        )
    return {"name": "preload", "workflow_type": "custom", "workflow_nodes": nodes}


def test_only_fast_runs_on_several_workers_are_preloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(preload.SWITCH_ENV, raising=False)
    wanted = preload.spec(build_plan(workflow()), 2)
    assert wanted is not None and wanted["onnx"] is True and wanted["threads"] >= 1
    assert preload.spec(build_plan(workflow(embed=False)), 2)["onnx"] is False  # type: ignore[index]
    assert preload.spec(build_plan(workflow()), 1) is None  # one worker runs in this process
    assert preload.spec(build_plan(workflow("hi_res")), 2) is None
    assert wanted["suffixes"] == []  # the source could not tell
    told = preload.spec(build_plan(workflow()), 2, {".pdf", ".docx"})
    assert told is not None and told["suffixes"] == [".docx", ".pdf"]
    monkeypatch.setenv(preload.SWITCH_ENV, "0")
    assert preload.spec(build_plan(workflow()), 2) is None


def test_a_local_source_tells_the_extensions_of_its_first_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.PDF", "b.docx", "sub/c.md", "sub/d", ".hidden.xlsx"):
        (tmp_path / name).write_text("x")
    source = LocalSource([tmp_path])
    assert source.suffixes() == {".pdf", ".docx", ".md", ""}
    assert source.suffixes(most=1) == {".pdf"}  # in the order the run reads them
    assert source.skipped == []
    assert LocalSource([tmp_path / "missing"]).suffixes() == {""}  # the run's precheck says why


def test_the_server_loads_the_library_the_model_and_onnx_once() -> None:
    spec = {"threads": 1, "block_torch": True, "onnx": True, "suffixes": [".pdf", ".md", ".jpg"]}
    probe = (
        "import gc, json, sys\n"
        "import ingestflow.runner.preloaded\n"
        "from unstructured.nlp.tokenize import _get_nlp\n"
        "print(json.dumps({\n"
        " 'library': 'unstructured.partition.auto' in sys.modules,\n"
        " 'spacy_model': _get_nlp.cache_info().currsize == 1,\n"
        " 'onnx': 'onnxruntime' in sys.modules,\n"
        " 'types': sorted(m for m in sys.modules if m in (\n"
        "   'unstructured.partition.pdf', 'unstructured.partition.md',\n"
        "   'unstructured.partition.docx', 'unstructured.partition.image',\n"
        "   'unstructured.staging.base')),\n"
        " 'torch_blocked': 'torch' in sys.modules and sys.modules['torch'] is None,\n"
        " 'frozen': gc.get_freeze_count() > 0,\n"
        " 'threads': __import__('os').environ.get('OMP_NUM_THREADS'),\n"
        "}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env[preload.PRELOAD_ENV] = json.dumps(spec)
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "library": True,
        "spacy_model": True,
        "onnx": True,
        # the run's types (not images: Fast does not read them), and the element serialiser
        "types": [
            "unstructured.partition.md",
            "unstructured.partition.pdf",
            "unstructured.staging.base",
        ],
        "torch_blocked": True,
        "frozen": True,
        "threads": "1",
    }


def run(tmp: Path, name: str, switch: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(preload.SWITCH_ENV, switch)
    path = tmp / "wf.json"
    path.write_text(json.dumps(workflow()))
    result = runner.invoke(
        app,
        [
            *("run", str(path), "-i", str(FIXTURES / "docs"), "-o", str(tmp / name)),
            *("--workspace", str(tmp / f"ws-{name}"), "-w", "2", "--json"),
        ],
    )
    assert result.exit_code == 0, result.output
    return {p.name: json.loads(p.read_text()) for p in sorted((tmp / name).glob("*.json"))}


@pytest.mark.slow
def test_a_preloaded_run_writes_what_spawned_workers_write_and_stops_its_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[dict[str, Any]] = []
    real_start = preload.start

    def recording(wanted: dict[str, Any]) -> Any:
        context = real_start(wanted)
        assert context is not None and multiprocessing.forkserver._forkserver._forkserver_pid
        started.append(wanted)
        return context

    monkeypatch.setattr(preload, "start", recording)
    spawned = run(tmp_path, "spawned", "0", monkeypatch)
    assert started == []
    forked = run(tmp_path, "forked", "1", monkeypatch)
    assert len(started) == 1
    assert started[0]["suffixes"] == sorted({p.suffix for p in (FIXTURES / "docs").iterdir()})
    assert forked == spawned and len(forked) == len(list((FIXTURES / "docs").iterdir()))
    assert all(e.get("embeddings") for doc in forked.values() for e in doc if e.get("text"))
    # the server lived for the run only
    assert multiprocessing.forkserver._forkserver._forkserver_pid is None
    assert preload.PRELOAD_ENV not in os.environ
