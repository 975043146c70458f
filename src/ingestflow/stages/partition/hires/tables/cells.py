"""Table structure of High Res pages: `text_as_html` of the layout's Table regions from
ingestflow's own builders (`table_model`), with words from the text layer or OCR of the crop."""

from __future__ import annotations

from typing import Any

from ingestflow.stages.partition.hires import ocr, prose
from ingestflow.stages.partition.hires.call import Call
from ingestflow.stages.partition.hires.page_words import (
    image_turn,
    ocr_words,
    page_number,
    pdf_words,
)
from ingestflow.stages.partition.hires.tables import model as table_model
from ingestflow.stages.partition.hires.tables.parts import Word


def add_tables(layout: Any, image: Any, call: Call, has_text: bool) -> None:
    """Fill `text_as_html` of the page's Table regions."""
    import numpy as np

    elements = layout.elements_array if hasattr(layout, "elements_array") else layout
    class_map = elements.element_class_id_map
    table_ids = [k for k, v in class_map.items() if v == "Table"]
    if not table_ids or not len(elements.element_class_ids):
        return
    indices = np.where(np.isin(elements.element_class_ids, table_ids))[0]
    if not len(indices):
        return
    if len(elements.text_as_html) != len(elements.element_class_ids):
        elements.text_as_html = np.array([None] * len(elements.element_class_ids), dtype=object)
    page_words = (
        pdf_words(call.path, layout.number - 1, image.width, image_turn(image))
        if has_text and not call.is_image
        else None
    )
    rgb = np.asarray(image.convert("RGB"))
    gray = np.asarray(image.convert("L"))
    running_text: dict[int, list[prose.Block]] = {}
    for index in indices:
        if isinstance(elements.text_as_html[index], str):
            continue  # read already (table_finding)
        x0, y0, x1, y1 = (float(v) for v in elements.element_coords[index])
        pad = 6
        box = (
            max(0, x0 - pad),
            max(0, y0 - pad),
            min(image.width, x1 + pad),
            min(image.height, y1 + pad),
        )
        crop = gray[int(box[1]) : int(box[3]), int(box[0]) : int(box[2])]
        bgr = rgb[int(box[1]) : int(box[3]), int(box[0]) : int(box[2]), ::-1]
        if page_words is not None:
            words = [
                Word(w.text, w.x0 - box[0], w.y0 - box[1], w.x1 - box[0], w.y1 - box[1])
                for w in page_words
                if box[0] <= w.cx <= box[2] and box[1] <= w.cy <= box[3]
            ]
        else:
            words = _table_ocr(call, index, elements, crop, bgr, max(1.0, 1600 / image.width))
            page = page_number(layout, call)
            call.ocr_regions.append((page, (x0, y0, x1, y1), call.table_ocr_engine))
        if prose.is_prose(words):  # a page of narrow columns taken for a table
            found = prose.paragraphs(words)
            running_text[index] = [
                prose.Block(b.text, _shifted(b.box, box), b.heading) for b in found
            ]
            continue
        html = table_model.table_html_from(bgr, crop, words, call.table_mode) if crop.size else ""
        elements.text_as_html[index] = html or None
    if hasattr(layout, "elements_array"):
        prose.replace_regions(layout, running_text)


def _shifted(
    box: tuple[float, float, float, float], by: tuple[float, float, float, float]
) -> tuple[float, float, float, float]:
    return (box[0] + by[0], box[1] + by[1], box[2] + by[0], box[3] + by[1])


def _table_ocr(
    call: Call, index: int, elements: Any, gray: Any, bgr: Any, scale: float
) -> list[Word]:
    """Words of a table crop by the engine chosen for table cells; when it is not the page's,
    the Table's text is these words too (one reading for its text and its cells)."""
    if call.table_ocr_engine == ocr.TESSERACT:
        return ocr_words(gray, call.language, scale)
    words = ocr.read_words(bgr)
    if call.table_ocr_engine != call.ocr_engine and words:
        if elements.texts.dtype != object:  # fixed-width strings would cut the text short
            elements.texts = elements.texts.astype(object)
        elements.texts[index] = " ".join(w.text for w in words)
    return words
