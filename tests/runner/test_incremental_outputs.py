"""An incremental run skips a document only while the output at the destination is what this
document's last run left there: another run that rewrote the same output name from another
source (or another workflow) makes it written again (issue 37, 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ingestflow.cli import app
from tests.runner.test_crash import FAST, _run, runner


def _statuses(result: object) -> dict[str, str]:
    record = json.loads(result.stdout)  # type: ignore[attr-defined]
    return {f["filename"]: f["status"] for f in record["files"]}


def _texts(path: Path) -> str:
    return " ".join(e["text"] for e in json.loads(path.read_text()))


def test_an_output_another_source_rewrote_is_written_again(tmp_path: Path) -> None:
    full, sub = tmp_path / "in", tmp_path / "in-sub"
    full.mkdir()
    sub.mkdir()
    (full / "doc05.md").write_text("The full set's fifth document.")
    (full / "doc06.md").write_text("The full set's sixth document.")
    (sub / "doc05.md").write_text("The subset's own fifth document.")
    out = tmp_path / "out"
    assert set(_statuses(_run(tmp_path, full, out)).values()) == {"SUCCESS"}
    assert _statuses(_run(tmp_path, sub, out)) == {"doc05.md": "SUCCESS"}
    assert "subset" in _texts(out / "doc05.md.json")
    again = _run(tmp_path, full, out)
    assert _statuses(again) == {"doc05.md": "SUCCESS", "doc06.md": "SKIPPED"}
    assert _texts(out / "doc05.md.json") == "The full set's fifth document."
    assert _statuses(_run(tmp_path, full, out)) == {"doc05.md": "SKIPPED", "doc06.md": "SKIPPED"}


def test_an_output_another_workflow_rewrote_is_written_again(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Hello there.\n\nGeneral Kenobi.")
    out = tmp_path / "out"
    assert _statuses(_run(tmp_path, folder, out)) == {"a.txt": "SUCCESS"}
    other = tmp_path / "other"  # the other workflow: its own file, its own output ids
    other.mkdir()
    first: dict[str, Any] = FAST["workflow_nodes"][0]  # type: ignore[index]  # a JSON body
    nodes = [{**first, "settings": {"strategy": "fast"}}]
    nodes[0]["settings"]["unique_element_ids"] = True
    (other / "wf.json").write_text(json.dumps({**FAST, "name": "other", "workflow_nodes": nodes}))
    ran = runner.invoke(
        app,
        [
            *("run", str(other / "wf.json"), "-i", str(folder), "-o", str(out), "-w", "1"),
            *("--workspace", str(tmp_path / "ws"), "--json"),
        ],
    )
    assert _statuses(ran) == {"a.txt": "SUCCESS"}
    # the first workflow again: the other's output replaced its own
    assert _statuses(_run(tmp_path, folder, out)) == {"a.txt": "SUCCESS"}
    assert _statuses(_run(tmp_path, folder, out)) == {"a.txt": "SKIPPED"}
