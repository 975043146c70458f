"""The source type-checks: `mypy` over src/ (its settings in pyproject.toml) finds nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.timeout(900)  # mypy over src/: ~35 s on a quiet machine
def test_mypy() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            "--cache-dir",
            str(REPO / ".mypy_cache"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
