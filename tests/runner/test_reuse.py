"""Reusing earlier steps: a traced run starts unchanged documents from the node-output cache, or
from an earlier job's stored outputs (`--from-job`, `--start-at`), and makes what a full run
makes; the cache is bounded and can be inspected and cleared."""

from __future__ import annotations

import base64
import json
import os
import shutil
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.conftest import FIXTURES

runner = CliRunner()
DOCS = FIXTURES / "docs"
EMBED = json.loads((FIXTURES / "workflows" / "valid" / "02-fast-by-title-embed.json").read_text())
FILES = ("guide.md", "notes.txt", "sub/page.html")
NODES = ("Partitioner", "Chunker", "Embedder")


@pytest.fixture(autouse=True)
def default_cache_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node cache's default bound, whatever the environment says."""
    monkeypatch.delenv("INGESTFLOW_CACHE_MB", raising=False)


# --- helpers (also used by tests/cli/test_tuning_cli.py and test_report_browser.py) ---------
def workflow(
    tmp: Path,
    name: str,
    max_characters: int = 800,
    new_after_n_chars: int = 600,
    embed: bool = True,
    **settings: Any,
) -> Path:
    """The fixture workflow Fast → chunk_by_title (→ local embedder), with chunker settings."""
    body = json.loads(json.dumps(EMBED))
    body["name"] = name
    chunker = body["workflow_nodes"][1]["settings"]
    chunker.update(max_characters=max_characters, new_after_n_chars=new_after_n_chars, **settings)
    if not embed:
        body["workflow_nodes"] = body["workflow_nodes"][:2]
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(body))
    return path


def sample(tmp: Path) -> Path:
    """Three small documents, one in a subfolder."""
    folder = tmp / "in"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(DOCS / "guide.md", folder / "guide.md")
    shutil.copy(DOCS / "notes.txt", folder / "notes.txt")
    shutil.copy(DOCS / "page.html", folder / "sub" / "page.html")
    return folder


def cli(*args: Any, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, [str(a) for a in args], env=env)


def run(
    wf: Path, inputs: Path, out: Path, ws: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, Any]:
    """`ingestflow run --json`: (exit code, the job record or, when there is none, the output)."""
    result = cli(
        "run", wf, "-i", inputs, "-o", out, "--workspace", ws, "--workers", "1", "--json",
        *extra, env=env,
    )  # fmt: skip
    text = result.stdout.strip()
    return result.exit_code, json.loads(text) if text.startswith("{") else result.output


def download(ws: Path, job: str, file: str, node: str | None = None) -> list[dict[str, Any]]:
    args = ["jobs", "download", job, "--file", file, "--workspace", ws]
    result = cli(*args, *(["--node", node] if node else []))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def stat(record: dict[str, Any], node: str) -> dict[str, Any]:
    (found,) = [n for n in record["node_stats"] if n["node_name"] == node]
    return found


def cache_files(ws: Path) -> int:
    result = cli("cache", "info", "--json", "--workspace", ws)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["files"]


def decode_orig(value: str) -> list[dict[str, Any]]:
    """metadata.orig_elements: base64 of zlib-compressed JSON."""
    return json.loads(zlib.decompress(base64.b64decode(value)))


def canonical(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The elements with every element id renumbered by order of first appearance (element_id,
    metadata.parent_id, and inside the decoded metadata.orig_elements); all else untouched."""
    ids: dict[str, str] = {}

    def renumber(value: Any) -> Any:
        return None if value is None else ids.setdefault(value, f"#{len(ids)}")

    def walk(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for element in json.loads(json.dumps(items)):
            element["element_id"] = renumber(element.get("element_id"))
            metadata = element.get("metadata") or {}
            if "parent_id" in metadata:
                metadata["parent_id"] = renumber(metadata["parent_id"])
            if "orig_elements" in metadata:
                metadata["orig_elements"] = walk(decode_orig(metadata["orig_elements"]))
            out.append(element)
        return out

    return walk(elements)


def split_embeddings(value: Any) -> tuple[Any, list[list[float] | None]]:
    """(the elements of a file, or of every file by name, without embeddings; the embeddings)."""
    if isinstance(value, dict):
        parts = {name: split_embeddings(elements) for name, elements in value.items()}
        rest = {name: part[0] for name, part in parts.items()}
        return rest, [v for name in sorted(parts) for v in parts[name][1]]
    bare = [{k: v for k, v in e.items() if k != "embeddings"} for e in value]
    return bare, [e.get("embeddings") for e in value]


def assert_same(got: Any, want: Any) -> None:
    """Equal, except that embeddings may differ by float noise (1e-6): the embedder batches texts
    across documents, and a batch's padding moves the last bits."""
    got_rest, got_vectors = split_embeddings(got)
    want_rest, want_vectors = split_embeddings(want)
    assert got_rest == want_rest
    assert [v is None for v in got_vectors] == [v is None for v in want_vectors]
    for a, b in zip(got_vectors, want_vectors, strict=True):
        if a is not None and b is not None:
            assert len(a) == len(b)
            assert max(abs(x - y) for x, y in zip(a, b, strict=True)) <= 1e-6


def outputs(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Every output file of a run, canonical, by path."""
    return {
        p.relative_to(folder).as_posix(): canonical(json.loads(p.read_text()))
        for p in sorted(folder.rglob("*.json"))
    }


def assert_same_as_full_run(
    ws: Path, job: str, full_ws: Path, full_job: str, nodes: tuple[str, ...] = NODES
) -> None:
    """Every file's output after every node is what the full run made (ids renumbered)."""
    for file in FILES:
        for node in nodes:
            got = canonical(download(ws, job, file, node))
            want = canonical(download(full_ws, full_job, file, node))
            assert_same(got, want)


# --- the node-output cache ----------------------------------------------------------------
@pytest.mark.slow  # the local embedder
def test_a_changed_chunker_reuses_cached_partitions_and_matches_a_full_run(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wide = workflow(tmp_path, "wide")
    narrow = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250)
    code, first = run(wide, folder, tmp_path / "o1", ws, "--trace")
    assert code == 0, first
    assert stat(first, "Partitioner")["reused"] == 0 and not first["message"]

    code, second = run(narrow, folder, tmp_path / "o2", ws, "--trace")
    assert code == 0, second
    assert "reused earlier node outputs: 3 from cache" in second["message"]
    partitioner, chunker, embedder = (stat(second, n) for n in NODES)
    assert partitioner["reused"] == 3 and partitioner["success"] == 3
    assert partitioner["seconds"] == 0
    assert partitioner["elements_in"] == 0
    assert partitioner["elements_out"] == stat(first, "Partitioner")["elements_out"]
    assert chunker["reused"] == 0 and embedder["reused"] == 0
    assert chunker["elements_in"] == partitioner["elements_out"]
    assert embedder["elements_in"] == chunker["elements_out"] == embedder["elements_out"]
    assert chunker["elements_out"] > stat(first, "Chunker")["elements_out"]  # smaller chunks

    code, full = run(narrow, folder, tmp_path / "o3", tmp_path / "fresh", "--trace")
    assert code == 0, full
    assert stat(full, "Partitioner")["reused"] == 0 and not full["message"]
    for name in ("elements_in", "elements_out"):
        assert [n[name] for n in second["node_stats"]] == [n[name] for n in full["node_stats"]]
    reused_out, full_out = outputs(tmp_path / "o2"), outputs(tmp_path / "o3")
    assert sorted(reused_out) == [f"{f}.json" for f in sorted(FILES)]
    assert_same(reused_out, full_out)
    assert_same_as_full_run(ws, second["id"], tmp_path / "fresh", full["id"])


def test_a_run_with_nothing_changed_reuses_every_node(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, first = run(wf, folder, tmp_path / "o1", ws, "--trace")
    assert code == 0, first
    code, second = run(wf, folder, tmp_path / "o2", ws, "--trace")
    assert code == 0, second
    assert "reused earlier node outputs: 3 from cache" in second["message"]
    assert [(n["reused"], n["seconds"]) for n in second["node_stats"]] == [(3, 0), (3, 0)]
    assert [n["elements_out"] for n in second["node_stats"]] == [
        n["elements_out"] for n in first["node_stats"]
    ]
    for file in FILES:  # reused outputs are the very elements kept before, ids included
        for node in NODES[:2]:
            assert download(ws, second["id"], file, node) == download(ws, first["id"], file, node)
    assert json.loads((tmp_path / "o2" / "notes.txt.json").read_text()) == json.loads(
        (tmp_path / "o1" / "notes.txt.json").read_text()
    )


def test_no_cache_neither_reuses_nor_keeps_outputs(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, first = run(wf, folder, tmp_path / "o1", ws, "--trace", "--no-cache")
    assert code == 0, first
    assert cache_files(ws) == 0
    code, _ = run(wf, folder, tmp_path / "o2", ws, "--trace")  # fills the cache
    assert code == 0
    assert cache_files(ws) > 0
    code, third = run(wf, folder, tmp_path / "o3", ws, "--trace", "--no-cache")
    assert code == 0, third
    assert not third["message"] and all(n["reused"] == 0 for n in third["node_stats"])


def test_an_untraced_run_uses_no_cache(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    assert run(wf, folder, tmp_path / "o1", ws, "--trace")[0] == 0
    code, untraced = run(wf, folder, tmp_path / "o2", ws)
    assert code == 0, untraced
    assert not untraced["message"] and all(n["reused"] == 0 for n in untraced["node_stats"])


@pytest.mark.slow  # the local embedder
@pytest.mark.parametrize("origin", ["cache", "job"])
def test_a_changed_document_is_processed_in_full(tmp_path: Path, origin: str) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    extra = ("--trace",) if origin == "cache" else ("--trace", "--no-cache")
    code, first = run(workflow(tmp_path, "wide"), folder, tmp_path / "o1", ws, *extra)
    assert code == 0, first
    (folder / "notes.txt").write_text(
        "Revised Field Notes\n\nThe harbour closed early this year after a storm in October.\n"
    )
    narrow = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250)
    if origin == "job":
        extra = (*extra, "--from-job", first["id"])
    code, second = run(narrow, folder, tmp_path / "o2", ws, *extra)
    assert code == 0, second
    where = "cache" if origin == "cache" else f"job {first['id']}"
    assert f"reused earlier node outputs: 2 from {where}" in second["message"]
    assert stat(second, "Partitioner")["reused"] == 2  # guide.md and sub/page.html
    assert stat(second, "Partitioner")["success"] == 3
    before = download(ws, first["id"], "notes.txt", "Partitioner")
    after = download(ws, second["id"], "notes.txt", "Partitioner")
    assert "Revised Field Notes" in [e["text"] for e in after]
    assert "Revised Field Notes" not in [e["text"] for e in before]
    for file in ("guide.md", "sub/page.html"):
        assert download(ws, second["id"], file, "Partitioner") == download(
            ws, first["id"], file, "Partitioner"
        )
    code, full = run(narrow, folder, tmp_path / "o3", tmp_path / "fresh", "--trace")
    assert code == 0, full
    assert_same(outputs(tmp_path / "o2"), outputs(tmp_path / "o3"))
    assert [n["elements_out"] for n in second["node_stats"]] == [
        n["elements_out"] for n in full["node_stats"]
    ]


@pytest.mark.parametrize("origin", ["cache", "job"])
def test_a_reused_document_keeps_the_warnings_of_its_reused_nodes(
    tmp_path: Path, origin: str
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    latin = "Caf\xe9 cr\xe8me br\xfbl\xe9e, na\xefve fa\xe7ade.\n\nA second paragraph.\n"
    (folder / "latin.txt").write_bytes(latin.encode("latin-1"))
    ws = tmp_path / "ws"
    code, first = run(
        workflow(tmp_path, "wide", embed=False), folder, tmp_path / "o1", ws, "--trace"
    )
    assert code == 0, first
    (warning,) = first["files"][0]["warnings"]
    assert "the text is not utf-8" in warning  # the partitioner's
    narrow = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250, embed=False)
    extra = ("--from-job", first["id"]) if origin == "job" else ()
    code, second = run(narrow, folder, tmp_path / "o2", ws, "--trace", *extra)
    assert code == 0, second
    assert stat(second, "Partitioner")["reused"] == 1
    code, full = run(narrow, folder, tmp_path / "o3", tmp_path / "fresh", "--trace")
    assert code == 0, full
    assert full["files"][0]["warnings"] == [warning]
    assert second["files"][0]["warnings"] == full["files"][0]["warnings"]


# --- starting from an earlier job ---------------------------------------------------------
@pytest.mark.slow  # the local embedder
def test_from_job_starts_at_the_first_changed_node_and_matches_a_full_run(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, first = run(
        workflow(tmp_path, "wide"), folder, tmp_path / "o1", ws, "--trace", "--no-cache"
    )
    assert code == 0, first
    assert cache_files(ws) == 0  # so only the job's outputs can help below
    narrow = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250)
    code, second = run(
        narrow, folder, tmp_path / "o2", ws, "--trace", "--no-cache", "--from-job", first["id"][:8]
    )
    assert code == 0, second
    assert f"reused earlier node outputs: 3 from job {first['id']}" in second["message"]
    assert [n["reused"] for n in second["node_stats"]] == [3, 0, 0]
    assert stat(second, "Partitioner")["seconds"] == 0
    code, full = run(narrow, folder, tmp_path / "o3", tmp_path / "fresh", "--trace")
    assert code == 0, full
    assert_same(outputs(tmp_path / "o2"), outputs(tmp_path / "o3"))
    assert_same_as_full_run(ws, second["id"], tmp_path / "fresh", full["id"])


@pytest.mark.slow  # the local embedder
def test_from_job_after_adding_an_embedder_reuses_partitions_and_chunks(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, first = run(
        workflow(tmp_path, "chunks", embed=False), folder, tmp_path / "o1", ws, "--trace"
    )
    assert code == 0, first
    embedded = workflow(tmp_path, "embedded")
    code, second = run(
        embedded, folder, tmp_path / "o2", ws, "--no-cache", "--from-job", first["id"]
    )  # untraced: the new job keeps only its output
    assert code == 0, second
    assert [n["reused"] for n in second["node_stats"]] == [3, 3, 0]
    code, full = run(embedded, folder, tmp_path / "o3", tmp_path / "fresh")
    assert code == 0, full
    got, want = outputs(tmp_path / "o2"), outputs(tmp_path / "o3")
    assert_same(got, want)
    assert all("embeddings" in e for elements in got.values() for e in elements)


@pytest.mark.slow  # worker processes
def test_reuse_with_worker_processes(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, first = run(
        workflow(tmp_path, "wide", embed=False), folder, tmp_path / "o1", ws, "--trace"
    )
    assert code == 0, first
    narrow = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250, embed=False)
    code, second = run(narrow, folder, tmp_path / "o2", ws, "--trace", "--workers", "2")
    assert code == 0, second
    assert "reused earlier node outputs: 3 from cache" in second["message"]
    assert [n["reused"] for n in second["node_stats"]] == [3, 0]
    code, full = run(narrow, folder, tmp_path / "o3", tmp_path / "fresh", "--trace")
    assert code == 0, full
    assert outputs(tmp_path / "o2") == outputs(tmp_path / "o3")
    assert_same_as_full_run(ws, second["id"], tmp_path / "fresh", full["id"], NODES[:2])


def test_start_at_an_earlier_node_works(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, first = run(wf, folder, tmp_path / "o1", ws, "--trace")
    assert code == 0, first
    changed = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250, embed=False)
    code, second = run(
        changed, folder, tmp_path / "o2", ws, "--trace", "--from-job", first["id"],
        "--start-at", "Chunker",
    )  # fmt: skip
    assert code == 0, second
    assert [n["reused"] for n in second["node_stats"]] == [3, 0]
    # nothing changed at all: start at the Chunker anyway (it runs again)
    code, third = run(
        wf, folder, tmp_path / "o3", ws, "--from-job", first["id"], "--start-at", "chunker"
    )
    assert code == 0, third
    assert [n["reused"] for n in third["node_stats"]] == [3, 0]
    assert outputs(tmp_path / "o3") == outputs(tmp_path / "o1")


def test_start_at_a_node_after_the_changed_one_is_refused(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, first = run(workflow(tmp_path, "wide"), folder, tmp_path / "o1", ws, "--trace")
    assert code == 0, first
    narrow = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250)
    code, output = run(
        narrow, folder, tmp_path / "o2", ws, "--from-job", first["id"], "--start-at", "Embedder"
    )
    assert code == 2
    assert "--start-at" in output and "the Chunker node's settings differ" in output
    code, output = run(
        narrow, folder, tmp_path / "o2", ws, "--from-job", first["id"], "--start-at", "Nowhere"
    )
    assert code == 2 and "'Nowhere'" in output
    other = json.loads((tmp_path / "wide.json").read_text())
    other["workflow_nodes"][0]["settings"]["include_page_breaks"] = True  # the first node
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, output = run(
        tmp_path / "other.json", folder, tmp_path / "o2", ws, "--from-job", first["id"]
    )
    assert code == 2 and "nothing to reuse" in output
    assert not (tmp_path / "o2").exists()
    jobs = json.loads(cli("jobs", "list", "--json", "--workspace", ws).stdout)
    assert [j["id"] for j in jobs] == [first["id"]]  # refused before any job was made


def test_start_at_the_first_node_says_why_it_is_refused_truthfully(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, first = run(wf, folder, tmp_path / "o1", ws, "--trace")
    assert code == 0, first
    code, output = run(
        wf, folder, tmp_path / "o2", ws, "--from-job", first["id"], "--start-at", "Partitioner"
    )
    if code == 0:  # accepted as a full run: fine too
        return
    assert code == 2 and "Partitioner" in output
    assert "differs" not in output


def test_start_at_needs_from_job(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    wf = workflow(tmp_path, "chunks", embed=False)
    code, output = run(wf, folder, tmp_path / "o", tmp_path / "ws", "--start-at", "Chunker")
    assert code == 2
    assert "--start-at needs --from-job" in output
    assert not (tmp_path / "o").exists()


def test_from_job_of_an_untraced_job_is_refused(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, first = run(wf, folder, tmp_path / "o1", ws)
    assert code == 0, first
    changed = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250, embed=False)
    code, output = run(changed, folder, tmp_path / "o2", ws, "--trace", "--from-job", first["id"])
    assert code == 2
    assert f"job {first['id']} kept no node outputs" in output and "--trace" in output
    code, output = run(changed, folder, tmp_path / "o2", ws, "--from-job", "no-such-job")
    assert code == 2 and "not found" in output


# --- the reused run's job -----------------------------------------------------------------
@pytest.mark.parametrize("origin", ["cache", "job"])
def test_a_reused_job_keeps_every_node_output(tmp_path: Path, origin: str) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, first = run(
        workflow(tmp_path, "chunks", embed=False), folder, tmp_path / "o1", ws, "--trace"
    )
    assert code == 0, first
    changed = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250, embed=False)
    extra = ("--from-job", first["id"], "--no-cache") if origin == "job" else ()
    code, second = run(changed, folder, tmp_path / "o2", ws, "--trace", *extra)
    assert code == 0, second
    assert stat(second, "Partitioner")["reused"] == 3
    shown = {(o["file_id"], o["node_id"]) for o in second["output_node_files"]}
    assert len(shown) == 3 * 2
    for file in FILES:
        parts = download(ws, second["id"], file, "Partitioner")
        assert parts == download(ws, first["id"], file, "Partitioner")
        chunks = download(ws, second["id"], file, "Chunker")
        assert chunks == download(ws, second["id"], file)  # the last node's is the output
        assert "CompositeElement" in {e["type"] for e in chunks}
    result = cli(
        "jobs", "download", second["id"], "--file", "notes.txt", "--node", "Partitioner",
        "--workspace", ws,
    )  # fmt: skip
    assert result.exit_code == 0
    assert "Field Notes from the Harbour" in [e["text"] for e in json.loads(result.stdout)]


# --- the cache: info, clear, its bound ------------------------------------------------------
def test_cache_info_and_clear(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, _ = run(wf, folder, tmp_path / "o1", ws, "--trace")
    assert code == 0
    info = json.loads(cli("cache", "info", "--json", "--workspace", ws).stdout)
    assert info["files"] == 3 * 2  # every document, every node
    assert info["bytes"] > 0 and info["budget_bytes"] == 1024 << 20
    assert Path(info["path"]) == ws / "cache" / "nodes"
    text = cli("cache", "info", "--workspace", ws)
    assert text.exit_code == 0 and "6 node outputs" in text.output
    cleared = cli("cache", "clear", "--workspace", ws)
    assert cleared.exit_code == 0 and "removed 6 cached node outputs" in cleared.output
    assert cache_files(ws) == 0
    assert not [p for p in (ws / "cache" / "nodes").rglob("*") if p.is_file()]
    code, second = run(wf, folder, tmp_path / "o2", ws, "--trace")
    assert code == 0, second
    assert not second["message"] and all(n["reused"] == 0 for n in second["node_stats"])
    # the job records and their outputs stay
    assert download(ws, second["id"], "notes.txt", "Partitioner")


def test_cache_bound_from_the_environment(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    info = cli("cache", "info", "--json", "--workspace", ws, env={"INGESTFLOW_CACHE_MB": "1"})
    assert json.loads(info.stdout)["budget_bytes"] == 1 << 20
    env = {"INGESTFLOW_CACHE_MB": "0"}  # no room at all: nothing is kept
    code, _ = run(wf, folder, tmp_path / "o1", ws, "--trace", env=env)
    assert code == 0
    assert cache_files(ws) == 0
    code, second = run(wf, folder, tmp_path / "o2", ws, "--trace", env=env)
    assert code == 0 and not second["message"]


def test_a_run_prunes_the_cache_to_its_bound(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    paragraph = "The harbour opened in early spring and the first ships arrived. " * 40
    for n in range(3):  # each about 0.2 MB of partitioned elements, 0.45 MB of chunks
        (folder / f"big{n}.txt").write_text(f"{n}\n\n" + "\n\n".join([paragraph] * 60))
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "chunks", embed=False)
    code, record = run(wf, folder, tmp_path / "o", ws, "--trace", env={"INGESTFLOW_CACHE_MB": "1"})
    assert code == 0, record
    info = json.loads(cli("cache", "info", "--json", "--workspace", ws).stdout)
    outputs_kept = sum(p.stat().st_size for p in (ws / "jobs").rglob("*.json"))
    assert outputs_kept > 3 << 19  # more than the bound was made, in files under it
    assert 0 < info["files"] < 6 and info["bytes"] <= 1 << 20
    code, again = run(wf, folder, tmp_path / "o2", ws, "--trace", env={"INGESTFLOW_CACHE_MB": "1"})
    assert code == 0, again  # the most recently written outputs were kept
    assert "reused earlier node outputs: 1 from cache" in again["message"]


def _put(cache: Any, key: str, size: int, mtime: float) -> None:
    cache.put(key, [{"type": "NarrativeText", "element_id": key, "text": "x" * size}])
    os.utime(cache._path(key), (mtime, mtime))


def test_node_cache_prunes_least_recently_used_first(tmp_path: Path) -> None:
    from ingestflow.runner.reuse import NodeCache

    cache = NodeCache(tmp_path / "nodes", budget_mb=1)
    assert cache.budget == 1 << 20
    old = time.time() - 1000
    keys = [f"{n:02d}" + "ab" * 31 for n in range(4)]
    for n, key in enumerate(keys):
        _put(cache, key, 400_000, old + 10 * n)  # keys[0] oldest
    assert cache.usage()[0] == 4 and cache.usage()[1] > 1 << 20
    assert cache.get(keys[0]) is not None  # used now: the most recent
    assert cache.prune() == 2
    assert [cache.has(k) for k in keys] == [True, False, False, True]
    files, size = cache.usage()
    assert files == 2 and size <= 1 << 20
    assert cache.prune() == 0  # fits: nothing more goes


def test_node_cache_treats_a_damaged_file_as_absent(tmp_path: Path) -> None:
    from ingestflow.runner.reuse import NodeCache

    cache = NodeCache(tmp_path / "nodes")
    key = "cd" * 32
    cache.put(key, [{"type": "Title", "text": "ok"}])
    assert cache.get(key) == ([{"type": "Title", "text": "ok"}], {})
    cache._path(key).write_text("{not json")
    assert cache.get(key) is None
    assert cache.clear() == (1, len("{not json"))
    assert cache.usage() == (0, 0)


def test_node_cache_bound_of_zero_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestflow.runner.reuse import DEFAULT_CACHE_MB, NodeCache

    monkeypatch.setenv("INGESTFLOW_CACHE_MB", "0")
    assert NodeCache(tmp_path).budget == 0
    monkeypatch.setenv("INGESTFLOW_CACHE_MB", "3")
    assert NodeCache(tmp_path).budget == 3 << 20
    monkeypatch.setenv("INGESTFLOW_CACHE_MB", "lots")
    assert NodeCache(tmp_path).budget == DEFAULT_CACHE_MB << 20


def test_node_cache_explicit_bound_of_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingestflow.runner.reuse import NodeCache

    monkeypatch.delenv("INGESTFLOW_CACHE_MB", raising=False)
    assert NodeCache(tmp_path, budget_mb=0).budget == 0


def test_a_cache_file_removed_meanwhile_does_not_fail_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestflow.runner.reuse import NodeCache

    listed = NodeCache.files

    def files_one_gone(self: NodeCache) -> Any:  # as if a concurrent prune had just removed one
        yield from listed(self)
        yield self.root / "ff" / ("ff" * 32 + ".json")

    monkeypatch.setattr(NodeCache, "files", files_one_gone)
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, record = run(
        workflow(tmp_path, "chunks", embed=False), folder, tmp_path / "o", ws, "--trace"
    )
    jobs = json.loads(cli("jobs", "list", "--json", "--workspace", ws).stdout)
    assert [j["status"] for j in jobs] == ["COMPLETED"]
    assert code == 0, record
