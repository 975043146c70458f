"""`jobs show` (and a run's summary) escape the control characters of file names: a CR that
would rewrite the line, a BEL that would ring, an escape sequence (issue 37, 12)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ingestflow.cli import app
from tests.cli.test_polish_cli import FAST

runner = CliRunner()
CONTROLS = ("\r", "\x07", "\x1b")


def test_jobs_show_escapes_control_characters_of_file_names(tmp_path: Path) -> None:
    docs = tmp_path / "in"
    docs.mkdir()
    (docs / "ok\rforged\x07.txt").write_text("A paragraph of text.")
    (docs / "bad\x1b[2J[bold]x.pdf").write_bytes(b"")  # zero bytes: fails, named in its error
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(FAST))
    ws = ["--workspace", str(tmp_path / "ws")]
    ran = runner.invoke(
        app, ["run", str(wf), "-i", str(docs), "-o", str(tmp_path / "o"), "-w", "1", *ws]
    )
    assert ran.exit_code == 1, ran.output
    job = json.loads(runner.invoke(app, ["jobs", "list", "--json", *ws]).stdout)[0]["id"]
    shown = runner.invoke(app, ["jobs", "show", job, *ws])
    assert shown.exit_code == 0, shown.output
    for output in (ran.output, shown.output):  # the progress lines (stderr) too
        assert not any(c in output for c in CONTROLS), repr(output)
        assert "bad\\x1b[2J[bold]x.pdf" in output  # neither a terminal code nor markup
    assert "ok\\rforged\\x07.txt" in shown.stdout
