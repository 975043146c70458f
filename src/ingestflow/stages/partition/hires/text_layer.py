"""The PDF's text layer as pypdfium2 counts it (cheap: a few milliseconds a document)."""

from __future__ import annotations

from pathlib import Path

from ingestflow.errors import DocumentError


def text_layer_chars(path: Path) -> int:
    """Characters in the PDF's text layer (0 for a scan); DocumentError when it cannot open."""
    return sum(page_text_chars(path))


def page_text_chars(path: Path) -> list[int]:
    """Characters of the text layer on each page."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise DocumentError(f"the PDF cannot be opened: {exc}") from None
    try:
        counts = []
        for page in pdf:
            text = page.get_textpage()
            counts.append(text.count_chars())
            text.close()
            page.close()
        return counts
    finally:
        pdf.close()
