"""The partition stage (subtype `unstructured_api`): Fast or High Res over a document, its page
or line ranges, and the finishing rules (the package's docstring says what they are)."""

from __future__ import annotations

from ingestflow.elements import Document, Element
from ingestflow.errors import DocumentError, StageError
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import NodeInputs, Part, RunContext, Stage
from ingestflow.stages.partition import environment, filetypes, formulas, long_text
from ingestflow.stages.partition.finishing import finish
from ingestflow.stages.partition.page_ranges import (
    has_text,
    join_elements,
    materialise,
    read_document,
    read_part,
)
from ingestflow.stages.partition.reader import FileReader


class UnstructuredPartitionStage(Stage):
    """Partitions one document with the Fast or the High Res strategy."""

    settings: UnstructuredPartitionSettings

    def __init__(
        self,
        name: str,
        subtype: str,
        settings: UnstructuredPartitionSettings,
        context: RunContext,
        inputs: NodeInputs | None = None,
    ) -> None:
        super().__init__(name, subtype, settings, context, inputs)
        self._reader: FileReader | None = None
        self.slow_per_document = settings.partition_strategy.slow_per_document

    def precheck(self) -> None:
        """Stop before the run on a strategy, encoding or package the machine cannot serve."""
        environment.precheck(self.name, self.settings)

    def open(self) -> None:
        """Import the library once per process, offline, and load its spaCy model."""
        if self._reader is not None:
            return
        self.precheck()
        partition = environment.load(self.name, self.settings)
        blocks = self.image_blocks()
        later = formulas.latex_later(self.inputs.tasks, blocks)
        self._reader = FileReader(self.name, self.settings, blocks, partition, later)

    @property
    def reader(self) -> FileReader:
        """The reader of one file by this node's settings (opens the stage on first use)."""
        self.open()
        assert self._reader is not None
        return self._reader

    def process(self, doc: Document) -> Document:
        """Set `doc.elements`; StageError (a DocumentError) when the document cannot be read."""
        elements, warnings = read_document(self.name, doc, self.reader.read)
        doc.elements = self.finish(elements, doc)
        doc.warnings.extend(warnings)
        return doc

    def image_blocks(self) -> list[str]:
        """The element types to crop (`image_base64`): `extract_image_block_types`, and under
        High Res also those the workflow's enrichment nodes need (`NodeInputs.crops_for_later`;
        they leave the output after the last node that needs them unless listed here)."""
        blocks: list[str] = list(self.settings.extract_image_block_types or ())
        if self.settings.partition_strategy.lays_out_pages:
            listed = {b.lower() for b in blocks}
            blocks += [t for t in self.inputs.crops_for_later if t.lower() not in listed]
        return blocks

    def finish(self, elements: list[Element], doc: Document) -> list[Element]:
        """The settings and metadata applied to the whole document (module `finishing`)."""
        return finish(self.settings, elements, doc)

    # --- one long PDF (or text) over several workers --------------------------------------------
    def page_ranges(self, doc: Document, workers: int) -> list[tuple[int, int]]:
        """Page ranges of a long PDF, or line ranges of a long text (module `long_text`), so
        that its parts are spread over the workers."""
        if long_text.is_text(doc):
            return long_text.line_ranges(doc, workers, self.settings.encoding)
        per_part = self.settings.partition_strategy.pages_per_part
        return filetypes.pdf_page_ranges(doc, workers, per_part)

    def range_unit(self, doc: Document) -> str:
        return "lines" if long_text.is_text(doc) else "pages"

    def process_part(self, doc: Document, pages: tuple[int, int]) -> Part:
        """The elements of pages (or lines) `pages`, numbered as in the document."""
        if long_text.is_text(doc):
            return self._text_part(doc, pages)
        return read_part(self.name, doc, pages, self.reader.read)

    def _text_part(self, doc: Document, lines: tuple[int, int]) -> Part:
        first, last = lines
        encoding = self.settings.encoding
        try:
            with (
                materialise(doc) as (path, is_temp),
                long_text.text_lines(path, first, last, encoding) as (part, every_line),
            ):
                elements, warnings = self.reader.read(
                    part, doc.filename, is_temp, whole=False, every_line=every_line
                )
        except DocumentError as exc:
            raise StageError(self.name, doc.filename, f"lines {first}-{last}: {exc}") from None
        return Part(lines, elements, warnings)

    def join_parts(self, doc: Document, parts: list[Part]) -> Document:
        """The document from its page (or line) ranges: the whole-PDF checks, the element
        hierarchy across the ranges, and the document-wide settings, as `process` gives them."""
        elements, warnings = join_elements(parts)
        if long_text.is_text(doc):
            long_text.join_languages(elements, [part.elements for part in parts])
            if not has_text(elements):
                warnings.append("no text: the document yielded no element with text")
            doc.elements = self.finish(elements, doc)
            doc.warnings.extend(warnings)
            return doc
        try:
            with materialise(doc) as (path, _):
                warnings.extend(self.reader.pdf_checks(path, elements, parts[-1].pages[1]))
        except DocumentError as exc:
            raise StageError(self.name, doc.filename, str(exc)) from None
        doc.elements = self.finish(elements, doc)
        doc.warnings.extend(warnings)
        return doc
