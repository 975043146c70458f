"""Documents as files, and long documents in page (or line) ranges: reading one range, and
joining the ranges' elements as one call over the whole document gives them."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ingestflow.elements import Document, Element
from ingestflow.errors import DocumentError, StageError
from ingestflow.stages.base import Part
from ingestflow.stages.partition import filetypes


def read_document(
    node: str, doc: Document, read: Callable[[Path, str, bool], tuple[list[Element], list[str]]]
) -> tuple[list[Element], list[str]]:
    """`read(path, name, is_temp)` on the document's content; a DocumentError becomes this node's
    StageError, and a document with no text gets a warning."""
    try:
        with materialise(doc) as (path, is_temp):
            elements, warnings = read(path, doc.filename, is_temp)
    except StageError:
        raise
    except DocumentError as exc:
        raise StageError(node, doc.filename, str(exc)) from None
    if not has_text(elements):
        warnings.append("no text: the document yielded no element with text")
    return elements, warnings


def read_part(
    node: str,
    doc: Document,
    pages: tuple[int, int],
    read: Callable[..., tuple[list[Element], list[str]]],
) -> Part:
    """`read(path, name, is_temp, first_page=, whole=False)` on pages `pages` of
    the document's PDF, written to a file of their own; a DocumentError becomes a StageError
    naming the pages."""
    first, last = pages
    try:
        with (
            materialise(doc) as (path, is_temp),
            filetypes.pdf_pages(path, first, last) as part,  # with the document's time
        ):
            elements, warnings = read(part, doc.filename, is_temp, first_page=first, whole=False)
    except StageError:
        raise
    except DocumentError as exc:
        raise StageError(node, doc.filename, f"pages {first}-{last}: {exc}") from None
    return Part(pages, elements, warnings)


def join_elements(parts: list[Part]) -> tuple[list[Element], list[str]]:
    """The elements of consecutive page ranges in order, with `parent_id` set across the ranges
    as one call over the whole document sets it, and their warnings (each once)."""
    _renumber_unpaged(parts)
    elements = [element for part in parts for element in part.elements]
    set_hierarchy(elements)
    warnings = list(dict.fromkeys(w for part in parts for w in part.warnings))
    return elements, warnings


def _renumber_unpaged(parts: list[Part]) -> None:
    """Deterministic ids of elements without a page (page breaks) as one call gives them: the
    library numbers those across the whole document, a part's call from its own start. An id is
    changed only where the library's formula reproduces it."""
    overall = 0
    for part in parts:
        local = 0
        for element in part.elements:
            metadata = element["metadata"]
            if metadata.get("page_number") is not None:
                continue
            name, text = metadata.get("filename"), element["text"]
            if overall != local and element["element_id"] == _library_id(name, text, local):
                element["element_id"] = _library_id(name, text, overall)
            local += 1
            overall += 1


def _library_id(filename: str | None, text: str, sequence: int) -> str:
    """`unstructured`'s deterministic id of an element without a page (`Element.id_to_hash`)."""
    return hashlib.sha256(f"{filename}{text}None{sequence}".encode()).hexdigest()[:32]


def set_hierarchy(elements: list[Element]) -> None:
    """Recompute every element's `parent_id` with the library's own rule (titles over the text
    that follows them, by category and depth)."""
    from types import SimpleNamespace

    from unstructured.partition.common.metadata import set_element_hierarchy

    proxies = [
        SimpleNamespace(
            id=element["element_id"],
            category=element["type"],
            metadata=SimpleNamespace(
                parent_id=None, category_depth=element["metadata"].get("category_depth")
            ),
        )
        for element in elements
    ]
    set_element_hierarchy(proxies)
    for element, proxy in zip(elements, proxies, strict=True):
        if proxy.metadata.parent_id is None:
            element["metadata"].pop("parent_id", None)
        else:
            element["metadata"]["parent_id"] = proxy.metadata.parent_id


@contextmanager
def materialise(doc: Document) -> Iterator[tuple[Path, bool]]:
    """The document as a readable file path, and whether it is a temporary copy of `doc.data`."""
    if doc.path is not None:
        yield filetypes.readable(Path(doc.path)), False
    elif doc.data is not None:
        with filetypes.temp_copy(doc.data, doc.filename) as path:
            yield path, True
    else:
        raise DocumentError("the document has neither a path nor data")


def has_text(elements: list[Element]) -> bool:
    """Whether any element has text (page breaks alone are what a broken PDF may give)."""
    return any(element["text"].strip() for element in elements)
