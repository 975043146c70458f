"""Text regions the page's OCR left empty, read again by PP-OCRv6 (High Res)."""

from __future__ import annotations

from typing import Any

from ingestflow.stages.partition.hires.ocr import SERVED, Box, mode, read_text

#: Layout classes whose region holds text to read (a picture's or a table's is read elsewhere).
_TEXT_REGIONS = ("Title", "Text", "Page-header", "Page-footer", "Caption", "Formula", "List-item")


def fill_unread(page_layout: Any, image: Any, codes: list[str]) -> list[Box]:
    """Text regions the page's OCR (tesseract) left empty, read from their crops by PP-OCRv6
    where it serves the languages: tesseract reads nothing in light type on a dark or coloured
    band (a chapter title, a boxed heading), and the library drops an element without text, so
    the heading was lost. The boxes read (for `metadata.ocr_engine`)."""
    if mode() != "auto" or not codes or any(code not in SERVED for code in codes):
        return []  # an engine chosen by hand reads alone
    elements = page_layout.elements_array
    names = elements.element_class_id_map
    elements.texts = elements.texts.astype(object)
    read: list[Box] = []
    for i, text in enumerate(elements.texts):
        if (isinstance(text, str) and text.strip()) or names.get(
            int(elements.element_class_ids[i])
        ) not in _TEXT_REGIONS:
            continue
        x1, y1, x2, y2 = (float(v) for v in elements.element_coords[i])
        found = " ".join(read_text(image.crop((x1 - 4, y1 - 4, x2 + 4, y2 + 4))).split())
        if found:
            elements.texts[i] = found
            read.append((x1, y1, x2, y2))
    return read
