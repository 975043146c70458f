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
