"""Reading one file — a document, a page or line range of one, or an attachment — into the
library's elements with the Fast or the High Res strategy (`FileReader`, the interface the
partition stage and Auto compose)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.elements import Element
from ingestflow.errors import DocumentError, one_line
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.partition import (
    filetypes,
    formulas,
    hires,
    long_text,
    nlp_batch,
    office_limits,
    text_narrative,
)
from ingestflow.stages.partition.attachments import attachments
from ingestflow.stages.partition.hires import blank_pages, clean_text, layout_model
from ingestflow.stages.partition.page_ranges import has_text

if TYPE_CHECKING:
    from unstructured.file_utils.model import FileType

_EMAIL_TYPES = ("EML", "MSG")
#: HTML files from this size have their texts listed first and checked by spaCy in batches
#: (a smaller one seldom has the nlp_batch.MIN_TEXTS texts that make that pay).
HTML_PREFETCH_BYTES = 128 << 10
_NO_PDF_IMAGE_BLOCKS = (
    "extract_image_block_types is not applied to PDFs by the Fast strategy (it needs hi_res)"
)


class FileReader:
    """Reads files into elements (as dicts) and warnings, by a partition node's settings."""

    def __init__(
        self,
        node: str,
        settings: UnstructuredPartitionSettings,
        image_blocks: list[str],
        partition: Callable[..., Any],
        latex_later: bool = False,
    ) -> None:
        self.node = node
        self.settings = settings
        self.image_blocks = image_blocks  # the element types to crop (`image_base64`)
        self.partition = partition  # the library's `partition`, imported offline
        self.latex_later = latex_later  # a later node asks a model for the formulas' LaTeX

    def read(
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
        hi_res = st.partition_strategy.lays_out_pages
        warnings: list[str] = []
        # UTF-16 without a byte-order mark, when no encoding was set: read as what it is
        wide = None if "encoding" in st.model_fields_set else filetypes.bomless_utf16(path)
        encoding = wide or st.encoding
        try:
            file_type = filetypes.classify(path, name, encoding, images=hi_res)
        except DocumentError:
            raise
        except Exception as exc:  # detection itself broke on these bytes
            raise DocumentError(
                f"file-type detection failed: {one_line(exc, where=False)}"
            ) from exc
        if file_type.name not in filetypes.TEXT_TYPES:  # NULs of a binary format: not text
            wide, encoding = None, st.encoding
        if file_type.name in office_limits.OFFICE_TYPES:  # a zip of XML: bounded before reading
            office_limits.check(path, file_type.name)
        if wide and file_type.name == "EML":  # the library parses a message's bytes: as UTF-8
            with filetypes.transcoded(path, wide, name) as copy:
                read, notes = self.read(copy, name or path.name, True, last_modified)
            return read, [_wide_note(wide), *notes]
        kwargs: dict[str, Any] = {
            "filename": str(path),
            "metadata_filename": name,
            "strategy": "fast",
            "encoding": encoding,
            "include_page_breaks": st.include_page_breaks,
            "xml_keep_tags": st.xml_keep_tags,
            "unique_element_ids": st.unique_element_ids,
        }
        blocks = self.image_blocks
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
        if wide:
            warnings.append(_wide_note(wide))
        try:
            try:
                if hi_res and paged:
                    found = self._hi_res(path, file_type, kwargs)
                else:
                    with _batched_nlp(path, file_type.name, kwargs, self.partition):
                        found = self.partition(**kwargs)
            except UnicodeDecodeError:
                detected = None if "encoding" in st.model_fields_set else detect_encoding(path)
                if detected is None:
                    raise
                kwargs["encoding"] = detected  # the default did not fit: the detected one
                found = self.partition(**kwargs)
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
        if file_type.name == "PDF" and not hi_res and not has_text(elements):
            read = _pdfium_elements(path, name, st, first_page)  # pdfminer read nothing
            if read:
                elements = read
                warnings.append(
                    "the Fast reader (pdfminer) found no text in this PDF's text layer, which "
                    "pdfium reads: its text was taken from pdfium instead (paragraphs, without "
                    "layout analysis)"
                )
        if hi_res and paged:
            pdf = path if file_type.name == "PDF" else None  # cleaned first: bullets it reads
            warnings.extend(clean_text.clean_elements(elements, pdf, first_page))
            elements = hires.split_list_items(elements, st.unique_element_ids)
            warnings.extend(formulas.notes(elements, self.latex_later))
        if hi_res and paged and file_type.name != "PDF":  # a PDF's in `pdf_checks`
            warnings.extend(blank_pages.notes(path, elements, True, None, first_page))
        _name_files(elements, path, name, is_temp, temp_time)
        if file_type.name == "PDF" and whole:
            warnings.extend(self.pdf_checks(path, elements, first_page=first_page))
        if file_type.name in _EMAIL_TYPES:
            sent = elements[0]["metadata"].get("last_modified") if elements else None
            elements.extend(attachments(self.read, path, file_type, name, sent, warnings))
        return elements, warnings

    def pdf_checks(
        self, path: Path, elements: list[Element], pages: int | None = None, first_page: int = 1
    ) -> list[str]:
        """A whole PDF's checks: DocumentError when it gave no text because it is broken (the
        library returns nothing, without an error, for several broken PDFs) or, under Fast, has
        no text layer; warnings for pages without text (High Res: which are blank).
        `first_page`: the number of the file's first page in its document (Auto reads a run of
        pages as a file of its own)."""
        hi_res = self.settings.partition_strategy.lays_out_pages
        if hi_res:  # OCR read every page: one without text is blank, not a failure
            problem = filetypes.pdf_problem(path) if not has_text(elements) else None
            if problem is None and not has_text(elements) and _has_text_layer(path):
                problem = filetypes.pdf_zero_element_reason(path, "hi_res")
            if problem is not None:
                raise DocumentError(problem)
            return blank_pages.notes(path, elements, False, pages, first_page)
        if not has_text(elements):  # page breaks alone are what a broken PDF may give
            raise DocumentError(filetypes.pdf_zero_element_reason(path, "fast"))
        pages = pages or filetypes.pdf_page_count(path)
        warnings = _blank_page_warning(pages, elements, first_page)
        if self.settings.extract_image_block_types:
            warnings.append(_NO_PDF_IMAGE_BLOCKS)
        return warnings

    def _hi_res(self, path: Path, file_type: FileType, kwargs: dict[str, Any]) -> list[Any]:
        """The library's hi_res on the offline layout model (module `hires`)."""
        st = self.settings
        is_image = file_type.partitioner_shortname == "image"
        kwargs.update(
            strategy="hi_res",
            hi_res_model_name=layout_model.LAYOUT_MODEL_NAME,
            languages=list(st.ocr_languages),
            infer_table_structure=False,  # ingestflow's own table structure, in the hooks
            pdf_image_dpi=hires.DPI,
        )
        blocks = self.image_blocks
        if blocks:
            kwargs["extract_image_block_types"] = blocks
            kwargs["extract_image_block_to_payload"] = True
        if not is_image:
            hires.text_layer_chars(path)  # a PDF pdfium cannot open fails here, in one line
        tables = st.infer_table_structure or st.pdf_infer_table_structure
        with hires.hooks(path, is_image, tables, list(st.ocr_languages)) as call:
            found = list(self.partition(**kwargs))
        hires.mark_ocr(found, call, kwargs.get("starting_page_number", 1))
        return hires.type_running_heads(hires.drop_contained(hires.drop_repeats(found)))


def _has_text_layer(path: Path) -> bool:
    """Whether pdfium finds text-layer characters in the PDF (False when it cannot open it)."""
    try:
        return hires.text_layer_chars(path) > 0
    except DocumentError:
        return False


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


def _wide_note(encoding: str) -> str:
    return (
        f"the text is {encoding.upper()} without a byte-order mark; it was read as {encoding}, "
        "detected from its bytes (set the partitioner's encoding setting to choose)"
    )


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
        return text_narrative.prefetched(
            nlp_batch.text_paragraphs(path, kwargs["encoding"], grouper)
        )
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
    if file_type.name in ("CSV", "TSV") and type(exc).__name__ == "ParserError":
        return _table_failure(str(exc), file_type.name)
    text = one_line(exc, where=False)
    if file_type.name == "PDF" and ("password" in text.lower() or "encrypt" in text.lower()):
        return f"encrypted PDF: {text}"
    return f"the {file_type.name} file could not be partitioned: {text}"


def _table_failure(said: str, kind: str) -> str:
    """One line for pandas' ParserError on a CSV or TSV: which line, how many fields its header
    has and how many it found, and how to fix it."""
    import re

    counts = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", said)
    if counts is None:
        return f"the {kind} file is malformed: {' '.join(said.split())[:300]}"
    expected, line, found = counts.groups()
    delimiter = "a tab" if kind == "TSV" else "the delimiter"
    return (
        f"the {kind} file's line {line} has {found} fields where its header has {expected}: "
        f'quote the values that hold {delimiter} ("a, b"), or fix the row'
    )
