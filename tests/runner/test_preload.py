"""Workers forked from a preloaded server (`runner.preload`): when it is used, what the server
loads, and that a run through it writes what spawned workers write and leaves nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.connectors.local import LocalSource
from ingestflow.runner import pools, preload
from ingestflow.runner.plan import build_plan
from ingestflow.spec.strategies import FAST
from tests.conftest import FIXTURES
from tests.stages.test_partition import HARBOUR, make_pdf

runner = CliRunner()


def vlm_workflow(is_dynamic: bool) -> dict[str, Any]:
    """Auto (`is_dynamic`) or VLM, partitioning only."""
    node = {
        "name": "Partitioner",
        "type": "partition",
        "subtype": "vlm",
        "settings": {"is_dynamic": is_dynamic, **({"allow_fast": True} if is_dynamic else {})},
    }
    return {"name": "preload", "workflow_type": "custom", "workflow_nodes": [node]}


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


def test_fast_hi_res_and_auto_runs_on_several_workers_are_preloaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(preload.SWITCH_ENV, raising=False)
    wanted = preload.spec(build_plan(workflow()), 2)
    assert wanted is not None and wanted["onnx"] is True and wanted["threads"] >= 1
    assert wanted["hi_res"] is False
    assert preload.spec(build_plan(workflow(embed=False)), 2)["onnx"] is False  # type: ignore[index]
    assert preload.spec(build_plan(workflow()), 1) is None  # one worker runs in this process
    for body in (workflow("hi_res"), vlm_workflow(is_dynamic=True)):
        hi_res = preload.spec(build_plan(body), 2)
        assert hi_res is not None and hi_res["hi_res"] is True, body
        assert hi_res["block_torch"] is True  # the High Res stack runs without torch
    assert preload.spec(build_plan(vlm_workflow(is_dynamic=False)), 2) is None  # a model server
    assert wanted["suffixes"] == []  # the source could not tell
    told = preload.spec(build_plan(workflow()), 2, {".pdf", ".docx"})
    assert told is not None and told["suffixes"] == [".docx", ".pdf"]
    # the spec travels in an environment variable: only what can be an extension, and few
    odd = {". Smith's letter", ".한국어", ".a" * 20, "", ".PDF"} | {f".x{i}" for i in range(100)}
    capped = preload.spec(build_plan(workflow()), 2, odd)
    assert capped is not None and len(capped["suffixes"]) == preload.MOST_SUFFIXES
    assert all(s.startswith(".x") for s in capped["suffixes"])
    monkeypatch.setenv(preload.SWITCH_ENV, "0")
    assert preload.spec(build_plan(workflow()), 2) is None


def test_high_res_over_pdfs_and_images_alone_does_not_load_the_spacy_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(preload.SWITCH_ENV, raising=False)
    hi_res = build_plan(workflow("hi_res"))
    assert preload.spec(hi_res, 2, {".pdf", ".PNG", ".jpg"})["nlp"] is False  # type: ignore[index]
    # another type (its partitioner asks spaCy), or types the source could not tell: loaded
    assert preload.spec(hi_res, 2, {".pdf", ".txt"})["nlp"] is True  # type: ignore[index]
    assert preload.spec(hi_res, 2, None)["nlp"] is True  # type: ignore[index]
    assert preload.spec(hi_res, 2, set())["nlp"] is True  # type: ignore[index]
    # Fast and Auto read text layers with the library's text checks, which ask it
    for body in (workflow(), vlm_workflow(is_dynamic=True)):
        assert preload.spec(build_plan(body), 2, {".pdf"})["nlp"] is True, body  # type: ignore[index]


_LOADED = """
import sys
import ingestflow.runner.preloaded
from unstructured.nlp.tokenize import _get_nlp
print(sorted(m for m in ("rapidocr.main", "onnxruntime", "unstructured.partition.pdf")
             if m in sys.modules), _get_nlp.cache_info().currsize)
"""


@pytest.mark.parametrize(
    ("suffixes", "engine", "nlp", "loaded"),
    [
        # PDFs alone: text layers mostly; a scanned PDF's worker imports rapidocr at its first
        # table (its import parses rapidocr's model catalogue, ~0.6 s)
        ([".pdf"], "auto", False, ["onnxruntime", "unstructured.partition.pdf"]),
        (
            [".pdf"],
            "rapidocr",
            False,
            ["onnxruntime", "rapidocr.main", "unstructured.partition.pdf"],
        ),
        (
            [".pdf", ".png"],
            "auto",
            False,
            ["onnxruntime", "rapidocr.main", "unstructured.partition.pdf"],
        ),
        (
            [".pdf", ".txt"],
            "auto",
            True,
            ["onnxruntime", "rapidocr.main", "unstructured.partition.pdf"],
        ),
    ],
)
@pytest.mark.slow
def test_what_a_high_res_server_loads_follows_the_run_s_files(
    suffixes: list[str], engine: str, nlp: bool, loaded: list[str]
) -> None:
    wanted = preload.spec(build_plan(workflow("hi_res")), 2, set(suffixes))
    assert wanted is not None and wanted["nlp"] is nlp
    env = {**os.environ, preload.PRELOAD_ENV: json.dumps(wanted), "INGESTFLOW_OCR_ENGINE": engine}
    out = subprocess.run(
        [sys.executable, "-c", _LOADED], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("]")[0] + "]" == str(loaded)
    assert out.stdout.strip().endswith(" 1" if nlp else " 0")


def test_the_guess_from_the_workflow_file_is_the_spec_the_run_wants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(preload.SWITCH_ENV, raising=False)
    for told in ({".pdf", ".md"}, {".pdf", ".png"}):
        _same_guess(told)
    told = {".pdf", ".md"}
    assert preload.guess(workflow(), 2, told) is not None
    untold = workflow()
    del untold["workflow_nodes"][0]["settings"]["strategy"]  # the default: left to the plan
    assert preload.guess(untold, 2, told) is None
    odd: object
    for odd in ({}, [], {"workflow_nodes": "x"}, {"workflow_nodes": [None]}, None):
        assert preload.guess(odd, 2, told) is None
    monkeypatch.setenv(preload.SWITCH_ENV, "0")
    assert preload.guess(workflow(), 2, told) is None


def _same_guess(told: set[str]) -> None:
    for body, workers in [
        (workflow(), 2),
        (workflow(embed=False), 2),
        (workflow("hi_res"), 2),
        (workflow("hi_res", embed=False), 2),
        (vlm_workflow(is_dynamic=True), 2),
        (vlm_workflow(is_dynamic=False), 2),
        (workflow(), 1),
    ]:
        plan = build_plan(body)
        assert preload.guess(body, workers, told) == preload.spec(plan, workers, told), body


def server_pid() -> int | None:
    return pools.fork_server_pid()


def test_a_server_started_early_is_kept_by_the_run_that_wants_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(preload.SWITCH_ENV, raising=False)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n")
    path = tmp_path / "wf.json"
    try:
        path.write_text(json.dumps(workflow()))
        preload.early(path, [folder], 2, exclude=[])
        pid = server_pid()
        assert pid is not None
        wanted = preload.spec(build_plan(workflow()), 2, LocalSource([folder]).suffixes())
        assert wanted is not None and wanted["suffixes"] == [".md"]
        preload.start(wanted)
        assert server_pid() == pid  # the same spec: the same server, already loading
        preload.start({**wanted, "suffixes": [".pdf"]})  # the guess was wrong: replaced
        assert server_pid() not in (None, pid)
    finally:
        preload.stop()
    assert server_pid() is None and preload.PRELOAD_ENV not in os.environ
    for body in (vlm_workflow(is_dynamic=False), "not json"):  # nothing to start, nothing raised
        path.write_text(body if isinstance(body, str) else json.dumps(body))
        preload.early(path, [folder], 2, exclude=[])
        assert server_pid() is None
    path.write_text(json.dumps(workflow()))
    preload.early(path, [folder], 1, exclude=[])  # one worker: the run is in this process
    assert server_pid() is None


def test_a_run_that_fails_its_checks_leaves_no_early_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(preload.SWITCH_ENV, raising=False)
    started: list[int | None] = []
    real_start = preload.start

    def recording(wanted: dict[str, Any]) -> Any:
        context = real_start(wanted)
        started.append(server_pid())
        return context

    monkeypatch.setattr(preload, "start", recording)
    body = workflow()
    body["workflow_nodes"][1]["settings"]["max_characters"] = -5  # invalid: exit 2
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(body))
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Harbour.\n")
    result = runner.invoke(
        app, ["run", str(path), "-i", str(folder), "-o", str(tmp_path / "out"), "-w", "2"]
    )
    assert result.exit_code == 2, result.output
    assert "max_characters" in result.output
    assert len(started) == 1 and started[0] is not None  # the guess started one...
    assert server_pid() is None and preload.PRELOAD_ENV not in os.environ  # ...and it is gone


def test_a_local_source_tells_the_extensions_of_its_first_files(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    for name in ("a.PDF", "b.docx", "sub/c.md", "sub/d", ".hidden.xlsx", "Mr. Smith's letter"):
        (folder / name).write_text("x")
    (tmp_path / "outside.txt").write_text("x")
    (folder / "link.txt").symlink_to(tmp_path / "outside.txt")  # skipped by the run, with a word
    source = LocalSource([folder])
    assert source.suffixes() == {".pdf", ".docx", ".md"}  # no name without an extension
    assert source.suffixes(most=2) == {".pdf"}  # in the run's order: "Mr. …", then "a.PDF"
    assert source.suffixes(seconds=0) == set()  # the look is short, whatever the folder
    assert source.skipped == []  # the look leaves the run's report alone
    assert len(list(source.documents())) == 5
    assert len(source.skipped) == 1 and "outside" in source.skipped[0]
    source.suffixes()
    assert len(source.skipped) == 1
    assert LocalSource([tmp_path / "missing"]).suffixes() == set()  # the precheck says why


@pytest.mark.slow
def test_the_server_loads_the_library_the_model_and_onnx_once() -> None:
    spec = {
        "threads": 1,
        "preload": FAST.preload,  # what the strategy declares its workers load first
        "block_torch": True,
        "onnx": True,
        "suffixes": [".pdf", ".md", ".jpg", ".mp3", ".docx"],
    }
    probe = (
        "import gc, json, sys\n"
        "sys.modules['docx'] = None  # a broken extra: that type is left to the worker\n"
        "import ingestflow.runner.preloaded\n"
        "from unstructured.nlp.tokenize import _get_nlp\n"
        "print(json.dumps({\n"
        " 'library': 'unstructured.partition.auto' in sys.modules,\n"
        " 'spacy_model': _get_nlp.cache_info().currsize == 1,\n"
        " 'onnx': 'onnxruntime' in sys.modules,\n"
        " 'types': sorted(m for m in sys.modules if m in (\n"
        "   'unstructured.partition.pdf', 'unstructured.partition.md',\n"
        "   'unstructured.partition.docx', 'unstructured.partition.image',\n"
        "   'unstructured.partition.audio',\n"
        "   'unstructured.staging.base')),\n"
        " 'torch_blocked': 'torch' in sys.modules and sys.modules['torch'] is None,\n"
        " 'frozen': gc.get_freeze_count() > 0,\n"
        " 'threads': __import__('os').environ.get('OMP_NUM_THREADS'),\n"
        "}))\n"
    )
    assert _probed(spec, probe) == {
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


@pytest.mark.slow
def test_the_server_imports_the_high_res_stack_but_loads_no_model() -> None:
    spec = {
        "threads": 1,
        "preload": FAST.preload,  # what the strategy declares its workers load first
        "block_torch": True,
        "onnx": False,
        "hi_res": True,
        "suffixes": [".pdf", ".jpg"],
    }
    probe = (
        "import json, sys\n"
        "import ingestflow.runner.preloaded\n"
        "from ingestflow.stages.partition.hires import ocr, orientation\n"
        "from ingestflow.stages.partition.hires.tables import model as table_model\n"
        "from unstructured_inference.models.base import models\n"
        "wanted = ('unstructured.partition.pdf', 'unstructured.partition.image',\n"
        "  'unstructured.partition.pdf_image.ocr', 'unstructured_inference.inference.layout',\n"
        "  'onnxruntime', 'cv2', 'rapidocr.main', 'rapid_layout',\n"
        "  'ingestflow.stages.partition.hires.hooks', 'ingestflow.stages.partition.auto')\n"
        "print(json.dumps({\n"
        " 'missing': [m for m in wanted if m not in sys.modules],\n"
        " 'torch_blocked': sys.modules.get('torch', 0) is None,\n"
        " 'sessions': [ocr._ENGINE is not None, orientation._SESSION is not None,\n"
        "   table_model._MODEL is not None, len(models.models)],\n"
        "}))\n"
    )
    assert _probed(spec, probe) == {
        "missing": [],
        "torch_blocked": True,
        "sessions": [False, False, False, 0],  # each worker loads its own
    }


def _probed(spec: dict[str, Any], probe: str) -> Any:
    """What `probe` (Python that prints JSON last) prints in a fresh process whose preload
    spec is `spec`, as the fork server has it (no OMP_NUM_THREADS of the test's)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env[preload.PRELOAD_ENV] = json.dumps(spec)
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def inputs(tmp: Path) -> Path:
    """The fixture documents, and a PDF and a Word file: the types whose partitioners patch
    library state as they are imported."""
    import docx

    folder = tmp / "in"
    shutil.copytree(FIXTURES / "docs", folder)
    (folder / "report.pdf").write_bytes(make_pdf(["Harbour Report", f"{HARBOUR}\nSecond line."]))
    document = docx.Document()
    document.add_heading("Harbour Handbook", level=1)
    document.add_paragraph(HARBOUR)
    document.save(str(folder / "handbook.docx"))
    return folder


def run(
    tmp: Path,
    name: str,
    switch: str,
    monkeypatch: pytest.MonkeyPatch,
    folder: Path,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    monkeypatch.setenv(preload.SWITCH_ENV, switch)
    path = tmp / "wf.json"
    path.write_text(json.dumps(body or workflow()))
    result = runner.invoke(
        app,
        [
            *("run", str(path), "-i", str(folder), "-o", str(tmp / name)),
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
    pids: list[int | None] = []
    real_start = preload.start

    def recording(wanted: dict[str, Any]) -> Any:
        context = real_start(wanted)
        assert context is not None and server_pid()
        started.append(wanted)
        pids.append(server_pid())
        return context

    monkeypatch.setattr(preload, "start", recording)
    folder = inputs(tmp_path)
    spawned = run(tmp_path, "spawned", "0", monkeypatch, folder)
    assert started == []
    forked = run(tmp_path, "forked", "1", monkeypatch, folder)
    # started from the workflow file as the command began, then asked for again by the run
    # (the same spec: the same server)
    assert len(started) == 2 and started[0] == started[1]
    assert pids[0] == pids[1]
    assert started[0]["suffixes"] == sorted({p.suffix for p in folder.iterdir()})
    assert ".pdf" in started[0]["suffixes"] and ".docx" in started[0]["suffixes"]
    assert forked == spawned and len(forked) == len(list(folder.iterdir()))
    assert all(e.get("embeddings") for doc in forked.values() for e in doc if e.get("text"))
    # the server lived for the run only
    assert server_pid() is None
    assert preload.PRELOAD_ENV not in os.environ


@pytest.mark.slow
def test_a_preloaded_hi_res_run_writes_what_spawned_workers_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.stages.test_hires import draw_page

    started: list[dict[str, Any]] = []
    real_start = preload.start

    def recording(wanted: dict[str, Any]) -> Any:
        started.append(wanted)
        return real_start(wanted)

    monkeypatch.setattr(preload, "start", recording)
    folder = tmp_path / "in"
    folder.mkdir()
    draw_page().save(folder / "scan.pdf", resolution=200.0)  # OCR, orientation, a table
    draw_page().save(folder / "scan.png")
    (folder / "report.pdf").write_bytes(make_pdf(["Harbour Report", f"{HARBOUR}\nSecond line."]))
    body = workflow("hi_res", embed=False)
    body["workflow_nodes"][0]["settings"]["infer_table_structure"] = True
    spawned = run(tmp_path, "spawned", "0", monkeypatch, folder, body)
    assert started == []
    forked = run(tmp_path, "forked", "1", monkeypatch, folder, body)
    assert started and all(wanted["hi_res"] for wanted in started)
    assert forked == spawned and len(forked) == 3
    assert {"Table", "TableChunk"} & {e["type"] for e in forked["scan.pdf.json"]}
    assert server_pid() is None
