"""Every test has a time limit (pytest-timeout, `pyproject.toml`): a hanging test fails alone,
its fixtures torn down, and the run goes on, under the suite's two workers too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

HANGING = """
import time
from pathlib import Path

import pytest


@pytest.fixture
def held(tmp_path_factory):
    yield
    Path({flag!r}).write_text("torn down")


def test_hangs(held):
    time.sleep(3600)


def test_after_it():
    pass
"""


def test_every_test_has_a_time_limit(pytestconfig: pytest.Config) -> None:
    """The suite's limit: one no healthy test reaches; a method that fails the test itself."""
    assert pytestconfig.getini("timeout") == "300"
    assert pytestconfig.getini("timeout_method") == "signal"


def test_a_hanging_test_is_stopped_by_the_time_limit(tmp_path: Path) -> None:
    """With the project's settings (its xdist options included) and the limit lowered to 3 s,
    a test that sleeps an hour fails with the limit as its reason, its fixture's teardown
    runs, and the next test still runs."""
    flag = tmp_path / "teardown"
    (tmp_path / "test_hanging.py").write_text(HANGING.format(flag=str(flag)))
    args = ["-q", "-p", "no:cacheprovider", "-c", "pyproject.toml", "--rootdir", str(REPO)]
    args += ["-n", "1", "-o", "timeout=3", str(tmp_path / "test_hanging.py")]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    said = out.stdout + out.stderr
    assert out.returncode == 1, said
    assert "Failed: Timeout (>3.0s)" in said and "1 failed, 1 passed" in said, said
    assert flag.read_text() == "torn down"
