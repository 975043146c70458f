"""The data that flows: a Document from a source, and its elements as `unstructured` writes them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# One element, exactly as `unstructured`'s `Element.to_dict()` writes it:
# {"type", "element_id", "text", "metadata": {...}} plus "embeddings" after an embedder.
Element = dict[str, Any]


@dataclass
class Document:
    """One source document on its way through the DAG.

    `id` is the file id used in job records and downloads; `record_id` is the id every element of
    the document carries to the destination (the vectordb's `record_id`), stable across runs.
    Exactly one of `path` and `data` holds the content.
    """

    id: str
    record_id: str
    filename: str
    path: Path | None = None
    data: bytes | None = None
    version: str | None = None
    mime_type: str | None = None
    data_source: dict[str, Any] = field(default_factory=dict)
    parent_id: str | None = None
    elements: list[Element] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Figures a stage reports about the document (e.g. `pages_by_strategy` from Auto).
    stats: dict[str, Any] = field(default_factory=dict)
    # Set by a source that listed the document but could not read it: the runner records the
    # document as failed with this reason and never sends it to a stage.
    error: str | None = None

    def fetch(self) -> Document:
        """The document with its content, read from its source where it is not held yet (a
        reference listed by the driver, read by the worker: `Source.read_in_workers`); this
        document itself when it holds its content or a path to it."""
        return self

    def read_bytes(self) -> bytes:
        """The document's content."""
        if self.data is not None:
            return self.data
        if self.path is None:
            raise ValueError(f"document {self.filename!r} has neither a path nor data")
        return self.path.read_bytes()

    def content_hash(self) -> str:
        """SHA-256 of the content: the version of a local file."""
        if self.data is not None:
            return hashlib.sha256(self.data).hexdigest()
        digest = hashlib.sha256()
        assert self.path is not None
        with self.path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
