"""pytest's own settings hold: a misspelt marker fails the run. ruff and mypy are steps of
`.ci/run` of their own, before the tests (docs/testing.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_a_misspelt_marker_is_an_error(tmp_path: Path) -> None:
    """--strict-markers: `@pytest.mark.slwo` fails the run instead of marking nothing."""
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n\n@pytest.mark.slwo\ndef test_x():\n    pass\n"
    )
    # -n 0: in that one process (addopts asks for two workers, which would start for one test)
    args = [
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "-c",
        "pyproject.toml",
        "--rootdir",
        str(REPO),
    ]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *args, str(tmp_path / "test_typo.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert "'slwo' not found in `markers` configuration option" in out.stdout + out.stderr
