"""The README's "From Python" snippet, saved as a script and run with `python script.py`.

The snippet sits at module level (no `if __name__ == "__main__"`), as a new user writes it: the
worker processes must not import the user's `__main__` (which would run the job again in every
worker, fail every document and record phantom jobs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ingestflow.service import Service

ROOT = Path(__file__).resolve().parents[1]


def _snippet() -> str:
    """The README's "From Python" code block, as written there."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### From Python", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README's From Python section has no python block"
    return found.group(1)


@pytest.mark.parametrize("preload", ["1", "0"], ids=["forkserver", "spawn"])
@pytest.mark.slow
def test_the_readme_snippet_runs_as_a_plain_script(tmp_path: Path, preload: str) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "fixtures/docs/notes.txt", tmp_path / "docs/notes.txt")
    shutil.copy(ROOT / "examples/fast-by-character.json", tmp_path / "wf.json")
    script = _snippet() + 'print("CHUNKS", len(chunks), "ROWS", len(df))\n'
    (tmp_path / "script.py").write_text(script, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "INGESTFLOW_PRELOAD": preload,
    }
    out = subprocess.run(
        [sys.executable, "script.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "bootstrapping phase" not in out.stderr
    lines = out.stdout.splitlines()
    assert len([line for line in lines if line.startswith("True ")]) == 1, out.stdout
    chunks, rows = re.search(r"CHUNKS (\d+) ROWS (\d+)", out.stdout).groups()  # type: ignore[union-attr]
    assert int(chunks) > 0 and int(rows) == int(chunks)  # one file: its chunks are the output
    with Service(tmp_path / ".ingestflow") as service:
        jobs = service.jobs.list()
    assert [job["status"] for job in jobs] == ["COMPLETED"]
