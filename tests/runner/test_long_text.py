"""One long plain text over several workers: line ranges cut between paragraphs, partitioned in
parallel and joined into exactly what one call over the whole text gives (ids, element types,
hierarchy, languages), whichever paragraph rule and languages the text has."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ingestflow.elements import Document
from ingestflow.runner.events import PagesPartitioned
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage, long_text
from tests.runner.test_split import run, workflow

EN = [
    "the",
    "harbour",
    "committee",
    "agreed",
    "that",
    "ship",
    "budget",
    "meeting",
    "was",
    "held",
    "in",
    "spring",
    "with",
    "all",
]
RU = [
    "комитет",
    "гавани",
    "согласился",
    "что",
    "бюджет",
    "корабля",
    "был",
    "принят",
    "весной",
    "всеми",
    "членами",
    "совета",
]


def book(kind: str, paragraphs: int = 400, seed: int = 2) -> bytes:
    """Chapters of generated prose: `prose` (blank lines between paragraphs), `lines` (one
    paragraph a line), `figures-first` (a long run of figures, then English: the whole text's
    start has no language, so each element is detected alone, while the later parts alone look
    English), `late-russian` (English, then Russian)."""
    rng = random.Random(seed)

    def paragraph(words: list[str]) -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(4, 25))).capitalize() + "."

    out = []
    for i in range(paragraphs):
        if i % 40 == 0:
            out.append(f"Chapter {i // 40 + 1}")
        elif kind == "figures-first" and i < 150:
            out.append(" ".join(str(rng.randint(0, 99999)) for _ in range(rng.randint(5, 25))))
        elif kind == "late-russian" and i > 60:
            out.append(paragraph(RU))
        elif i % 17 == 0:
            out.append("• " + paragraph(EN))
        else:
            out.append(paragraph(EN))
    return ("\n" if kind == "lines" else "\n\n").join(out).encode()


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(long_text, "BYTES_PER_PART", 4 * 1024)


def stage() -> UnstructuredPartitionStage:
    settings = UnstructuredPartitionSettings(strategy="fast", unique_element_ids=False)
    return UnstructuredPartitionStage("P", "unstructured_api", settings, RunContext())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["prose", "lines", "figures-first", "late-russian"])
def test_line_ranges_joined_give_what_one_call_gives(small_parts: None, kind: str) -> None:
    data = book(kind)
    partitioner = stage()
    one = partitioner.process(Document("d", "r", "book.txt", data=data)).elements
    doc = Document("d", "r", "book.txt", data=data)
    ranges = partitioner.page_ranges(doc, workers=2)
    assert len(ranges) > 2
    parts = [partitioner.process_part(doc, lines) for lines in ranges]
    joined = partitioner.join_parts(Document("d", "r", "book.txt", data=data), parts).elements
    assert json.dumps(joined, sort_keys=True) == json.dumps(one, sort_keys=True)
    languages = {tuple(e["metadata"].get("languages") or ()) for e in one}
    if kind == "figures-first":  # no single language: each element detected alone
        assert len(languages) > 1
    elif kind != "late-russian":  # (whether Latin letters count there is langdetect's call)
        assert languages == {("eng",)}


def test_ranges_cover_every_line_once_and_end_where_paragraphs_end(small_parts: None) -> None:
    for kind in ("prose", "lines"):
        data = book(kind)
        ranges = stage().page_ranges(Document("d", "r", "book.txt", data=data), workers=2)
        lines = data.decode().split("\n")
        assert [n for first, last in ranges for n in range(first, last + 1)] == list(
            range(1, len(lines) + 1)
        )
        if kind == "prose":  # each part starts after a blank line
            assert all(lines[first - 2] == "" for first, _ in ranges[1:])


def test_what_is_not_split(small_parts: None) -> None:
    partitioner = stage()
    data = book("prose")
    assert partitioner.page_ranges(Document("d", "r", "book.txt", data=data), workers=1) == []
    short = book("prose", paragraphs=10)
    assert partitioner.page_ranges(Document("d", "r", "short.txt", data=short), workers=2) == []
    assert partitioner.page_ranges(Document("d", "r", "book.md", data=data), workers=2) == []
    wide = data.decode().encode("utf-16")
    assert partitioner.page_ranges(Document("d", "r", "wide.txt", data=wide), workers=2) == []
    # not the settings' utf-8 far past the first 2,000 lines: read whole
    latin = book("prose", paragraphs=3000) + "\n\nCaf\xe9.".encode("latin-1")
    assert partitioner.page_ranges(Document("d", "r", "l.txt", data=latin), workers=2) == []
    assert partitioner.page_ranges(Document("d", "r", "l.txt", data=latin[:-6]), workers=2)


@pytest.mark.slow
def test_a_long_text_spread_over_workers_in_a_run(tmp_path: Path, small_parts: None) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "book.txt").write_bytes(book("prose", paragraphs=300))
    (folder / "notes.txt").write_text("A short note beside the long book.\n")
    body = workflow()
    _, _, one_out = run(tmp_path, body, folder, 1, "one")
    two, events, two_out = run(tmp_path, body, folder, 2, "two")
    progress = [e for e in events if isinstance(e, PagesPartitioned)]
    assert progress and progress[0].filename == "book.txt" and progress[0].unit == "lines"
    assert progress[-1].parts > 1
    assert two["progress"]["pages"] == 0  # lines of a text are not pages
    assert two["status"] == "COMPLETED", two
    for name in ("book.txt.json", "notes.txt.json"):
        assert (two_out / name).read_text() == (one_out / name).read_text()


def test_a_long_text_is_cut_in_parts_of_at_most_the_largest_size(
    small_parts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However long the text, no part is much longer than MAX_BYTES_PER_PART: the lines done,
    counted as parts end, move every few seconds (a 64 MB text was 8 parts of 8 MB)."""
    monkeypatch.setattr(long_text, "MAX_BYTES_PER_PART", 8 * 1024)
    data = book("prose", paragraphs=3000)
    ranges = stage().page_ranges(Document("d", "r", "book.txt", data=data), workers=2)
    lines = data.split(b"\n")
    sizes = [sum(len(line) + 1 for line in lines[first - 1 : last]) for first, last in ranges]
    assert len(data) > 100 * 1024 and len(ranges) > 12
    assert max(sizes[:-1]) < 8 * 1024 + 1024  # the size, then to the end of a paragraph


def test_line_offsets_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(long_text, "_BLOCK", 7)
    for data in (b"a\nbb\n\nccc\nd", b"a\nbb\n\nccc\nd\n", b"", b"\n\n\n", b"no newline"):
        starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
        for line in range(1, len(starts) + 3):
            expected = starts[line - 1] if line <= len(starts) else len(data)
            assert long_text._line_offset(data, line) == expected, (data, line)
