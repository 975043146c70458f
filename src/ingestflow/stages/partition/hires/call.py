"""One High Res call: what its hooks need to know and what they record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingestflow.stages.partition.hires import ocr
from ingestflow.stages.partition.hires.tables import model as table_model

#: Rendering resolution of the library's hi_res (layout model and OCR), in dots per inch.
DPI = 200


@dataclass
class Call:
    """What the hooks need to know about the hi_res call in progress."""

    path: Path
    is_image: bool
    tables: bool
    language: str  # tesseract's form: "eng+kor"
    table_mode: str = table_model.DEFAULT_MODE
    pages_ocr_full: int = 0
    pages_ocr_blocks: int = 0
    ocr_engine: str = ocr.TESSERACT  # page text (module `ocr`)
    table_ocr_engine: str = ocr.TESSERACT  # table cells without a text layer
    ocr_pages: dict[int, str] = field(default_factory=dict)  # page OCRed whole → engine
    ocr_regions: list[tuple[int, ocr.Box, str]] = field(default_factory=list)  # region OCRed


def mark_ocr(elements: list[Any], call: Call, first_page: int = 1) -> None:
    """Name the OCR engine in the metadata of each element whose text OCR read."""
    ocr.mark_elements(elements, call.ocr_pages, call.ocr_regions, first_page)
