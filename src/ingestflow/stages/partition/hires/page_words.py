"""The words of a High Res page or table crop, from the text layer or tesseract, a text page's
runs and a layout's page number: shared by `hires` and `table_finding` (kept apart so neither
imports the other)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from ingestflow.stages.partition.hires import glyphs
from ingestflow.stages.partition.hires.tables.parts import Word


def page_number(layout: Any, call: Any) -> int:
    """The page's number from 1 (the library numbers an image's frames from 0, PDF pages from 1)."""
    return layout.number + 1 if call.is_image else layout.number


def image_turn(image: Any) -> int:
    """The degrees (counter-clockwise) the library turned a rendered PDF page by after
    rendering it (a page stored turned whose text then ran sideways), from the page image's
    notes: 0, 90, 180 or 270."""
    try:
        return int(getattr(image, "info", {}).get("pdf_rotation_correction", 0)) % 360
    except (TypeError, ValueError):
        return 0


def pdf_words(path: Path, page_index: int, image_width: int, turn: int = 0) -> list[Word]:
    """The page's words from the text layer, in pixels of the rendered page image (read once
    per page: table finding and the table builder both ask, at ~0.1 s a page of text); `turn`:
    `image_turn` of that image. Text set vertically (a column title turned a quarter, as in a
    narrow table column) comes as one word per line of it, in its reading order, not one word
    per letter."""
    stat = os.stat(path)
    stamp = (stat.st_mtime_ns, stat.st_size)
    return list(_pdf_words(str(path), stamp, page_index, image_width, turn))


class _Frame:
    """The page as the library's image of it shows it: its crop box, turned clockwise by its
    `/Rotate`, then back counter-clockwise by the library's `turn` (`image_turn`). Maps a box of
    the text layer (user space, y up) to that frame, in points with y up, so a page stored
    turned (a landscape table on a portrait page) gives words where its image has them."""

    def __init__(self, page: Any, turn: int = 0) -> None:
        self.left, self.bottom, right, top = page.get_cropbox()
        self.w, self.h = right - self.left, top - self.bottom
        self.stored = page.get_rotation() % 360
        self.rotation = (self.stored - turn) % 360
        turned = self.rotation in (90, 270)
        self.width, self.height = (self.h, self.w) if turned else (self.w, self.h)

    def point(self, x: float, y: float) -> tuple[float, float]:
        u, v = x - self.left, y - self.bottom
        if self.rotation == 90:
            return v, self.w - u
        if self.rotation == 180:
            return self.w - u, self.h - v
        if self.rotation == 270:
            return self.h - v, u
        return u, v

    def box(self, box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
        """(left, bottom, right, top) in user space -> the same in the shown frame."""
        (x0, y0), (x1, y1) = self.point(box[0], box[1]), self.point(box[2], box[3])
        return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def pdf_runs(path: Path, page_index: int, image_width: int, turn: int = 0) -> list[Word]:
    """The boxes of the page's text runs (pdfium's text rectangles: a line of prose, or a
    table's cell), in pixels of the rendered page — a cheap stand-in for words, for `columned`
    (a text page's words cost ten times as much to read); `turn` as for `pdf_words`."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        page = pdf[page_index]
        frame = _Frame(page, turn)
        height = frame.height
        scale = image_width / frame.width
        text = page.get_textpage()
        runs = []
        for i in range(text.count_rects()):
            left, bottom, right, top = frame.box(text.get_rect(i))
            runs.append(
                Word(
                    "run",
                    left * scale,
                    (height - top) * scale,
                    right * scale,
                    (height - bottom) * scale,
                )
            )
        text.close()
        page.close()
        return runs
    finally:
        pdf.close()


@lru_cache(maxsize=4)
def _pdf_words(
    path: str, stamp: tuple[int, int], page_index: int, image_width: int, turn: int
) -> tuple[Word, ...]:
    """`pdf_words` of the file as it is at `stamp` (its mtime and size: a new file of the same
    name is read anew)."""
    import math

    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    pdf = pdfium.PdfDocument(str(path))
    try:
        page = pdf[page_index]
        frame = _Frame(page, turn)
        height = frame.height
        scale = image_width / frame.width
        shown = math.radians(frame.rotation)  # a letter's angle as shown: its own less the page's
        text = page.get_textpage()
        words: list[Word] = []
        current: list[tuple[str, tuple[float, float, float, float]]] = []
        turned = False  # the current word is set vertically
        space = False  # a space came after the current word's last letter

        def flush() -> None:
            if current:
                chars = "".join(c for c, _ in current).strip()
                boxes = [b for _, b in current]
                left = min(b[0] for b in boxes)
                right = max(b[2] for b in boxes)
                top = max(b[3] for b in boxes)
                bottom = min(b[1] for b in boxes)
                words.append(
                    Word(
                        chars,
                        left * scale,
                        (height - top) * scale,
                        right * scale,
                        (height - bottom) * scale,
                    )
                )
                current.clear()

        for i in range(text.count_chars()):
            char = text.get_text_range(i, 1)
            if (not char or char < " ") and glyphs.unmapped(text, i):
                char = glyphs.read_glyph(text, i)  # a minus sign, or U+FFFD: never dropped
            if not char or char.isspace():
                if turned and current:
                    space = True  # a vertical line's words stay one word (reading order)
                elif (
                    frame.stored
                    and char in "\r\n"
                    and pdfium_c.FPDFText_IsGenerated(text.raw, i) == 1
                ):
                    pass  # pdfium breaks the lines of a page stored turned mid-word: there,
                    # the letters' places decide (below)
                else:
                    flush()
                continue
            box = frame.box(text.get_charbox(i, loose=True))
            angle = pdfium_c.FPDFText_GetCharAngle(text.raw, i)
            vertical = abs(math.sin(angle + shown)) > 0.5
            if current:
                prev = current[-1][1]
                if vertical != turned:
                    flush()
                elif vertical:
                    across = max(prev[2] - prev[0], 1.0)  # the font's size, turned
                    gap = max(box[1] - prev[3], prev[1] - box[3])
                    if (
                        abs(box[0] - prev[0]) > 0.5 * across
                        or gap > (0.8 if space else 0.25) * across
                    ):
                        flush()
                    elif space:
                        current.append((" ", box))
                else:
                    size = max(prev[3] - prev[1], 1.0)
                    if box[0] - prev[2] > 0.25 * size or abs(box[1] - prev[1]) > 0.5 * size:
                        flush()
            turned, space = vertical, False
            current.append((char, box))
        flush()
        text.close()
        page.close()
        return tuple(words)
    finally:
        pdf.close()


def ocr_words(crop: Any, language: str, scale: float) -> list[Word]:
    """Words of a table image read by tesseract (rules erased; small scans enlarged first)."""
    import cv2
    import unstructured_pytesseract as tess

    from ingestflow.stages.partition.hires.tables.grid import erase_rules

    if crop.size == 0:
        return []
    image = erase_rules(crop)
    if scale > 1.05:
        image = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
    data = tess.image_to_data(image, lang=language, output_type=tess.Output.DICT, config="--psm 6")
    words = []
    for text, conf, x, y, w, h in zip(
        data["text"],
        data["conf"],
        data["left"],
        data["top"],
        data["width"],
        data["height"],
        strict=False,
    ):
        if text.strip() and float(conf) >= 0:
            words.append(Word(text, x / scale, y / scale, (x + w) / scale, (y + h) / scale))
    return words
