"""Shared fixtures: paths to the project's fixtures and the third-party corpus; the files' order."""

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a `slow` test first, each file's tests in their own order: the workers
    (`--dist loadfile`, `--no-loadscope-reorder`) start the long files early and the quick ones
    fill in behind, instead of one long file left running alone at the end."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: the order within a file stays
