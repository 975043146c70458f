"""`--input PATH...` takes several paths after one flag (`-i a b`), as the README says, and
`-i a -i b` still works (issue 37, 15)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ingestflow.cli import app
from tests.cli.test_polish_cli import FAST

runner = CliRunner()


def _setup(tmp: Path) -> tuple[Path, list[Path]]:
    wf = tmp / "wf.json"
    wf.write_text(json.dumps(FAST))
    docs = []
    for name in ("a", "b", "c"):
        doc = tmp / "in" / f"{name}.txt"
        doc.parent.mkdir(exist_ok=True)
        doc.write_text(f"Paragraph of {name}.")
        docs.append(doc)
    return wf, docs


def _names(output: str) -> set[str]:
    return {f["filename"] for f in json.loads(output)["files"]}


def test_several_paths_after_one_input_flag(tmp_path: Path) -> None:
    wf, (a, b, c) = _setup(tmp_path)
    ws = ["--workspace", str(tmp_path / "ws"), "-w", "1", "--json"]
    spread = runner.invoke(
        app, ["run", str(wf), "-i", str(a), str(b), "-o", str(tmp_path / "o1"), *ws]
    )
    assert spread.exit_code == 0, spread.output
    assert _names(spread.stdout) == {"a.txt", "b.txt"}
    mixed = runner.invoke(
        app, ["run", str(wf), "-i", str(a), str(b), "-o", str(tmp_path / "o2"), "-i", str(c), *ws]
    )
    assert mixed.exit_code == 0, mixed.output
    assert _names(mixed.stdout) == {"a.txt", "b.txt", "c.txt"}
    # the workflow named after one input is still the workflow
    after = runner.invoke(app, ["run", "-i", str(a), str(wf), "-o", str(tmp_path / "o3"), *ws])
    assert after.exit_code == 0, after.output
    assert _names(after.stdout) == {"a.txt"}


def test_a_stored_workflow_runs_on_several_paths_after_one_flag(tmp_path: Path) -> None:
    wf, (a, b, _) = _setup(tmp_path)
    ws = ["--workspace", str(tmp_path / "ws")]
    created = runner.invoke(app, ["workflows", "create", str(wf), *ws])
    assert created.exit_code == 0, created.output
    ran = runner.invoke(
        app,
        [
            "workflows",
            "run",
            "fast",
            "-i",
            str(a),
            str(b),
            "-o",
            str(tmp_path / "o"),
            "-w",
            "1",
            "--json",
            *ws,
        ],
    )
    assert ran.exit_code == 0, ran.output
    assert _names(ran.stdout) == {"a.txt", "b.txt"}
