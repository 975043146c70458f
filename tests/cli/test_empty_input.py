"""A run over an empty input folder says that nothing was found, and where: in the job's message
and the CLI's summary, not only "0 of 0 documents" (issue 37, 17)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ingestflow.cli import app
from tests.cli.test_polish_cli import FAST

runner = CliRunner()


def test_an_empty_input_folder_is_said(tmp_path: Path) -> None:
    empty = tmp_path / "empty-in"
    (empty / ".hidden").mkdir(parents=True)
    (empty / ".hidden" / "a.txt").write_text("Hidden: never read.")
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(FAST))
    args = ["run", str(wf), "-i", str(empty), "-o", str(tmp_path / "o"), "-w", "1"]
    ws = ["--workspace", str(tmp_path / "ws")]
    ran = runner.invoke(app, [*args, *ws])
    assert ran.exit_code == 0, ran.output
    assert "0 of 0 documents" in ran.stdout
    said = f"no documents found in {empty}"
    assert said in ran.stdout
    record = json.loads(runner.invoke(app, [*args, *ws, "--json"]).stdout)
    assert said in record["message"]


def test_a_folder_with_documents_says_nothing_of_the_kind(tmp_path: Path) -> None:
    docs = tmp_path / "in"
    docs.mkdir()
    (docs / "a.txt").write_text("A paragraph.")
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(FAST))
    args = ["run", str(wf), "-i", str(docs), "-o", str(tmp_path / "o"), "-w", "1", "--json"]
    ran = runner.invoke(app, [*args, "--workspace", str(tmp_path / "ws")])
    assert ran.exit_code == 0, ran.output
    assert "no documents found" not in (json.loads(ran.stdout)["message"] or "")
