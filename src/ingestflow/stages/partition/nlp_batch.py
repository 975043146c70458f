"""The library's sentence and part-of-speech checks in batches.

`unstructured` decides whether a paragraph is narrative text, a title or plain text with spaCy,
one text at a time (`unstructured.nlp.tokenize._process`): on a long Word document or text file
that is most of the partitioning time (the 872-page handbook: 36 of 46 s). spaCy gives the same
tokens, sentences and tags when it processes texts together (`nlp.pipe`), about twice as fast.
For the types whose candidate texts can be listed before the library reads the file (plain text:
its paragraphs; Word: the text of each paragraph and of its parts across page breaks), this
module processes them together first; for a PDF read by pdfminer (Fast), it reads PAGES_AHEAD
pages before the library classifies them and processes their text boxes' texts together. The
library's calls then find their result ready. Texts it did not foresee are processed one by one,
as before: the output does not depend on the foresight, only the time does (tested). A large
HTML file's texts are known only as the library walks its tree: they are listed by one run of
the library's HTML partitioner whose classifier records them instead of calling spaCy
(`html_texts`; ~10% of the file's partitioning time, where spaCy was ~90%).
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ingestflow.patches import unstructured as unstructured_patches

#: Texts processed together per spaCy batch; the texts of the next WINDOW places processed at
#: once; at most KEPT results kept (the oldest go first: a document repeats many of its
#: paragraphs, and memory stays flat however long it is).
BATCH = 256
WINDOW = 1024
KEPT = 4096
#: PDF pages read before their texts are processed together.
PAGES_AHEAD = 8
#: Documents with fewer candidate texts than this are left to the library's own calls.
MIN_TEXTS = 64
#: Longer texts are left to the library (it truncates what exceeds spaCy's limit).
MAX_CHARS = 100_000


@contextmanager
def prefetched(texts: list[str]) -> Iterator[None]:
    """While open, the library's spaCy calls on `texts` (in the order it will make them) are
    served from batches: a call on a foreseen text that is not ready processes the window of
    texts that starts at its next occurrence."""
    from unstructured.nlp import tokenize

    sequence = [t for t in texts if t and len(t) <= MAX_CHARS]
    if len(sequence) < MIN_TEXTS:
        yield
        return
    nlp = tokenize._get_nlp()
    occurrences: dict[str, list[int]] = {}
    for i, text in enumerate(sequence):
        occurrences.setdefault(text, []).append(i)
    ready: dict[str, Any] = {}
    start = 0  # where the current window starts in `sequence`

    def lookup(text: str) -> Any:
        nonlocal start
        found = ready.get(text)
        if found is not None:
            return found
        positions = occurrences.get(text, [])
        i = bisect.bisect_left(positions, start)
        if i == len(positions):  # not foreseen, or only behind the window: alone
            return None
        start = positions[i]
        _fill(ready, nlp, sequence[start : start + WINDOW])
        return ready[text]

    with _serving(lookup):
        yield


@contextmanager
def pdf_prefetched() -> Iterator[None]:
    """While open, the Fast PDF reader's pages are read PAGES_AHEAD at a time and the texts it
    will classify on them (each text box's text, as the library cleans it) are processed together
    before it classifies them."""
    from unstructured.nlp import tokenize
    from unstructured.partition import pdf

    needed = (
        "open_pdfminer_pages_generator",
        "get_text_with_deduplication",
        "_extract_text",
        "clean_extra_whitespace_with_index_run",
        "PARAGRAPH_PATTERN",
        "env_config",
    )
    if not all(hasattr(pdf, name) for name in needed):  # another version of the library
        yield
        return
    nlp = tokenize._get_nlp()
    ready: dict[str, Any] = {}
    pages = _original("pages")

    def texts_of(layout: Any) -> Iterator[str]:
        for obj in layout:
            if hasattr(obj, "get_text"):
                threshold = pdf.env_config.PDF_CHAR_DUPLICATE_THRESHOLD
                snippets = [pdf.get_text_with_deduplication(obj, threshold)]
            else:
                snippets = re.split(pdf.PARAGRAPH_PATTERN, pdf._extract_text(obj))
            for snippet in snippets:
                text = pdf.clean_extra_whitespace_with_index_run(snippet)[0]
                if text.strip() and len(text) <= MAX_CHARS:
                    yield text

    def ahead(*args: Any, **kwargs: Any) -> Iterator[Any]:
        held: list[Any] = []
        for item in pages(*args, **kwargs):
            held.append(item)
            if len(held) == PAGES_AHEAD:
                _fill(ready, nlp, [t for _, layout in held for t in texts_of(layout)])
                yield from held
                held = []
        _fill(ready, nlp, [t for _, layout in held for t in texts_of(layout)])
        yield from held

    with _serving(ready.get, ahead):
        yield


def html_texts(partition: Callable[[], Any]) -> list[str]:
    """The texts the library's HTML partitioner will classify, in order: `partition()` (the
    library reading the file) run once with its classifier recording each text and answering
    "text" without spaCy, its elements dropped. The texts do not depend on the answers: the
    classifier sees each text once the parser has cut it."""
    recorded: list[str] = []
    _original("html")
    saved = getattr(_here, "recording", None)
    _here.recording = recorded
    try:
        partition()
    finally:
        _here.recording = saved
    return recorded


def _fill(ready: dict[str, Any], nlp: Any, texts: list[str]) -> None:
    """Process the texts not ready yet together; keep at most KEPT results (the oldest go)."""
    new = [t for t in dict.fromkeys(texts) if t not in ready]
    ready.update(zip(new, nlp.pipe(new, batch_size=BATCH), strict=True))
    for old in list(ready)[: max(0, len(ready) - KEPT)]:
        del ready[old]


@contextmanager
def _serving(
    lookup: Callable[[str], Any], pages: Callable[..., Any] | None = None
) -> Iterator[None]:
    """In this thread, the library's spaCy calls answered by `lookup` where it has the text (else
    one by one), and its PDF pages read by `pages` when given. The library's functions are
    replaced once per process by ones that look up what the calling thread set here, so that
    threads partitioning at once never see each other's batches."""
    _original("process")
    if pages is not None:
        _original("pages")
    saved = (getattr(_here, "lookup", None), getattr(_here, "pages", None))
    _here.lookup, _here.pages = lookup, pages
    try:
        yield
    finally:
        _here.lookup, _here.pages = saved


_here = threading.local()


def _original(name: str) -> Any:
    """The library's own `_process` ("process"), Fast PDF page reader ("pages") or HTML text
    classifier ("html"), replaced on first use by a dispatcher to what the calling thread set
    (in `_serving`, or `html_texts`)."""
    if name == "html":
        return unstructured_patches.installed("derive_element_type_from_text", _dispatch_derive)
    if name == "process":
        return unstructured_patches.installed("tokenize_process", _dispatch_process)
    return unstructured_patches.installed("open_pdfminer_pages_generator", _dispatch_pages)


def _dispatch_derive(derive: Callable[[str], Any]) -> Callable[[str], Any]:
    from unstructured.documents.elements import Text

    def dispatch_derive(text: str) -> Any:
        recording = getattr(_here, "recording", None)
        if recording is None:
            return derive(text)
        recording.append(text)
        return Text

    return dispatch_derive


def _dispatch_process(process: Callable[[str], Any]) -> Callable[[str], Any]:
    def dispatch_process(text: str) -> Any:
        lookup = getattr(_here, "lookup", None)
        found = lookup(str(text)) if lookup is not None else None
        return found if found is not None else process(text)

    return dispatch_process


def _dispatch_pages(pages: Callable[..., Any]) -> Callable[..., Any]:
    def dispatch_pages(*args: Any, **kwargs: Any) -> Any:
        return (getattr(_here, "pages", None) or pages)(*args, **kwargs)

    return dispatch_pages


def text_paragraphs(path: Path, encoding: str, grouper: Any = None) -> list[str]:
    """The paragraphs `partition_text` classifies, as it splits them ([] when the file does not
    decode: the library's own reading then applies)."""
    from unstructured.cleaners.core import auto_paragraph_grouper
    from unstructured.partition.text import _split_by_paragraph

    try:
        text = path.read_bytes().decode(encoding)
    except (UnicodeDecodeError, LookupError, OSError):
        return []
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    grouped = (grouper or auto_paragraph_grouper)(text)
    return [p.strip() for p in _split_by_paragraph(grouped) if p.strip()]


def docx_paragraphs(path: Path) -> list[str]:
    """The text of each body paragraph of a Word file, and of its parts before and after each
    page break, as `partition_docx` classifies them ([] when python-docx cannot open it)."""
    try:
        from docx import Document
        from docx.text.paragraph import Paragraph

        document = Document(str(path))
    except Exception:  # the library reads it (or says why) itself
        return []

    def parts(paragraph: Paragraph) -> Iterator[Paragraph]:
        if not paragraph.contains_page_break:
            yield paragraph
            return
        page_break = paragraph.rendered_page_breaks[0]
        if page_break.preceding_paragraph_fragment:
            yield page_break.preceding_paragraph_fragment
        if page_break.following_paragraph_fragment:
            yield from parts(page_break.following_paragraph_fragment)

    out: list[str] = []
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            out.extend(p.text.strip() for p in parts(block))
    return out
