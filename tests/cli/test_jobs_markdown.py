"""`ingestflow jobs download --format markdown`: one file's Markdown on stdout, or one `.md` per
document into a folder, after the output node or a kept one; a bad format refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.runner.test_reuse import FILES, cli, run, sample, workflow

GUIDE = (
    "# Getting Started with Ingestion\n\n"
    "This guide explains how documents become elements that a search index can store.\n\n"
    "## Steps\n\n"
    "- Partition each document into elements.\n"
    "- Chunk the elements into passages of a useful size.\n"
    "- Embed every passage as a vector.\n\n"
    "Each element keeps its metadata, such as the file name and the page it came from.\n"
)


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A traced run of Fast → chunk_by_title (chunks keep their elements) over the sample."""
    tmp = tmp_path_factory.mktemp("markdown")
    ws = tmp / "ws"
    code, record = run(
        workflow(tmp, "chunks", embed=False), sample(tmp), tmp / "out", ws, "--trace"
    )
    assert code == 0, record
    return {"tmp": tmp, "ws": ws, "job": record["id"]}


def markdown(traced: dict[str, Any], file: str, *node: str) -> str:
    """`jobs download --file FILE --format markdown [--node NODE]`: its stdout."""
    args = ["jobs", "download", traced["job"], "--file", file, "--format", "markdown"]
    result = cli(*args, *(["--node", *node] if node else []), "--workspace", traced["ws"])
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def test_one_files_markdown_is_printed_headings_by_depth_and_lists(traced: dict[str, Any]) -> None:
    # the output is chunks that kept their elements: written as those elements
    assert markdown(traced, "guide.md") == GUIDE
    assert markdown(traced, "guide.md", "Partitioner") == GUIDE
    for file in FILES:  # the chunker's output reads as the partitioner's
        assert markdown(traced, file) == markdown(traced, file, "Partitioner")
    page = markdown(traced, "sub/page.html")
    assert page.startswith("# Lighthouse Keeping\n\n") and "\n## Daily duties\n" in page
    assert "\n<table><tr><th>Station</th><th>Built</th></tr>" in page  # the table, header kept


def test_every_files_markdown_is_written_into_a_folder_by_path(
    traced: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = traced["tmp"] / "exported" / "md"
    args = ("jobs", "download", traced["job"], "--workspace", traced["ws"], "--format", "markdown")
    result = cli(*args, "--node", "Partitioner", "--to", target)
    assert result.exit_code == 0, result.output
    assert f"wrote 3 files into {target}" in result.output
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert written == ["guide.md.md", "notes.txt.md", "sub/page.html.md"]
    for file in FILES:
        assert (target / f"{file}.md").read_text(encoding="utf-8") == markdown(traced, file)
    monkeypatch.chdir(traced["tmp"])  # no --to: a folder named by the job and the node
    result = cli(*args)
    assert result.exit_code == 0, result.output
    default = traced["tmp"] / f"{traced['job'][:8]}-output"
    assert (default / "guide.md.md").read_text(encoding="utf-8") == GUIDE


def test_a_format_is_named_in_any_case_and_json_stays_the_default(traced: dict[str, Any]) -> None:
    shouted = cli(
        "jobs", "download", traced["job"], "--file", "guide.md", "--format", "MarkDown",
        "--workspace", traced["ws"],
    )  # fmt: skip
    assert shouted.exit_code == 0 and shouted.stdout == GUIDE
    plain = cli(
        "jobs", "download", traced["job"], "--file", "guide.md", "--workspace", traced["ws"]
    )
    assert plain.exit_code == 0 and plain.stdout.startswith("[")  # the elements, as before


def test_an_unknown_format_is_refused_naming_the_formats(traced: dict[str, Any]) -> None:
    target = traced["tmp"] / "never"
    for where in (["--file", "guide.md"], ["--to", str(target)]):
        result = cli(
            "jobs", "download", traced["job"], *where, "--format", "xml",
            "--workspace", traced["ws"],
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        assert "unknown download format" in result.output
        assert '"xml"' in result.output and '["json", "markdown"]' in result.output
        assert "Traceback" not in result.output and not result.stdout
    assert not target.exists()  # refused before anything was written


def test_chunks_that_did_not_keep_their_elements_are_paragraphs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    wf = workflow(tmp_path, "bare", embed=False, include_orig_elements=False)
    code, record = run(wf, sample(tmp_path), tmp_path / "out", ws)
    assert code == 0, record
    result = cli(
        "jobs", "download", record["id"], "--file", "guide.md", "--format", "markdown",
        "--workspace", ws,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    paragraphs = result.stdout.rstrip("\n").split("\n\n")
    assert paragraphs[:2] == [
        "Getting Started with Ingestion",  # a chunk's text: no heading, no list left
        "This guide explains how documents become elements that a search index can store.",
    ]
    assert not [p for p in paragraphs if p.startswith(("#", "- "))]
