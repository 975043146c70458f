"""Shared fixtures: paths to the project's fixtures and the third-party corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
CORPUS = (REPO.parent / "shared" / "corpus").resolve()


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The third-party corpus beside the clone; tests that use it skip cleanly when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"third-party corpus not found at {CORPUS}")
    return CORPUS
