"""Tuning a workflow from the CLI: `jobs diff` between two runs, `jobs show` with per-node numbers
and settings (secrets masked), `jobs download` of one node's outputs into a folder, and
durations in seconds."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.runner.test_reuse import FILES, cli, download, run, sample, stat, workflow

SECRET = "sk-secret-123"


@pytest.fixture(autouse=True)
def default_cache_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node cache's default bound, whatever the environment says."""
    monkeypatch.delenv("INGESTFLOW_CACHE_MB", raising=False)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A traced run with max_characters 800, a traced one with 300, an untraced one with 300
    (Fast → chunk_by_title), all in one workspace."""
    tmp = tmp_path_factory.mktemp("tuning")
    folder = sample(tmp)
    ws = tmp / "ws"
    wide = workflow(tmp, "wide", embed=False)
    narrow = workflow(tmp, "narrow", max_characters=300, new_after_n_chars=250, embed=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("INGESTFLOW_CACHE_MB", raising=False)
        code, a = run(wide, folder, tmp / "o1", ws, "--trace")
        assert code == 0, a
        code, b = run(narrow, folder, tmp / "o2", ws, "--trace")
        assert code == 0, b
        code, c = run(narrow, folder, tmp / "o3", ws)
        assert code == 0, c
    return {"ws": ws, "a": a, "b": b, "untraced": c, "tmp": tmp}


def diff(ws: Path, *args: str) -> Any:
    return cli("jobs", "diff", *args, "--workspace", ws)


def changed_blocks(out: str, mark: str) -> list[str]:
    """The changed elements `jobs diff` printed with `mark` ("-" or "+"), each a whole text
    wrapped over lines, as one line with its whitespace collapsed."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in out.splitlines():
        stripped = line.strip()
        if stripped.startswith(("- [", "+ [")):
            current = [stripped] if stripped.startswith(f"{mark} [") else None
            if current is not None:
                blocks.append(current)
        elif current is not None and (line.startswith("       ") or not stripped):
            current.append(stripped)
        else:
            current = None
    return [" ".join(" ".join(block).split()) for block in blocks]


# --- jobs diff ------------------------------------------------------------------------------
def test_diff_names_the_changed_setting_and_counts_per_file(two_runs: dict[str, Any]) -> None:
    ws, a, b = two_runs["ws"], two_runs["a"], two_runs["b"]
    result = diff(ws, a["id"][:8], b["id"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"A {a['id'][:8]} wide   B {b['id'][:8]} narrow" in out
    assert "settings.max_characters: 800 → 300" in out
    assert "settings.new_after_n_chars: 600 → 250" in out
    assert "combine_text_under_n_chars" not in out  # unchanged settings are not listed
    partitioner = out.split("1. Partitioner")[1].split("2. Chunker")[0]
    chunker = out.split("2. Chunker")[1]
    assert "same settings" in partitioner and "same settings" not in chunker
    for file in FILES:
        parts = len(download(ws, a["id"], file, "Partitioner"))
        (line,) = [x for x in partitioner.splitlines() if x.strip().startswith(f"{file}:")]
        assert line.strip().startswith(f"{file}: {parts} (") and f"→ {parts} (" in line
        assert "unchanged; same types" in line
        before = len(download(ws, a["id"], file, "Chunker"))
        after = len(download(ws, b["id"], file, "Chunker"))
        (line,) = [x for x in chunker.splitlines() if x.strip().startswith(f"{file}:")]
        assert line.strip().startswith(f"{file}: {before} (") and f"→ {after} (" in line
    notes_line = next(x for x in chunker.splitlines() if x.strip().startswith("notes.txt:"))
    assert re.search(r"\d+ changed; CompositeElement 1→\d", notes_line)


def test_diff_json_is_complete(two_runs: dict[str, Any]) -> None:
    ws, a, b = two_runs["ws"], two_runs["a"], two_runs["b"]
    result = diff(ws, a["id"], b["id"], "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["a"]["id"] == a["id"] and data["b"]["id"] == b["id"]
    assert data["a"]["workflow"] == "wide" and data["b"]["workflow"] == "narrow"
    assert [(n["position"], n["name"]) for n in data["nodes"]] == [
        (1, "Partitioner"),
        (2, "Chunker"),
    ]
    partitioner, chunker = data["nodes"]
    assert partitioner["settings"] == {}
    assert chunker["settings"] == {
        "settings.max_characters": [800, 300],
        "settings.new_after_n_chars": [600, 250],
    }
    for node in data["nodes"]:
        assert [row["file"] for row in node["files"]] == sorted(FILES)
        for row in node["files"]:
            ea = download(ws, a["id"], row["file"], node["name"])
            eb = download(ws, b["id"], row["file"], node["name"])
            for side, elements in (("a", ea), ("b", eb)):
                lengths = [len(e["text"]) for e in elements]
                assert row[side]["elements"] == len(elements)
                assert row[side]["types"] == dict(Counter(e["type"] for e in elements))
                assert row[side]["text_length"]["min"] == min(lengths)
                assert row[side]["text_length"]["max"] == max(lengths)
            assert isinstance(row["changed"], int)
            listed = 0
            for change in row["changes"]:  # each change quotes the elements it is about
                i, j = change["a_index"], change["b_index"]
                assert change["a"] == [
                    {"type": e["type"], "text": e["text"]} for e in ea[i : i + len(change["a"])]
                ]
                assert change["b"] == [
                    {"type": e["type"], "text": e["text"]} for e in eb[j : j + len(change["b"])]
                ]
                assert change["op"] in ("replace", "insert", "delete")
                listed += max(len(change["a"]), len(change["b"]))
            assert listed == row["changed"]
            texts = [[(e["type"], e["text"]) for e in elements] for elements in (ea, eb)]
            assert (row["changed"] == 0) == (texts[0] == texts[1])
            if node["name"] == "Partitioner":  # same texts, new ids: no change
                assert row["changed"] == 0 and row["changes"] == []
            elif row["file"] != "sub/page.html":  # small enough for either size
                assert row["changed"] > 0


def test_diff_of_one_node_and_file_shows_the_texts(two_runs: dict[str, Any]) -> None:
    ws, a, b = two_runs["ws"], two_runs["a"], two_runs["b"]
    result = diff(ws, a["id"], b["id"], "--node", "Chunker", "--file", "notes.txt")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "2. Chunker" in out and "Partitioner" not in out
    assert "guide.md" not in out and "sub/page.html" not in out
    before = download(ws, a["id"], "notes.txt", "Chunker")
    after = download(ws, b["id"], "notes.txt", "Chunker")
    assert max(len(e["text"]) for e in before) > 160  # long enough to have been cut before
    # whole changed chunks, wrapped to the terminal's width (no line wider than it)
    assert changed_blocks(out, "-") == [
        f"- [{e['type']}] {' '.join(e['text'].split())}" for e in before
    ]
    assert changed_blocks(out, "+") == [
        f"+ [{e['type']}] {' '.join(e['text'].split())}" for e in after
    ]
    assert max(len(line) for line in out.splitlines() if line.startswith("     ")) <= 80
    by_position = diff(ws, a["id"], b["id"], "--node", "2", "--file", "notes.txt")
    assert by_position.exit_code == 0 and by_position.output.replace("\n", "") == out.replace(
        "\n", ""
    )


def test_diff_refuses_an_unknown_node_or_file_and_a_job_with_itself(
    two_runs: dict[str, Any],
) -> None:
    ws, a, b = two_runs["ws"], two_runs["a"], two_runs["b"]
    unknown = diff(ws, a["id"], b["id"], "--node", "Embedder")
    assert unknown.exit_code == 2
    assert "no node 'Embedder' in either job; nodes: Chunker, Partitioner" in unknown.output
    no_file = diff(ws, a["id"], b["id"], "--file", "missing.pdf")
    assert no_file.exit_code == 2 and "missing.pdf" in no_file.output
    itself = diff(ws, a["id"], a["id"][:8])
    assert itself.exit_code == 2 and "give two different jobs" in itself.output
    missing = diff(ws, a["id"], "no-such-job")
    assert missing.exit_code == 2 and "not found" in missing.output


def test_diff_with_an_untraced_job_says_what_was_not_kept(two_runs: dict[str, Any]) -> None:
    ws, a, c = two_runs["ws"], two_runs["a"], two_runs["untraced"]
    data = json.loads(diff(ws, a["id"], c["id"], "--json").stdout)
    partitioner, chunker = data["nodes"]
    for row in partitioner["files"]:
        assert row["changed"] is None and row["b"] is None
        assert row["note"].startswith(
            f"job {c['id'][:8]} kept no output of this node (run with --trace)"
        )
    for row in chunker["files"]:  # the last node's output is the run's output
        assert isinstance(row["changed"], int) and "note" not in row
        assert row["b"]["elements"] == len(download(ws, c["id"], row["file"]))
    text = diff(ws, a["id"], c["id"])
    assert text.exit_code == 0 and "kept no output of this node (run with --trace)" in text.output


def test_diff_of_untraced_runs_into_one_folder_does_not_pass_off_the_later_output(
    tmp_path: Path,
) -> None:
    folder = sample(tmp_path)
    ws, out = tmp_path / "ws", tmp_path / "out"
    code, a = run(workflow(tmp_path, "wide", embed=False), folder, out, ws)
    assert code == 0, a
    narrow = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250, embed=False)
    code, b = run(narrow, folder, out, ws)  # the same output folder (as the default `output`)
    assert code == 0, b
    counts = {f["filename"]: f["elements"] for f in a["files"]}
    assert counts != {f["filename"]: f["elements"] for f in b["files"]}
    data = json.loads(diff(ws, a["id"], b["id"], "--json").stdout)
    for row in data["nodes"][1]["files"]:  # the Chunker: the last node
        assert row["a"] is None or row["a"]["elements"] == counts[row["file"]], row


@pytest.mark.slow  # the local embedder
def test_diff_of_a_node_only_one_job_has_says_so(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, a = run(workflow(tmp_path, "chunks", embed=False), folder, tmp_path / "o1", ws, "--trace")
    assert code == 0, a
    code, embedded = run(workflow(tmp_path, "embedded"), folder, tmp_path / "o2", ws, "--trace")
    assert code == 0, embedded
    for first, second in ((a, embedded), (embedded, a)):
        data = json.loads(diff(ws, first["id"], second["id"], "--json").stdout)
        node = data["nodes"][2]
        assert node["name"] == "Embedder"
        assert node["settings"]["type"] in (["embed", None], [None, "embed"])
        for row in node["files"]:
            assert row["changed"] is None
            assert "--trace" not in row["note"], row["note"]  # both jobs kept every output
            assert a["id"][:8] in row["note"]


@pytest.mark.slow  # the local embedder
def test_diff_of_the_fixture_workflow_covers_every_node(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    fixture = FIXTURES / "workflows" / "valid" / "02-fast-by-title-embed.json"
    code, a = run(fixture, folder, tmp_path / "o1", ws, "--trace")
    assert code == 0, a
    narrow = workflow(tmp_path, "narrow", max_characters=300, new_after_n_chars=250)
    code, b = run(narrow, folder, tmp_path / "o2", ws, "--trace")
    assert code == 0, b
    result = diff(ws, a["id"], b["id"])
    assert result.exit_code == 0, result.output
    assert "settings.max_characters: 800 → 300" in result.output
    assert "3. Embedder\n   same settings" in result.output
    data = json.loads(diff(ws, a["id"], b["id"], "--json").stdout)
    assert [n["name"] for n in data["nodes"]] == ["Partitioner", "Chunker", "Embedder"]
    embedder = data["nodes"][2]
    assert embedder["settings"] == {}
    assert (
        sum(row["b"]["elements"] for row in embedder["files"])
        == stat(b, "Embedder")["elements_out"]
    )
    changed = {row["file"]: row["changed"] for row in embedder["files"]}
    assert changed["notes.txt"] > 0 and changed["guide.md"] > 0


# --- jobs show -------------------------------------------------------------------------------
def test_jobs_show_prints_per_node_numbers_and_masked_settings(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "secretive", embed=False, unstructured_api_key=SECRET)
    code, record = run(wf, folder, tmp_path / "out", ws, "--trace")
    assert code == 0, record
    shown = cli("jobs", "show", record["id"][:8], "--workspace", ws)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    for node in record["node_stats"]:
        (row,) = [x for x in lines if x.startswith(f"│ {node['node_name']} ")]
        cells = [c.strip() for c in row.strip("│").split("│")]
        assert cells[2:7] == [
            str(node["success"]),
            str(node["failure"]),
            str(node["elements_in"]),
            str(node["elements_out"]),
            f"{node['seconds']:.2f}",
        ]
    flat = " ".join(shown.output.split())
    assert 'Partitioner (unstructured_api): {"strategy": "fast"}' in flat
    assert "Chunker (chunk_by_title): {" in flat
    assert '"max_characters": 800' in flat and '"new_after_n_chars": 600' in flat
    assert '"unstructured_api_key": "********"' in flat
    for file in FILES:
        assert file in shown.output
    # the secret is nowhere: not in any output, record, report, download or stored file
    said = [shown.output]
    for args in (
        ("jobs", "show", record["id"], "--json"),
        ("jobs", "list", "--json"),
        ("jobs", "download", record["id"], "--file", "notes.txt", "--node", "Partitioner"),
        ("jobs", "report", record["id"], "--html", tmp_path / "report.html"),
        ("cache", "info"),
    ):
        result = cli(*args, "--workspace", ws)
        assert result.exit_code == 0, result.output
        said.append(result.output)
    code, again = run(wf, folder, tmp_path / "out2", ws, "--trace")
    assert code == 0
    said.append(json.dumps(again))
    said.append(diff(ws, record["id"], again["id"], "--json").output)
    said.append((tmp_path / "report.html").read_text())
    assert not [s for s in said if SECRET in s]
    stored = [p for root in (ws, tmp_path / "out") for p in root.rglob("*") if p.is_file()]
    assert not [p for p in stored if SECRET.encode() in p.read_bytes()]


def test_jobs_show_of_a_job_that_failed_at_precheck_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("INGESTFLOW_VOYAGEAI_BASE_URL", raising=False)
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    body = json.loads(workflow(tmp_path, "remote").read_text())
    body["workflow_nodes"][2].update(subtype="voyageai", settings={"model_name": "voyage-law-2"})
    wf = tmp_path / "remote.json"
    wf.write_text(json.dumps(body))
    code, output = run(wf, folder, tmp_path / "out", ws)
    assert code == 3 and "INGESTFLOW_VOYAGEAI_BASE_URL" in output
    (job,) = json.loads(cli("jobs", "list", "--json", "--workspace", ws).stdout)
    assert job["status"] == "FAILED"
    shown = cli("jobs", "show", job["id"], "--workspace", ws)
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert "FAILED / FAILED" in flat
    assert "note: embedder node 'Embedder': model `voyage-law-2` of provider `voyageai`" in flat
    assert "set INGESTFLOW_VOYAGEAI_BASE_URL" in flat


def test_jobs_show_of_a_job_whose_documents_failed_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "empty.txt").write_bytes(b"")
    ws = tmp_path / "ws"
    code, record = run(workflow(tmp_path, "chunks", embed=False), folder, tmp_path / "out", ws)
    assert code == 1, record
    assert record["status"] == "FAILED"
    (failed,) = record["failed_files"]
    shown = cli("jobs", "show", record["id"], "--workspace", ws)
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert "FAILED / FAILED" in flat
    assert f"✗ empty.txt: {' '.join(failed['error'].split())}" in flat
    assert f"✗ {record['files'][0]['file_id'][:8]} empty.txt" in flat
    assert "empty" in failed["error"].lower()


def test_jobs_show_of_a_reused_run_counts_what_was_reused(two_runs: dict[str, Any]) -> None:
    ws, b = two_runs["ws"], two_runs["b"]  # b reused the cached partitions of a
    assert [n["reused"] for n in b["node_stats"]] == [3, 0]
    shown = cli("jobs", "show", b["id"], "--workspace", ws)
    assert shown.exit_code == 0, shown.output
    header = next(x for x in shown.output.splitlines() if x.startswith("┃ node"))
    assert [c.strip() for c in header.strip("┃").split("┃")][-1] == "reused"
    (row,) = [x for x in shown.output.splitlines() if x.startswith("│ Partitioner ")]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[-1] == "3" and cells[-2] == "0.00"  # reused, so no time spent
    assert "note: reused earlier node outputs: 3 from cache" in " ".join(shown.output.split())


# --- jobs download of one node into a folder --------------------------------------------------
def test_jobs_download_writes_one_json_per_document_by_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, record = run(
        workflow(tmp_path, "chunks", embed=False), folder, tmp_path / "out", ws, "--trace"
    )
    assert code == 0, record
    job = record["id"]
    target = tmp_path / "exported" / "parts"
    result = cli(
        "jobs", "download", job, "--node", "Partitioner", "--to", target, "--workspace", ws
    )
    assert result.exit_code == 0, result.output
    assert f"wrote 3 files into {target}" in result.output
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert written == ["guide.md.json", "notes.txt.json", "sub/page.html.json"]
    for file in FILES:
        assert json.loads((target / f"{file}.json").read_text()) == download(
            ws, job, file, "Partitioner"
        )
    monkeypatch.chdir(tmp_path)  # no --to: a folder named by the job and the node
    result = cli("jobs", "download", job[:8], "--node", "Partitioner", "--workspace", ws)
    assert result.exit_code == 0, result.output
    default = tmp_path / f"{job[:8]}-Partitioner"
    assert sorted(p.relative_to(default).as_posix() for p in default.rglob("*.json")) == written
    result = cli("jobs", "download", job, "--workspace", ws)  # no node: the output
    assert result.exit_code == 0, result.output
    output = tmp_path / f"{job[:8]}-output"
    for file in FILES:
        assert json.loads((output / f"{file}.json").read_text()) == json.loads(
            (tmp_path / "out" / f"{file}.json").read_text()
        )


def test_jobs_download_of_an_untraced_node_says_how_to_keep_it(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    ws = tmp_path / "ws"
    code, record = run(workflow(tmp_path, "chunks", embed=False), folder, tmp_path / "out", ws)
    assert code == 0, record
    target = tmp_path / "parts"
    result = cli(
        "jobs", "download", record["id"], "--node", "Partitioner", "--to", target, "--workspace", ws
    )
    assert result.exit_code == 2 and "--trace" in result.output
    unknown = cli(
        "jobs", "download", record["id"], "--node", "Nope", "--to", target, "--workspace", ws
    )
    assert unknown.exit_code == 2 and "'Nope'" in unknown.output


# --- durations --------------------------------------------------------------------------------
def test_durations_print_as_seconds_not_iso_8601(two_runs: dict[str, Any]) -> None:
    ws, a = two_runs["ws"], two_runs["a"]
    assert a["runtime"].startswith("PT")  # the record keeps ISO 8601 (the REST shape)
    shown = cli("jobs", "show", a["id"], "--workspace", ws)
    assert shown.exit_code == 0
    title = shown.output.splitlines()[0]
    assert re.search(r"· \d+\.\d s\b", title), title
    expected = f"{float(a['runtime'][2:-1]):.1f} s"
    assert title.rstrip().endswith(expected)
    listed = cli("jobs", "list", "--workspace", ws, env={"COLUMNS": "200"})
    assert listed.exit_code == 0
    rows = [x for x in listed.output.splitlines() if x.startswith("│ ")]
    assert len(rows) == 3
    assert all(re.search(r"│ \d+\.\d s +│", row) for row in rows), listed.output
    assert f"│ {expected} " in next(r for r in rows if r.startswith(f"│ {a['id'][:8]}"))
    for result in (shown, listed):
        assert "PT" not in result.output


def test_the_run_summary_prints_seconds(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    wf = workflow(tmp_path, "chunks", embed=False)
    result = cli(
        "run",
        wf,
        "-i",
        folder,
        "-o",
        tmp_path / "out",
        "--workspace",
        tmp_path / "ws",
        "--workers",
        "1",
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"COMPLETED / SUCCESS · \d+\.\d s", result.output)
    assert "PT" not in result.output
