"""Quality measures for partition output against published expected outputs (tests, benchmarks)."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits), punctuation dropped."""
    return [w.lower() for w in _WORD.findall(text)]


def word_recall(expected: str, found: str) -> float:
    """Share of the expected words found (as a multiset): 1.0 when nothing is expected."""
    want = Counter(words(expected))
    if not want:
        return 1.0
    have = Counter(words(found))
    return sum(min(n, have[w]) for w, n in want.items()) / sum(want.values())


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            if not self.rows:
                self.rows.append([])
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def table_rows(html: str) -> list[list[str]]:
    """The cell texts of an HTML table, row by row."""
    parser = _Cells()
    parser.feed(html or "")
    return parser.rows


def cell_recall(expected_html: str, found_html: str, similarity: float = 1.0) -> float:
    """Share of the expected non-empty cells whose text is a cell of the found table, compared as
    word sequences (spacing and punctuation do not count), each found cell used once.

    `similarity` below 1.0 also accepts a found cell whose text is at least that similar
    (`difflib` ratio of the word sequences): published outputs are OCR too, so one misread
    character on either side (`42121` for `42.121`) need not count as a missing cell."""
    from difflib import SequenceMatcher

    want = [" ".join(words(c)) for row in table_rows(expected_html) for c in row]
    want = [c for c in want if c]
    if not want:
        return 1.0
    have = [" ".join(words(c)) for row in table_rows(found_html) for c in row]
    missed = []
    for cell in want:  # exact matches first, so that a near match never takes an exact one's cell
        if cell in have:
            have.remove(cell)
        else:
            missed.append(cell)
    near = 0
    if similarity < 1.0:
        for cell in missed:
            scored = [(SequenceMatcher(None, cell, h).ratio(), i) for i, h in enumerate(have)]
            ratio, index = max(scored, default=(0.0, -1))
            if ratio >= similarity:
                have.pop(index)
                near += 1
    return (len(want) - len(missed) + near) / len(want)
