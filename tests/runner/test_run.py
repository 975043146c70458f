"""`ingestflow run` end to end on real documents: outputs, jobs, failures, re-runs, traces."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.conftest import FIXTURES, REPO

runner = CliRunner()
DOCS = FIXTURES / "docs"
PARTITION_ONLY: dict[str, Any] = {
    "name": "partition only",
    "workflow_type": "custom",
    "workflow_nodes": [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {"strategy": "fast", "unique_element_ids": False},
        }
    ],
}
WITH_CHUNKS = {
    **PARTITION_ONLY,
    "name": "partition and chunk",
    "workflow_nodes": [
        *PARTITION_ONLY["workflow_nodes"],
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_character",
            "settings": {"max_characters": 300},
        },
    ],
}


def write(tmp: Path, body: dict[str, Any], name: str = "wf.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(body))
    return path


def run(tmp: Path, workflow: Path, *inputs: Path, extra: tuple[str, ...] = ()) -> tuple[int, Any]:
    args = [
        "run",
        str(workflow),
        "--output",
        str(tmp / "out"),
        "--workspace",
        str(tmp / "ws"),
        "--workers",
        "1",
        "--json",
        *extra,
    ]
    for path in inputs:
        args += ["--input", str(path)]
    result = runner.invoke(app, args)
    body = json.loads(result.stdout) if result.stdout.strip().startswith("{") else result.output
    return result.exit_code, body


def sample(tmp: Path) -> Path:
    folder = tmp / "in"
    folder.mkdir()
    (folder / "notes.txt").write_text("Quarterly notes\n\nRevenue grew in every region.\n")
    (folder / "sub").mkdir()
    (folder / "sub" / "page.html").write_text(
        "<html><body><h1>Release plan</h1><p>Ship the beta in March.</p>"
        "<p>Ship the beta in March.</p></body></html>"
    )
    return folder


def test_run_writes_one_json_per_document(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    code, record = run(tmp_path, write(tmp_path, PARTITION_ONLY), folder)
    assert code == 0, record
    assert record["status"] == "COMPLETED" and record["processing_status"] == "SUCCESS"
    out = tmp_path / "out"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json")) == [
        "notes.txt.json",
        "sub/page.html.json",
    ]
    elements = json.loads((out / "sub" / "page.html.json").read_text())
    assert [e["type"] for e in elements] == ["Title", "NarrativeText", "NarrativeText"]
    assert len({e["element_id"] for e in elements}) == 3  # identical paragraphs, distinct ids
    assert elements[0]["metadata"]["filename"] == "page.html"
    assert not list(out.rglob("*.tmp"))
    assert len(record["input_file_ids"]) == 2
    (stat,) = record["node_stats"]
    assert (stat["success"], stat["failure"], stat["ready"], stat["in_progress"]) == (2, 0, 0, 0)


@pytest.mark.slow
def test_runs_are_deterministic_across_worker_counts(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    wf = write(tmp_path, WITH_CHUNKS)
    code, _ = run(tmp_path, wf, folder)
    assert code == 0
    first = {p.name: p.read_text() for p in (tmp_path / "out").rglob("*.json")}
    shutil.rmtree(tmp_path / "out")
    code, record = run(tmp_path, wf, folder, extra=("--workers", "2"))
    assert code == 0, record
    second = {p.name: p.read_text() for p in (tmp_path / "out").rglob("*.json")}
    assert first == second


def test_bad_documents_fail_alone(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    (folder / "empty.txt").write_bytes(b"")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 40)
    (folder / "unknown.xyz").write_bytes(b"\x00\x01\x02 not a known format \xff\xfe")
    code, record = run(tmp_path, write(tmp_path, PARTITION_ONLY), folder)
    assert code == 1
    assert record["processing_status"] in ("COMPLETED_WITH_ERRORS", "FAILED")
    failed = {f["document"]: f["error"] for f in record["failed_files"]}
    assert set(failed) == {"empty.txt", "binary.txt", "unknown.xyz"}
    assert all(err and "\n" not in err for err in failed.values())
    assert "empty" in failed["empty.txt"].lower()
    assert (tmp_path / "out" / "notes.txt.json").exists()
    assert (tmp_path / "out" / "sub" / "page.html.json").exists()
    assert not (tmp_path / "out" / "empty.txt.json").exists()
    (stat,) = record["node_stats"]
    assert (stat["success"], stat["failure"]) == (2, 3)


def test_corpus_bad_pdfs_fail_alone(tmp_path: Path, corpus: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for pdf in [*sorted((corpus / "bad").glob("*.pdf")), corpus / "docs/pdf/password.pdf"]:
        shutil.copy(pdf, folder / pdf.name)
    shutil.copy(corpus / "docs/fake-text.txt", folder / "fake-text.txt")
    code, record = run(tmp_path, write(tmp_path, PARTITION_ONLY), folder)
    assert code == 1
    failed = {f["document"] for f in record["failed_files"]}
    assert failed == {p.name for p in folder.glob("*.pdf")}
    assert (tmp_path / "out" / "fake-text.txt.json").exists()


def test_reprocess_all_false_skips_unchanged(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    body = {**PARTITION_ONLY, "reprocess_all": "false"}
    wf = write(tmp_path, body)
    code, first = run(tmp_path, wf, folder)
    assert code == 0 and {f["status"] for f in first["files"]} == {"SUCCESS"}
    code, second = run(tmp_path, wf, folder)
    assert code == 0 and {f["status"] for f in second["files"]} == {"SKIPPED"}
    (folder / "notes.txt").write_text("Quarterly notes, revised.\n")
    code, third = run(tmp_path, wf, folder)
    assert {f["filename"]: f["status"] for f in third["files"]} == {
        "notes.txt": "SUCCESS",
        "sub/page.html": "SKIPPED",
    }
    body["workflow_nodes"][0]["settings"]["include_page_breaks"] = True
    code, fourth = run(tmp_path, write(tmp_path, body), folder)
    assert {f["status"] for f in fourth["files"]} == {"SUCCESS"}


def test_reprocess_all_default_processes_everything(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    wf = write(tmp_path, PARTITION_ONLY)
    run(tmp_path, wf, folder)
    _code, second = run(tmp_path, wf, folder)
    assert {f["status"] for f in second["files"]} == {"SUCCESS"}


def test_trace_keeps_each_node_output(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    code, record = run(tmp_path, write(tmp_path, WITH_CHUNKS), folder, extra=("--trace",))
    assert code == 0
    ws = str(tmp_path / "ws")
    job = record["id"]
    node_files = {(o["node_type"], o["node_subtype"]) for o in record["output_node_files"]}
    assert node_files == {("partition", "unstructured_api"), ("chunk", "chunk_by_character")}
    parts = runner.invoke(
        app,
        [
            "jobs",
            "download",
            job[:8],
            "--file",
            "sub/page.html",
            "--node",
            "Partitioner",
            "--workspace",
            ws,
        ],
    )
    chunks = runner.invoke(
        app,
        [
            "jobs",
            "download",
            job,
            "--file",
            "sub/page.html",
            "--node",
            "chunker",
            "--workspace",
            ws,
        ],
    )
    assert parts.exit_code == 0 and chunks.exit_code == 0, parts.output + chunks.output
    assert [e["type"] for e in json.loads(parts.stdout)] == [
        "Title",
        "NarrativeText",
        "NarrativeText",
    ]
    assert {e["type"] for e in json.loads(chunks.stdout)} == {"CompositeElement"}
    final = runner.invoke(
        app, ["jobs", "download", job, "--file", "sub/page.html", "--workspace", ws]
    )
    assert json.loads(final.stdout) == json.loads(chunks.stdout)


def test_untraced_node_output_says_how_to_get_it(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    _code, record = run(tmp_path, write(tmp_path, WITH_CHUNKS), folder)
    result = runner.invoke(
        app,
        [
            "jobs",
            "download",
            record["id"],
            "--file",
            "notes.txt",
            "--node",
            "Partitioner",
            "--workspace",
            str(tmp_path / "ws"),
        ],
    )
    assert result.exit_code == 2 and "--trace" in result.output


def test_jobs_list_and_show(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    _, record = run(tmp_path, write(tmp_path, PARTITION_ONLY), folder)
    ws = str(tmp_path / "ws")
    listed = runner.invoke(app, ["jobs", "list", "--json", "--workspace", ws])
    assert [r["id"] for r in json.loads(listed.stdout)] == [record["id"]]
    shown = runner.invoke(app, ["jobs", "show", record["id"][:6], "--workspace", ws])
    assert shown.exit_code == 0 and "notes.txt" in shown.output
    missing = runner.invoke(app, ["jobs", "show", "nope", "--workspace", ws])
    assert missing.exit_code == 2 and "not found" in missing.output


def test_invalid_workflow_exits_two_before_running(tmp_path: Path) -> None:
    body = json.loads(json.dumps(WITH_CHUNKS))
    body["workflow_nodes"][1]["settings"]["overlap"] = 400
    code, output = run(tmp_path, write(tmp_path, body), sample(tmp_path))
    assert code == 2
    assert "workflow_nodes[1].settings.overlap" in output
    assert not (tmp_path / "out").exists()


def test_missing_input_exits_two(tmp_path: Path) -> None:
    code, output = run(tmp_path, write(tmp_path, PARTITION_ONLY), tmp_path / "nope")
    assert code == 2 and "no such file or folder" in output


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.slow
def test_ctrl_c_stops_the_job_and_keeps_finished_documents(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(400):
        (folder / f"doc-{i:03d}.txt").write_text(f"Document {i}.\n\n" + "Some text. " * 200)
    wf = write(tmp_path, PARTITION_ONLY)
    exe = Path(sys.executable).parent / "ingestflow"
    proc = subprocess.Popen(
        [
            str(exe),
            "run",
            str(wf),
            "-i",
            str(folder),
            "-o",
            str(tmp_path / "out"),
            "--workspace",
            str(tmp_path / "ws"),
            "--workers",
            workers,
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    deadline = time.monotonic() + 300  # a deadline only: the run starts as fast as it can
    while len(list((tmp_path / "out").glob("*.json"))) < 3:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no three outputs before the Ctrl-C: {proc.communicate()}")
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    record = json.loads(stdout)
    assert record["status"] == "STOPPED"
    written = list((tmp_path / "out").glob("*.json"))
    assert 3 <= len(written) < 400
    assert len([f for f in record["files"] if f["status"] == "SUCCESS"]) == len(written)
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_secrets_in_node_settings_never_reach_the_job_store(tmp_path: Path) -> None:
    body = json.loads(json.dumps(WITH_CHUNKS))
    body["workflow_nodes"][1]["settings"]["unstructured_api_key"] = "sk-LEAKME-123"
    code, record = run(tmp_path, write(tmp_path, body), sample(tmp_path))
    assert code == 0, record
    stored = b"".join(p.read_bytes() for p in (tmp_path / "ws").rglob("*") if p.is_file())
    assert b"sk-LEAKME-123" not in stored
    assert "sk-LEAKME-123" not in json.dumps(record)


def test_a_node_id_cannot_leave_the_workspace(tmp_path: Path) -> None:
    body = json.loads(json.dumps(PARTITION_ONLY))
    body["workflow_nodes"][0]["id"] = "../../escaped"
    code, output = run(tmp_path, write(tmp_path, body), sample(tmp_path), extra=("--trace",))
    assert code == 2 and "workflow_nodes[0].id" in output
    assert not (tmp_path / "escaped").exists()


def test_the_same_file_named_twice_is_processed_once(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    code, record = run(tmp_path, write(tmp_path, PARTITION_ONLY), folder, folder / "notes.txt")
    assert code == 0, record
    assert sorted(f["filename"] for f in record["files"]) == ["notes.txt", "sub/page.html"]


def test_a_symlink_out_of_the_folder_is_skipped_and_said_once(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("Not part of the input folder.\n")
    (folder / "link.txt").symlink_to(outside)
    code, record = run(tmp_path, write(tmp_path, PARTITION_ONLY), folder)
    assert code == 0
    assert "link.txt" not in {f["filename"] for f in record["files"]}
    assert record["message"].count("link.txt") == 1


def test_on_oversize_needs_a_vectordb_destination(tmp_path: Path) -> None:
    code, output = run(
        tmp_path,
        write(tmp_path, PARTITION_ONLY),
        sample(tmp_path),
        extra=("--on-oversize", "text=drop"),
    )
    assert code == 2 and "--on-oversize" in output


def test_an_unusable_workspace_is_exit_three(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    args = [
        "run",
        str(write(tmp_path, PARTITION_ONLY)),
        "-i",
        str(sample(tmp_path)),
        "-o",
        str(tmp_path / "out"),
        "--workspace",
        str(blocker / "ws"),
        "--workers",
        "1",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 3 and "workspace" in result.output


@pytest.mark.slow
def test_auto_run_counts_pages_per_strategy_and_says_vlm_was_unavailable(tmp_path: Path) -> None:
    from tests.stages.test_hires import draw_page

    folder = sample(tmp_path)
    draw_page().save(folder / "scan.pdf", resolution=200.0)
    auto = {
        "name": "auto",
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "vlm",
                "settings": {"is_dynamic": True, "allow_fast": True},
            }
        ],
    }
    code, record = run(tmp_path, write(tmp_path, auto), folder)
    assert code == 0, record
    assert "VLM was unavailable" in record["message"]
    (stat,) = record["node_stats"]
    assert stat["pages_by_strategy"] == {"hi_res": 1}
    out = tmp_path / "out"
    scan = json.loads((out / "scan.pdf.json").read_text())
    assert {e["metadata"]["partition_strategy"] for e in scan} == {"hi_res"}
    notes = json.loads((out / "notes.txt.json").read_text())
    assert {e["metadata"]["partition_strategy"] for e in notes} == {"fast"}


def test_an_unexpected_error_fails_the_job_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ingestflow import cli
    from ingestflow.stages.partition import UnstructuredPartitionStage
    from ingestflow.store.jobs import Workspace

    def broken(self: Any) -> None:
        raise RuntimeError("a bug in a stage")

    monkeypatch.setattr(UnstructuredPartitionStage, "precheck", broken)
    folder = sample(tmp_path)
    args = ["ingestflow", "run", str(write(tmp_path, PARTITION_ONLY)), "-i", str(folder)]
    args += ["-o", str(tmp_path / "out"), "--workspace", str(tmp_path / "ws"), "--workers", "1"]
    monkeypatch.setattr(sys, "argv", args)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "RuntimeError: a bug in a stage" in err
    # the error in one line, beside the progress lines (timestamped) of a run in a pipe
    said = [line for line in err.splitlines() if not re.match(r"\d{4}-\d\d-\d\d \d", line)]
    assert "Traceback" not in err and len(said) == 1, err
    ws = Workspace(tmp_path / "ws")
    try:
        (job,) = ws.list_jobs()
        record = ws.job_record(job["id"])
    finally:
        ws.close()
    assert record["status"] == "FAILED"
    assert record["message"].startswith("precheck: RuntimeError: a bug in a stage")
