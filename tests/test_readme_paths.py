"""Every file the README's code blocks name under `examples/` or `fixtures/` exists, so its
commands run as written (a missing `examples/workflow.json` once made the curl example fail)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
PATH = re.compile(r"(?<![\w./-])((?:examples|fixtures)/[\w./-]*)")


def named_paths(markdown: str) -> set[str]:
    """The `examples/...` and `fixtures/...` paths in a Markdown text's fenced code blocks."""
    return {found.rstrip(".") for block in FENCE.findall(markdown) for found in PATH.findall(block)}


def test_the_path_reader_finds_paths_in_code_blocks_only() -> None:
    text = "see examples/prose.json\n```bash\nrun examples/a.json -i fixtures/docs/ -o out\n```\n"
    assert named_paths(text) == {"examples/a.json", "fixtures/docs/"}


def test_every_example_and_fixture_the_readme_names_exists() -> None:
    named = named_paths((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "examples/fast-by-title-embed.json" in named  # the reader sees the main job
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert missing == []
