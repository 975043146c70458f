"""A long plain-text document over several workers: line ranges cut between paragraphs,
partitioned in parallel, joined into what one call over the whole text gives.

The library reads a .txt file as paragraphs, each classified on its own (title, narrative text,
list item …). Two things in that call look at the whole document, and a part reproduces both:

- the paragraph rule: when fewer than 10% of the first 2,000 lines are blank, every line is a
  paragraph; otherwise paragraphs are separated by blank lines (`unstructured`'s
  `auto_paragraph_grouper`). Ranges are cut where a paragraph ends under the document's rule,
  and each part is read with that rule, not with one decided on the part alone;
- the language: detected once over the whole text, or per element when that finds no single
  language. `join_languages` redoes that decision over the joined elements.

Element ids and the title hierarchy are renumbered by the partitioner's join, as for PDF pages.
"""

from __future__ import annotations

import codecs
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ingestflow.elements import Document, Element
from ingestflow.errors import DocumentError

#: Names the partitioner reads as plain text.
TEXT_SUFFIXES = frozenset({".txt", ".text", ".log"})
#: A part's size at least (a megabyte of prose is ~4,000 paragraphs, ~5 s of partitioning),
#: and at most (the lines done, shown as parts end, move every few seconds on a long text).
BYTES_PER_PART = 128 * 1024
MAX_BYTES_PER_PART = 1024 * 1024
#: The library's paragraph rule: lines looked at, and the share of blank ones for blank-line mode.
_HEAD_LINES = 2000
_BLANK_SHARE = 0.1
_BLANK_LINE = re.compile(rb"\n[ \t\r\f\v]*\n")
_BLOCK = 1 << 20  # bytes whose newlines are counted at once when a line's offset is looked for
_WIDE = ("utf-16", "utf-32", "utf_16", "utf_32", "u16", "u32")


def is_text(doc: Document) -> bool:
    """Whether the partitioner reads `doc` as plain text (by its name)."""
    return Path(doc.filename).suffix.lower() in TEXT_SUFFIXES


def line_ranges(doc: Document, workers: int, encoding: str) -> list[tuple[int, int]]:
    """Line ranges (first, last; 1-based) that spread a long text over `workers` (about four
    ranges a worker, from BYTES_PER_PART to MAX_BYTES_PER_PART each), each ending where a
    paragraph ends; `[]` when the document is not a long text in an encoding whose lines end
    in a newline byte."""
    if workers <= 1 or not is_text(doc) or _wide(encoding):
        return []
    data = _read(doc)
    if data is None or len(data) < 2 * BYTES_PER_PART or b"\0" in data[:8192]:
        return []
    try:  # all of it: a part that did not decode would be read in an encoding of its own
        data.decode(encoding)
    except (UnicodeDecodeError, LookupError):  # read whole: the partitioner detects the encoding
        return []
    every_line = line_per_paragraph(data[: _head_end(data)].decode(encoding))
    size = min(MAX_BYTES_PER_PART, max(BYTES_PER_PART, -(-len(data) // (workers * 4))))
    cuts: list[int] = []  # byte offsets where a part starts
    at = size
    while at < len(data) - BYTES_PER_PART // 2:
        cut = _paragraph_end(data, at, every_line)
        if cut is None or cut >= len(data):
            break
        cuts.append(cut)
        at = cut + size
    if not cuts:
        return []
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    starts = [1]
    for before, cut in zip([0, *cuts], cuts, strict=False):  # each stretch counted once
        starts.append(starts[-1] + data.count(b"\n", before, cut))
    return [(first, nxt - 1) for first, nxt in zip(starts, [*starts[1:], lines + 1], strict=True)]


def line_per_paragraph(head: str) -> bool:
    """The library's paragraph rule on a document's start (`auto_paragraph_grouper`): True when
    every line is a paragraph (fewer than 10% of the first 2,000 lines blank)."""
    lines = re.split(r"(?<=\n)", head)[:_HEAD_LINES]
    blank = sum(1 for line in lines if not line.strip())
    return blank / max(1, len(lines)) < _BLANK_SHARE


def grouper(every_line: bool) -> Callable[[str], str]:
    """The library's paragraph grouper for the document's rule."""
    from unstructured.cleaners.core import blank_line_grouper, new_line_grouper

    return new_line_grouper if every_line else blank_line_grouper


@contextmanager
def text_lines(path: Path, first: int, last: int, encoding: str) -> Iterator[tuple[Path, bool]]:
    """Lines first..last of a text file as a file of their own (same name, same time), and the
    whole document's paragraph rule."""
    data = path.read_bytes()
    try:
        head = data[: _head_end(data)].decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise DocumentError(f"the text is not {encoding}: {exc}") from None
    start = _line_offset(data, first)
    end = _line_offset(data, last + 1)
    with tempfile.TemporaryDirectory(prefix="ingestflow-lines-") as folder:
        target = Path(folder) / path.name
        target.write_bytes(data[start:end])
        stat = path.stat()  # the part carries the document's time (metadata.last_modified)
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        yield target, line_per_paragraph(head)


def join_languages(elements: list[Element], parts: list[list[Element]]) -> None:
    """`metadata.languages` as one call over the whole text sets it: the language detected
    over all the text when it is one, else each element's own. A part whose own text gave one
    language while the whole gives several is detected again element by element."""
    from unstructured.partition.common.lang import detect_languages

    def detect(text: str) -> list[str] | None:
        return detect_languages(text=text, languages=["auto"])

    def full(items: list[Element]) -> str:
        return " ".join(str(e["text"]) for e in items if e.get("text"))

    whole = detect(full(elements))
    if whole is not None and len(whole) == 1:
        for element in elements:
            element["metadata"]["languages"] = list(whole)
        return
    for part in parts:
        found = detect(full(part))
        if found is None or len(found) != 1:
            continue  # the part was detected element by element already, as the whole is
        for element in part:
            _set(element, detect(str(element.get("text") or "")))


def _set(element: Element, languages: list[str] | None) -> None:
    if languages is None:
        element["metadata"].pop("languages", None)
    else:
        element["metadata"]["languages"] = languages


def _paragraph_end(data: bytes, at: int, every_line: bool) -> int | None:
    """The offset of the first line at or after `at` that starts a new paragraph."""
    if every_line:
        found = data.find(b"\n", at)
        return None if found < 0 else found + 1
    match = _BLANK_LINE.search(data, at)
    return None if match is None else match.end()


def _line_offset(data: bytes, line: int) -> int:
    """The byte offset where 1-based line `line` starts (the end of the data past the last):
    newlines counted a block at a time, then found one by one in the block of the last."""
    need, at = line - 1, 0
    while need > 0:
        end = min(len(data), at + _BLOCK)
        found = data.count(b"\n", at, end)
        if found < need:
            if end == len(data):
                return len(data)
            need, at = need - found, end
            continue
        for _ in range(need):
            at = data.find(b"\n", at) + 1
        return at
    return at


def _head_end(data: bytes) -> int:
    """The offset past the first 2,000 lines (the part of a text the paragraph rule reads)."""
    return _line_offset(data, _HEAD_LINES + 1)


def _wide(encoding: str) -> bool:
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return True
    return name.startswith(_WIDE)


def _read(doc: Document) -> bytes | None:
    """The document's bytes when it is long enough to split (a short file is not read here)."""
    if doc.data is not None:
        return bytes(doc.data)
    if doc.path is None:
        return None
    try:
        if Path(doc.path).stat().st_size < 2 * BYTES_PER_PART:
            return None
        return Path(doc.path).read_bytes()
    except OSError:
        return None
