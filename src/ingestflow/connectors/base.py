"""The connector contract: a Source yields Documents lazily; a Destination writes them as units."""

from __future__ import annotations

from collections.abc import Iterator

from ingestflow.elements import Document


class Source:
    """Where documents come from. `documents()` is lazy: the runner pulls one at a time.

    Each Document carries a stable `record_id`, a `version` (content hash, or the source's own
    version number) for `reprocess_all: false`, and `data_source` metadata (url, record_locator,
    dates, permissions_data) that the partitioner copies onto every element's
    `metadata.data_source`.
    """

    name = "source"
    #: yields local files by path, which an executor ships to its workers itself (the paths on
    #: a shared file system, else the files' bytes): nothing to say when it reads them
    local_files = False

    def precheck(self) -> None:
        """Check the source answers and the credentials work (ConnectorError when not)."""

    def documents(self) -> Iterator[Document]:
        """Yield the documents to process; a document that cannot be read is yielded with the
        error noted in `warnings`, or raised as DocumentError by the partitioner, never dropped."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections."""

    def listing_problem(self) -> str | None:
        """Why the last `documents()` listing may have left out documents still in the source
        (an incremental run then removes nothing from the destination), or None when it listed
        them all. A source that cannot tell says so: removing needs a whole listing."""
        return f"the {self.name} source cannot tell whether it listed every document"

    def read_in_workers(self) -> bool:
        """From now on, yield documents without their content, which the worker that runs each
        one reads itself (`Document.fetch`, with a client of its own): True when this source can
        (its documents are reachable from every machine), False when it yields the content as
        before (the default)."""
        return False

    def suffixes(self) -> set[str] | None:
        """The file name extensions (lowercase, with the dot) the documents are likely to have,
        from a quick look before the run, or None when the source cannot tell: a hint for what
        the workers load up front (`runner.preload`), never a filter."""
        return None


class Destination:
    """Where elements go. `write()` replaces the document's earlier output as a unit."""

    name = "destination"
    #: writes files under a folder: other machines may write it only when they share it
    writes_a_folder = False
    #: why only the run's own process may write it when `for_workers` gives None (words for
    #: the job's message; empty: nothing more to say)
    one_writer_only = ""

    def precheck(self, embedding_dimension: int | None) -> None:
        """Connect and check the target fits the workflow (ConnectorError when not), before any
        document is processed. `embedding_dimension` is the workflow's embedder dimension, or
        None when the workflow has no embedder."""

    def write(self, doc: Document) -> list[str]:
        """Write one document's elements, replacing its earlier ones; returns warnings to record
        in the job (e.g. a field dropped by a declared policy). Raise DocumentError to fail the
        document alone."""
        raise NotImplementedError

    def delete(self, record_id: str, filename: str | None) -> None:
        """Remove the output of a document that left its source (every row of `record_id`, or
        the file written for `filename`). Raise DocumentError when it cannot be removed."""
        from ingestflow.errors import DocumentError

        raise DocumentError(f"the {self.name} destination cannot remove a document's output")

    def for_workers(self) -> Destination | None:
        """A copy of this destination, not yet opened, that worker processes (Ray actors, on
        any machine) open with `precheck` and write with, each document still replaced as a
        unit; this one stays the run's for `has` and `delete`. None when only this process may
        write (the default; Milvus Lite: one process's file)."""
        return None

    def has(self, doc: Document) -> bool | None:
        """Whether the destination holds the document's output now (a run skips an unchanged
        document only when it does); None when it cannot tell."""
        return None

    def stamp(self, doc: Document) -> str | None:
        """A fingerprint of the document's output as the destination holds it now (recorded
        after a write; a run skips an unchanged document only while it is the same, so an
        output another run rewrote is written again); None when it cannot tell."""
        return None

    def close(self) -> None:
        """Flush and release connections."""
