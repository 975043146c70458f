"""Deletions reach the destination: with reprocess_all false, a document that left the source
since the last run has its output removed (local files, Milvus Lite rows, wiki pages), counted in
the job; --keep-deleted keeps it; a listing that may be incomplete or is empty removes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.fakes.confluence import FakeConfluence, Fault
from tests.runner import test_wiki_run as wiki_run
from tests.runner.test_crash import _workflow
from tests.runner.test_vectordb_kill import _rows, cli_here
from tests.runner.test_vectordb_kill import setup as milvus_setup

runner = CliRunner()


def _inputs(tmp: Path) -> Path:
    folder = tmp / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("Alpha document.\n\nIt stays.")
    (folder / "sub" / "b.md").write_text("# Beta\n\nIt leaves the source.\n")
    (folder / "c.html").write_text("<p>Gamma stays too.</p>")
    return folder


def _run(tmp: Path, *args: str, inputs: list[Path] | None = None) -> tuple[int, dict[str, Any]]:
    wf = _workflow(tmp)  # reprocess_all false, fast partition
    given = [a for p in inputs or [tmp / "in"] for a in ("-i", str(p))]
    result = runner.invoke(
        app,
        [
            *("run", str(wf), *given, "-o", str(tmp / "out"), "-w", "1"),
            *("--workspace", str(tmp / "ws"), "--json", *args),
        ],
    )
    assert result.stdout.startswith("{"), result.output
    return result.exit_code, json.loads(result.stdout)


def _outputs(tmp: Path) -> list[str]:
    out = tmp / "out"
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json"))


def test_a_file_that_left_the_source_leaves_the_output_and_is_counted(tmp_path: Path) -> None:
    folder = _inputs(tmp_path)
    code, first = _run(tmp_path)
    assert code == 0 and first["deleted"] == 0
    assert _outputs(tmp_path) == ["a.txt.json", "c.html.json", "sub/b.md.json"]
    (folder / "sub" / "b.md").unlink()
    code, second = _run(tmp_path)
    assert code == 0, second
    assert _outputs(tmp_path) == ["a.txt.json", "c.html.json"]
    assert not (tmp_path / "out" / "sub").exists()  # the folder it left empty went with it
    assert second["deleted"] == 1
    (gone,) = second["deleted_files"]
    assert gone["filename"] == "sub/b.md" and gone["status"] == "DELETED"
    assert "1 document(s) that left the source were removed" in second["message"]
    assert {f["status"] for f in second["files"]} == {"SKIPPED"}
    shown = runner.invoke(app, ["jobs", "show", second["id"], "--workspace", str(tmp_path / "ws")])
    assert "sub/b.md  removed (left the source)" in shown.stdout
    code, third = _run(tmp_path)  # removed once: not again
    assert code == 0 and third["deleted"] == 0
    (folder / "sub" / "b.md").write_text("# Beta\n\nIt is back.\n")
    code, fourth = _run(tmp_path)
    assert {f["filename"]: f["status"] for f in fourth["files"]}["sub/b.md"] == "SUCCESS"
    assert "sub/b.md.json" in _outputs(tmp_path)


def test_keep_deleted_keeps_them_until_a_run_without_it(tmp_path: Path) -> None:
    folder = _inputs(tmp_path)
    _run(tmp_path)
    (folder / "a.txt").unlink()
    code, kept = _run(tmp_path, "--keep-deleted")
    assert code == 0 and kept["deleted"] == 0
    assert "a.txt.json" in _outputs(tmp_path)
    code, removed = _run(tmp_path)
    assert code == 0 and removed["deleted"] == 1
    assert "a.txt.json" not in _outputs(tmp_path)


def test_an_empty_listing_removes_nothing_and_says_why(tmp_path: Path) -> None:
    folder = _inputs(tmp_path)
    _run(tmp_path)
    for path in [*folder.rglob("*.*")]:
        path.unlink()
    code, record = _run(tmp_path)
    assert code == 0 and record["deleted"] == 0
    assert _outputs(tmp_path) == ["a.txt.json", "c.html.json", "sub/b.md.json"]
    assert "3 document(s) written by earlier runs are no longer listed" in record["message"]
    assert "the source listed no document at all" in record["message"]


def test_a_listing_that_skipped_a_folder_removes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _inputs(tmp_path)
    _run(tmp_path)
    real_walk = os.walk

    def walk(top: Any, onerror: Any = None, **kw: Any) -> Any:
        # root may read any folder; what the OS says to anyone else is simulated here
        for dirpath, dirnames, filenames in real_walk(top, onerror=onerror, **kw):
            if Path(dirpath).name == "sub":
                onerror(PermissionError(13, "Permission denied", dirpath))
                continue
            yield dirpath, dirnames, filenames

    monkeypatch.setattr("ingestflow.connectors.local_walk.os.walk", walk)
    code, record = _run(tmp_path)
    assert code == 0 and record["deleted"] == 0
    assert "sub/b.md.json" in _outputs(tmp_path)
    assert "the local source skipped entries it could not read" in record["message"]
    assert "sub: skipped, permission denied" in record["message"]


def test_other_inputs_are_another_source_and_reprocess_all_removes_nothing(
    tmp_path: Path,
) -> None:
    folder = _inputs(tmp_path)
    _run(tmp_path)
    code, record = _run(tmp_path, inputs=[folder / "a.txt"])  # a run over one of the files
    assert code == 0 and record["deleted"] == 0
    assert len(_outputs(tmp_path)) == 3
    (folder / "c.html").unlink()
    _workflow(tmp_path, reprocess_all=True)
    wf = tmp_path / "wf.json"
    result = runner.invoke(
        app,
        [
            *("run", str(wf), "-i", str(folder), "-o", str(tmp_path / "out"), "-w", "1"),
            *("--workspace", str(tmp_path / "ws"), "--json"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["deleted"] == 0
    assert "c.html.json" in _outputs(tmp_path)


def test_a_removal_that_fails_fails_alone_and_is_tried_again(tmp_path: Path) -> None:
    folder = _inputs(tmp_path)
    _run(tmp_path)
    (folder / "a.txt").unlink()
    blocked = tmp_path / "out" / "a.txt.json"
    blocked.unlink()
    (blocked / "something").mkdir(parents=True)  # where its output was, a folder now
    code, record = _run(tmp_path)
    assert code == 1, record
    assert record["deleted"] == 0
    (failed,) = record["failed_files"]
    assert failed["document"] == "a.txt"
    assert failed["error"].startswith("removing its output (it left the source) failed:")
    assert record["deleted_files"][0]["status"] == "FAILED"
    assert "1 removal(s) failed; the next incremental run tries again" in record["message"]
    (blocked / "something").rmdir()
    blocked.rmdir()
    code, again = _run(tmp_path)
    assert code == 0 and again["deleted"] == 1


@pytest.mark.slow
def test_a_deleted_document_leaves_milvus_lite(tmp_path: Path) -> None:
    docs, conn, wf = milvus_setup(tmp_path)
    db = tmp_path / "milvus.db"
    args = ["run", str(wf), "-i", str(docs), "--destination", str(conn)]
    args += ["--workspace", str(tmp_path / "ws"), "--workers", "1", "--json"]
    first = cli_here(db, *args)
    assert first.exit_code == 0, first.output
    before = _rows(db)
    ids = {f["filename"]: f["file_id"] for f in json.loads(first.stdout)["files"]}
    assert {r for r, _ in before} == set(ids.values())
    (docs / "garden.md").unlink()
    kept = cli_here(db, *args, "--keep-deleted")
    assert kept.exit_code == 0, kept.output
    assert json.loads(kept.stdout)["deleted"] == 0
    assert _rows(db) == before
    second = cli_here(db, *args)
    assert second.exit_code == 0, second.output
    record = json.loads(second.stdout)
    assert record["deleted"] == 1
    assert record["deleted_files"][0]["record_id"] == ids["garden.md"]
    after = _rows(db)
    assert after == [row for row in before if row[0] == ids["finance.txt"]]
    assert after  # the other document's rows are all there


def _wiki_run(tmp: Path, wiki: FakeConfluence) -> tuple[int, Any]:
    source = wiki_run.connector(tmp, wiki, extract_files=False, extract_images=False)
    return wiki_run.run(tmp, "--source", str(source))


def test_a_page_removed_from_the_space_leaves_the_output(
    tmp_path: Path, wiki: FakeConfluence
) -> None:
    code, first = _wiki_run(tmp_path, wiki)
    assert code == 0, first
    assert "DEV/21-note-1.html.json" in _outputs(tmp_path)
    del wiki.pages["21"]
    code, second = _wiki_run(tmp_path, wiki)
    assert code == 0, second
    assert second["deleted"] == 1
    assert second["deleted_files"][0]["filename"] == "DEV/21-note-1.html"
    assert "DEV/21-note-1.html.json" not in _outputs(tmp_path)
    assert len(_outputs(tmp_path)) == 4


@pytest.mark.slow
def test_a_wiki_that_cannot_list_its_pages_removes_nothing(
    tmp_path: Path, wiki: FakeConfluence
) -> None:
    code, first = _wiki_run(tmp_path, wiki)
    assert code == 0, first
    wiki.inject("/rest/api/content", Fault.server_error(500, times=None))  # every listing
    code, second = _wiki_run(tmp_path, wiki)
    assert code == 1  # the listing failed: said as a failed document
    assert second["deleted"] == 0
    assert len(_outputs(tmp_path)) == 5
    assert "could not list the pages of space DEV" in second["message"]
    assert "were kept in the destination" in second["message"]


def test_a_wiki_listing_cut_at_its_limit_removes_nothing(
    tmp_path: Path, wiki: FakeConfluence
) -> None:
    code, first = _wiki_run(tmp_path, wiki)
    assert code == 0, first
    source = wiki_run.connector(
        tmp_path, wiki, extract_files=False, extract_images=False, max_num_of_docs_from_each_space=3
    )
    code, second = wiki_run.run(tmp_path, "--source", str(source))
    assert code == 0, second
    assert second["deleted"] == 0
    assert "read max_num_of_docs_from_each_space (3) pages of space DEV" in second["message"]
    assert len(_outputs(tmp_path)) == 5


wiki = wiki_run.wiki  # the fixture: a fake Confluence with one space of five pages
