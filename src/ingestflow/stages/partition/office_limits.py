"""Office files (docx, pptx, xlsx, odt, epub) are zip archives of XML: a 30 KB file can hold
20 MB of `<w:p/>`, which the library then walks for minutes at a gigabyte. Before the library
opens one, its parts' sizes are read from the archive's directory and its XML parts are
streamed once to count their elements; a file past a bound fails at once, alone, with a reason
(a bomb, or a document too large to read: split it)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from ingestflow.errors import DocumentError

#: The zip-based types the library reads (unstructured's FileType names).
OFFICE_TYPES = frozenset({"DOCX", "PPTX", "XLSX", "ODT", "EPUB"})
#: All parts together, unpacked.
MAX_UNPACKED = 1 << 30
#: An XML part over RATIO_FROM bytes unpacked packs at most this well: real documents' XML
#: packs 5-30 times; a run of one repeated element, hundreds of times.
MAX_RATIO = 100
RATIO_FROM = 1 << 20
#: Elements (start tags) in one XML part: the library spends tens of microseconds on each.
MAX_ELEMENTS = 2_000_000
#: A Word file's paragraphs (`<w:p>`), each ~175 microseconds and ~0.5 KB of the library's
#: (an empty one too): 200,000 is 25 times the 872-page handbook of the corpus (8,152), and
#: bounds a paragraph bomb padded to pass the other limits to ~35 s (it ran 342 s at 1.1 GB).
MAX_PARAGRAPHS = 200_000
_PARAGRAPHS = (b"<w:p>", b"<w:p/>", b"<w:p ")
MAX_PARTS = 10_000
_CHUNK = 1 << 20
_XML = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx")  # epub: (x)html


def check(path: Path, kind: str) -> None:
    """DocumentError when the `kind` file at `path` unpacks past a bound; nothing when it is
    within them, or is no zip archive (the library says what is wrong with it)."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        return
    with archive:
        parts = archive.infolist()
        if len(parts) > MAX_PARTS:
            raise _refused(kind, f"it holds {len(parts):,} parts, over the {MAX_PARTS:,} limit")
        total = sum(part.file_size for part in parts)
        if total > MAX_UNPACKED:
            raise _refused(kind, f"it unpacks to {total:,} bytes, over the {MAX_UNPACKED:,} limit")
        xml = [part for part in parts if part.filename.endswith(_XML)]
        for part in xml:  # not media: a blank bitmap packs a thousand times, and is no bomb
            ratio = part.file_size / max(part.compress_size, 1)
            if part.file_size >= RATIO_FROM and ratio > MAX_RATIO:
                raise _refused(
                    kind,
                    f"its part {part.filename} unpacks from {part.compress_size:,} to "
                    f"{part.file_size:,} bytes ({ratio:,.0f} times, over {MAX_RATIO})",
                )
        for part in xml:
            _count(archive, part, kind)


def _count(archive: zipfile.ZipFile, part: zipfile.ZipInfo, kind: str) -> None:
    """Stream one XML part, counting its start tags (never more bytes than its entry says, so
    an entry that understates its size is cut off where the library would fail on it too)."""
    elements = read = paragraphs = 0
    word = kind == "DOCX"
    try:
        with archive.open(part) as stream:
            while chunk := stream.read(_CHUNK):
                read += len(chunk)
                elements += chunk.count(b"<") - chunk.count(b"</") - chunk.count(b"<?")
                elements -= chunk.count(b"<!")
                if elements > MAX_ELEMENTS:
                    raise _refused(
                        kind,
                        f"its part {part.filename} holds over {MAX_ELEMENTS:,} elements",
                    )
                paragraphs += sum(chunk.count(tag) for tag in _PARAGRAPHS) if word else 0
                if paragraphs > MAX_PARAGRAPHS:
                    raise _refused(
                        kind,
                        f"its part {part.filename} holds over {MAX_PARAGRAPHS:,} paragraphs",
                    )
                if read > MAX_UNPACKED:
                    raise _refused(kind, f"its part {part.filename} unpacks past its stated size")
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError):
        return  # damaged, encrypted or of an unknown method: the library says what is wrong


def _refused(kind: str, what: str) -> DocumentError:
    return DocumentError(
        f"the {kind} file is refused before reading: {what} (a decompression bomb, or a "
        "document too large to read whole: split it)"
    )
