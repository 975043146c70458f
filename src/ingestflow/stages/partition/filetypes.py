"""Files for the partitioner: reading a path or bytes, what a file is, whether Fast can read it
(and why not), and the attachments of an email.

Every check raises `DocumentError` with a one-line reason; the stage adds the node and file name.
`unstructured` is imported inside the functions (the stage calls them only after `open()`).
"""

from __future__ import annotations

import codecs
import email
import email.policy
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ingestflow.elements import Document
from ingestflow.errors import DocumentError, one_line

if TYPE_CHECKING:
    from unstructured.file_utils.model import FileType

#: The reason given for every file that only OCR could read.
NEEDS_OCR = "needs OCR: the Fast strategy reads only text layers; use strategy hi_res"

#: Types that are text, where bytes that are not text mean a wrong name or a binary file.
TEXT_TYPES = frozenset(
    {"TXT", "CSV", "TSV", "MD", "HTML", "XML", "EML", "RST", "ORG", "RTF", "JSON", "NDJSON"}
)
#: Types whose name promises a binary format that text content cannot be.
BINARY_TYPES = frozenset(
    {"PDF", "DOCX", "PPTX", "XLSX", "MSG", "ODT", "EPUB", "DOC", "PPT", "XLS", "ZIP"}
)
_OFFICE_LEGACY = frozenset({"DOC", "PPT", "XLS"})
_WIDE_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_HEAD = 8192  # bytes read to tell text from binary
_PDF_HEAD = 1024  # a PDF header may follow a little junk; readers look this far
_PDF_TAIL = 2048


class Attachment(NamedTuple):
    """A file attached to an email: its name (None when the message gives none) and bytes."""

    name: str | None
    data: bytes
    last_modified: str | None


def readable(path: Path) -> Path:
    """`path` if it is a regular file this process can read; DocumentError saying why not."""
    if path.is_dir():
        raise DocumentError("not a file: the path is a directory")
    if not path.exists():
        raise DocumentError("file not found")
    if not path.is_file():
        raise DocumentError("not a regular file (a device, socket or pipe)")
    try:
        with path.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise DocumentError(f"cannot read the file: {exc.strerror or exc}") from None
    return path


@contextmanager
def temp_copy(data: bytes, name: str) -> Iterator[Path]:
    """`data` in a private temporary folder, under the base of `name` (its extension matters)."""
    base = _safe_name(name) or "document"
    if len(base.encode()) > 200:  # keep the extension, which detection uses
        base = "document" + Path(base).suffix[-20:]
    with tempfile.TemporaryDirectory(prefix="ingestflow-partition-") as folder:
        path = Path(folder) / base
        try:
            path.write_bytes(data)
        except OSError as exc:
            raise DocumentError(f"cannot write a temporary copy: {exc.strerror or exc}") from None
        yield path


def libmagic_mime(path: Path) -> str:
    """The MIME type libmagic reads from the content (`application/octet-stream` when unsure)."""
    import magic

    return str(magic.from_file(str(path), mime=True))


def classify(path: Path, name: str | None, encoding: str, images: bool = False) -> FileType:
    """Detect the type from the content (libmagic) and name, and reject what cannot be read:
    images only when `images` (High Res reads them; Fast does not)."""
    from unstructured.file_utils.filetype import detect_filetype
    from unstructured.file_utils.model import FileType

    file_type = detect_filetype(file_path=str(path), encoding=encoding)
    extension = Path(name or path.name).suffix.lower()
    if file_type is FileType.EMPTY:
        raise DocumentError("empty file: it holds no content")
    if file_type is FileType.UNK or not file_type.is_partitionable:
        raise DocumentError(
            f"unknown or unsupported file type (content: {libmagic_mime(path)}, "
            f"name: {extension or 'no extension'})"
        )
    named = FileType.from_extension(extension)
    if named is not None and named.name in BINARY_TYPES and file_type.name in TEXT_TYPES:
        raise DocumentError(
            f"not a {named.name}: the name ends in {extension} but the content is "
            f"{libmagic_mime(path)}"
        )
    if file_type.name in TEXT_TYPES and (mime := _binary_mime(path, encoding)):
        raise DocumentError(
            f"binary content: the file is typed {file_type.name} by its name "
            f"({extension or 'no extension'}) but its bytes are not text ({mime})"
        )
    if file_type.partitioner_shortname == "image" and not images:
        raise DocumentError(f"{NEEDS_OCR} (the file is an image, {file_type.mime_type})")
    if file_type.partitioner_shortname == "audio":
        raise DocumentError(f"audio is not partitioned by ingestflow ({file_type.mime_type})")
    if file_type.name in _OFFICE_LEGACY and not (
        shutil.which("soffice") or shutil.which("libreoffice")
    ):
        raise DocumentError(
            f"a legacy {file_type.name} file needs LibreOffice (soffice) to be converted, and it "
            f"is not installed; install libreoffice or save the file as {file_type.name}X"
        )
    if "pypandoc" in file_type.importable_package_dependencies:
        _require_pandoc(file_type)
    return file_type


def bomless_utf16(path: Path) -> str | None:
    """`utf-16-le` or `utf-16-be` when the file is UTF-16 text without a byte-order mark (NUL
    bytes on one side of the pairs only, in at least half of them, as Latin-script text has,
    and the start decodes to printable text), else None: such a file would otherwise look
    binary, or decode as UTF-8 with a NUL between letters."""
    with path.open("rb") as fh:
        head = fh.read(_HEAD)
    head = head[: len(head) // 2 * 2]
    if len(head) < 2 or head.startswith(_WIDE_BOMS) or b"\0" not in head:
        return None
    even, odd = head[0::2].count(0), head[1::2].count(0)
    if (even and odd) or 2 * max(even, odd) < len(head) // 2:  # binary, UTF-32, a stray NUL
        return None
    encoding = "utf-16-le" if odd else "utf-16-be"
    return encoding if _printable(head, encoding, whole=False) else None


@contextmanager
def transcoded(path: Path, encoding: str, name: str | None) -> Iterator[Path]:
    """The text of `path`, in `encoding`, as a UTF-8 temporary copy named like `name` (or the
    file); DocumentError when it does not decode."""
    try:
        text = path.read_bytes().decode(encoding)
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"the text does not decode as {encoding} ({exc.reason} at byte {exc.start})"
        ) from None
    with temp_copy(text.encode("utf-8"), name or path.name) as copy:
        yield copy


def _binary_mime(path: Path, encoding: str) -> str | None:
    """libmagic's MIME type when the bytes are binary (NUL bytes outside UTF-16/32, or libmagic
    sees no text and the bytes are not printable text in `encoding`), else None."""
    with path.open("rb") as fh:
        head = fh.read(_HEAD)
    mime = libmagic_mime(path)
    wide = encoding.lower().replace("_", "-").startswith(("utf-16", "utf-32", "utf16", "utf32"))
    if b"\0" in head and not wide and not head.startswith(_WIDE_BOMS):
        return None if bomless_utf16(path) else mime
    if mime.partition("/")[0] in ("image", "audio", "video"):
        return mime
    # libmagic calls any 1-byte file octet-stream ("very short file"): `x` is text all the same
    if mime == "application/octet-stream" and not _printable(head, encoding, len(head) < _HEAD):
        return mime
    return None


def _printable(head: bytes, encoding: str, whole: bool) -> bool:
    """True when `head` (the whole file, or its start) decodes in `encoding` to printable text
    and whitespace."""
    try:
        text = codecs.getincrementaldecoder(encoding)().decode(head, final=whole)
    except (UnicodeDecodeError, LookupError):
        return False
    return all(char.isprintable() or char.isspace() for char in text)


def _require_pandoc(file_type: FileType) -> None:
    import pypandoc

    try:
        pypandoc.get_pandoc_path()
    except OSError:
        raise DocumentError(
            f"{file_type.name} needs pandoc, which is missing; install the pypandoc-binary package"
        ) from None


def pdf_zero_element_reason(path: Path, strategy: str = "fast") -> str:
    """Why a PDF gave no elements under `strategy` ("fast" or "hi_res"), found with pypdf:
    damaged, encrypted, or (Fast) no text layer."""
    problem, has_text, pages = _pdf_state(path)
    if problem is not None:
        return problem
    if has_text and strategy == "hi_res":
        return (
            "no text could be extracted under the High Res strategy although the PDF has a "
            "text layer (damaged, or too complex for its reader, pdfminer); try strategy fast, "
            "which falls back to pdfium's reading"
        )
    if has_text:
        return (
            "no text could be extracted although the PDF has a text layer (damaged, or too "
            "complex for the Fast strategy's reader); try strategy hi_res"
        )
    return f"{NEEDS_OCR} (the PDF has {pages} page(s) and no text layer: scanned or image-only)"


def pdf_problem(path: Path) -> str | None:
    """Why the PDF cannot be read at all (damaged, encrypted, no pages), or None."""
    return _pdf_state(path)[0]


def _pdf_state(path: Path) -> tuple[str | None, bool, int]:
    """(why the PDF cannot be read, or None; whether any page has a text layer; its pages), by
    pypdf."""
    import pypdf
    from pypdf import PasswordType

    with path.open("rb") as fh:
        head = fh.read(_PDF_HEAD)
        fh.seek(max(0, path.stat().st_size - _PDF_TAIL))
        tail = fh.read()
    if b"%PDF-" not in head:
        lost = "damaged PDF: no %PDF- header at its start (not a PDF, or its beginning is lost)"
        return lost, False, 0
    if b"%%EOF" not in tail:
        return "truncated or damaged PDF: no %%EOF marker at its end", False, 0
    try:
        reader = pypdf.PdfReader(str(path))
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            locked = (
                "encrypted PDF: it opens only with a password, which ingestflow cannot supply; "
                "remove the password and submit it again"
            )
            return locked, False, 0
        pages = len(reader.pages)
        has_text = any((page.extract_text() or "").strip() for page in reader.pages)
    except Exception as exc:  # pypdf raises many types for a damaged file
        return f"damaged PDF: {one_line(exc, where=False)}", False, 0
    if pages == 0:
        return "damaged PDF: it has no pages", False, 0
    return None, has_text, pages


def pdf_page_count(path: Path) -> int | None:
    """Number of pages, or None when pypdf cannot tell."""
    import pypdf

    try:
        return len(pypdf.PdfReader(str(path)).pages)
    except Exception:  # only a hint for a warning: never fail the document on it
        return None


def pdf_page_ranges(doc: Document, workers: int, per_part: int) -> list[tuple[int, int]]:
    """Page ranges (first, last) that spread a PDF over `workers` (about four ranges a worker,
    at least `per_part` pages each), or `[]` when it is not a PDF or too short to be worth it."""
    if workers <= 1 or not _looks_like_pdf(doc):
        return []
    pages = pdf_pages_held(doc)
    if pages is None or pages < 2 * per_part:
        return []
    size = max(per_part, -(-pages // (workers * 4)))
    return [(first, min(first + size - 1, pages)) for first in range(1, pages + 1, size)]


def pdf_pages_held(doc: Document) -> int | None:
    """The pages a PDF holds, found by walking its page tree (qpdf, through pikepdf), or None
    when it cannot be read here. Not the tree's /Count, which a file may overstate: ranges cut
    by a /Count of 100,000 over a one-page file name pages that do not exist."""
    import io

    import pikepdf

    try:
        source = io.BytesIO(doc.data) if doc.data is not None else doc.path
        with pikepdf.open(source) as pdf:
            return len(pdf.pages)
    except Exception:  # not readable here: the partitioner reads it whole and says why
        return None


def _looks_like_pdf(doc: Document) -> bool:
    if doc.data is not None:
        return doc.data[:1024].find(b"%PDF-") >= 0
    if doc.path is None:
        return False
    try:
        with open(doc.path, "rb") as fh:
            return fh.read(1024).find(b"%PDF-") >= 0
    except OSError:
        return False


@contextmanager
def pdf_pages(path: Path, first: int, last: int) -> Iterator[Path]:
    """Pages first..last (1-based) of a PDF as a temporary PDF of their own."""
    import pypdfium2 as pdfium

    with tempfile.TemporaryDirectory(prefix="ingestflow-pages-") as folder:
        target = Path(folder) / f"pages-{first}-{last}.pdf"
        try:
            source = pdfium.PdfDocument(str(path))
        except pdfium.PdfiumError as exc:
            raise DocumentError(f"the PDF cannot be opened: {exc}") from None
        part = pdfium.PdfDocument.new()
        try:
            part.import_pages(source, list(range(first - 1, last)))
            part.save(str(target))
        finally:
            part.close()
            source.close()
        stat = path.stat()  # the part carries the document's time (metadata.last_modified)
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        yield target


def iter_attachments(path: Path, file_type: FileType) -> Iterator[Attachment]:
    """The attachments of an .eml or .msg file, in message order."""
    if file_type.name == "EML":
        with path.open("rb") as fh:
            message = email.message_from_binary_file(fh, policy=email.policy.default)
        for part in message.iter_attachments():
            if part.get_content_type().startswith("multipart/"):
                copy = email.message_from_bytes(part.as_bytes(), policy=email.policy.default)
                del copy["Content-Disposition"]  # else the copy's body is the attachment itself
                data = copy.as_bytes()
            else:
                content = part.get_content()
                data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            yield Attachment(_safe_name(part.get_filename()), data, None)
    elif file_type.name == "MSG":
        from oxmsg import Message

        for item in Message.load(str(path)).attachments:
            modified = item.last_modified.isoformat() if item.last_modified else None
            yield Attachment(_safe_name(item.file_name), item.file_bytes or b"", modified)


def _safe_name(name: str | None) -> str | None:
    """An attachment's name without any directory part (a name may try to climb out)."""
    if not name:
        return None
    base = os.path.basename(name.replace("\\", "/")).replace("\0", "")
    return base if base not in ("", ".", "..") else None
