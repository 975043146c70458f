"""The code base stays `ruff` clean (lint and format)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _ruff() -> str:
    local = Path(sys.executable).parent / "ruff"
    found = str(local) if local.exists() else shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: it is a dev dependency (pip install -e '.[dev]')")
    return found


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff(args: list[str]) -> None:
    out = subprocess.run(
        [_ruff(), *args, "src", "tests", "benchmarks"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_misspelt_marker_is_an_error(tmp_path: Path) -> None:
    """--strict-markers: `@pytest.mark.slwo` fails the run instead of marking nothing."""
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n\n@pytest.mark.slwo\ndef test_x():\n    pass\n"
    )
    args = ["-q", "-p", "no:cacheprovider", "-c", "pyproject.toml", "--rootdir", str(REPO)]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *args, str(tmp_path / "test_typo.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert "'slwo' not found in `markers` configuration option" in out.stdout + out.stderr
