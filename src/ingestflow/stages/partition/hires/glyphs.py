"""Glyphs of a PDF's text layer that have no Unicode mapping (the font says neither by a
ToUnicode map nor by a glyph name what they are): what pdfium reads of them.

pdfminer writes such a glyph as `(cid:N)`; pdfium reports it with a mapping error and the
character code as its "Unicode" (a control character for a code below 32). What the glyph is can
still be read from its outline's box on the page: a thin horizontal bar set at the middle of the
digits it stands before is a minus sign (Elsevier's math fonts draw `−0.9393` that way); a
small square mark that starts a line is a list's bullet (IBM's BookMaster fonts). Any other
unmapped glyph becomes U+FFFD (`UNKNOWN`), visible, never dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The minus sign, as an unmapped bar before a number reads.
MINUS = "\u2212"
#: What an unmapped glyph that cannot be read becomes: the Unicode replacement character.
UNKNOWN = "\ufffd"
#: What an unmapped mark that starts a line (a list's) becomes.
BULLET = "\u2022"
#: A glyph box thinner than this (points) draws nothing: a minus's stroke is ~0.3 pt.
NOTHING_DRAWN = 0.05
#: A bar is at most this high for its width (a minus's stroke: ~0.08 here).
MAX_BAR_RATIO = 0.25


def unmapped(text: Any, index: int) -> bool:
    """Whether pdfium's character `index` of textpage `text` has no Unicode mapping."""
    import pypdfium2.raw as pdfium_c

    return bool(pdfium_c.FPDFText_HasUnicodeMapError(text.raw, index) == 1)


def read_glyph(text: Any, index: int) -> str:
    """What the unmapped glyph `index` of textpage `text` shows, from its outline's tight box
    (not the font's line box): MINUS for a thin horizontal bar right before a digit, at the
    middle of the digit's height; BULLET for a squarish mark that starts a line, before a space
    and the line's text, smaller than its letters and at their middle; a space for a glyph that
    draws nothing; else UNKNOWN. Upright
    text only (turned text: UNKNOWN)."""
    left, bottom, right, top = text.get_charbox(index)
    width, height = right - left, top - bottom
    if min(width, height) < NOTHING_DRAWN:
        return " "  # it draws nothing (a line feed typed into a string): no character hides
    if width <= 0 or index + 1 >= text.count_chars():
        return UNKNOWN
    if height > MAX_BAR_RATIO * width:
        return _bullet(text, index, (left, bottom, right, top))
    if not text.get_text_range(index + 1, 1).isdigit():
        return UNKNOWN
    d_left, d_bottom, _, d_top = text.get_charbox(index + 1)
    size = d_top - d_bottom  # the digit's height
    middle = (bottom + top) / 2
    if size <= 0 or not d_bottom + 0.2 * size <= middle <= d_bottom + 0.8 * size:
        return UNKNOWN  # an underline, a rule, an overbar: not the number's sign
    if not 0.3 * size <= width <= 1.5 * size or d_left - right > size:
        return UNKNOWN  # a long rule, a dot, or a bar apart from the number
    return MINUS


def _bullet(text: Any, index: int, box: tuple[float, float, float, float]) -> str:
    """BULLET where the unmapped glyph at `box` is a list's mark (`read_glyph`), else UNKNOWN."""
    left, bottom, right, top = box
    starts_line = index == 0 or text.get_text_range(index - 1, 1) in ("\r", "\n")
    if not starts_line or text.get_text_range(index + 1, 1) != " ":
        return UNKNOWN
    if not 0.6 <= (right - left) / (top - bottom) <= 1.6 or index + 2 >= text.count_chars():
        return UNKNOWN
    l_left, l_bottom, _, l_top = text.get_charbox(index + 2)  # the line's first letter
    size = l_top - l_bottom
    middle = (bottom + top) / 2
    if size <= 0 or not (0.2 * size <= top - bottom <= 0.9 * size):
        return UNKNOWN
    if not l_bottom + 0.2 * size <= middle <= l_bottom + 0.8 * size or l_left - right > 3 * size:
        return UNKNOWN
    return BULLET


def page_codes(path: Path, page_indices: set[int]) -> dict[int, dict[int, str]]:
    """For each page (0-based) of `page_indices`: what each character code of its unmapped
    glyphs reads as (`read_glyph`), where every glyph of that code on the page reads the same;
    UNKNOWN where they differ (pdfminer's `(cid:N)` names the code, not the glyph)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    found: dict[int, dict[int, str]] = {}
    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError:
        return found
    try:
        for index in sorted(i for i in page_indices if 0 <= i < len(pdf)):
            page = pdf[index]
            text = page.get_textpage()
            readings: dict[int, set[str]] = {}
            for i in range(text.count_chars()):
                if unmapped(text, i):
                    code = pdfium_c.FPDFText_GetUnicode(text.raw, i)
                    readings.setdefault(code, set()).add(read_glyph(text, i))
            found[index] = {
                code: seen.pop() if len(seen) == 1 else UNKNOWN for code, seen in readings.items()
            }
            text.close()
            page.close()
        return found
    finally:
        pdf.close()
