"""Clean text of the elements High Res and Auto read (Fast keeps the library's text, byte for byte):

- ligatures expanded (ﬁ → fi, ﬂ → fl, ﬀ ﬃ ﬄ ﬅ ﬆ);
- accents composed: the spacing accents of a LaTeX PDF's text layer (`J´an Min´aˇc`) joined to
  the letter they belong to (`Ján Mináč`), then Unicode NFC;
- line-end hyphenation joined where the word continues: a hyphen that ends a line (followed by a
  line break, or by the space the library puts between a region's lines) is dropped when the
  next word starts with a lowercase letter (`informa- tion` → `information`), except before
  `and`/`or`/`to`… (`pre- and post-war`), and kept, without the space, in a word that already
  has a hyphen (`state-of-the- art` → `state-of-the-art`). Known hyphenated compounds broken
  at their hyphen (`well-\\nknown`) are joined too: telling them apart needs a dictionary;
- the text layer's unmapped glyphs (pdfminer's `(cid:N)`) read from the page (`glyphs`): a
  minus sign from its shape, anything else U+FFFD, with a warning, never dropped.

`text_as_html` of tables gets the same cleaning, cell by cell.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from ingestflow.elements import Element
from ingestflow.stages.partition.hires import glyphs

LIGATURES = str.maketrans(
    {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
)
#: Spacing accents (as text layers give TeX's accent glyphs) → the combining mark.
SPACING_ACCENTS = {
    "\u00b4": "\u0301",  # ´ acute
    "\u02ca": "\u0301",
    "\u0060": "\u0300",  # ` grave (ASCII: only inside a word, never code's backticks)
    "\u02cb": "\u0300",
    "\u02c7": "\u030c",  # ˇ caron
    "\u00a8": "\u0308",  # ¨ diaeresis
    "\u02dc": "\u0303",  # ˜ tilde
    "\u02c6": "\u0302",  # ˆ circumflex
    "\u02d8": "\u0306",  # ˘ breve
    "\u02d9": "\u0307",  # ˙ dot above
    "\u02da": "\u030a",  # ˚ ring
    "\u02dd": "\u030b",  # ˝ double acute
    "\u00af": "\u0304",  # ¯ macron
    "\u00b8": "\u0327",  # ¸ cedilla
    "\u02db": "\u0328",  # ˛ ogonek
}
#: Marks set below the letter (TeX draws some after their letter, some before).
_BELOW = {"\u0327", "\u0328"}
#: Dotless i and j, which TeX puts under an accent: the letters they are.
_DOTLESS = {"\u0131": "i", "\u0237": "j"}
#: Words after which a hyphen and a space are a suspended compound (`pre- and post-war`).
SUSPENDED = {"and", "or", "nor", "to", "und", "oder", "bis", "et", "ou"}
_CID = re.compile(r"\(cid:(\d+)\)")
_LINE_HYPHEN = re.compile(r"(\S*[^\W\d_])-(?:[ \t]*\n\s*|[ \t]+)([^\W\d_]+)")
_HTML_TEXT = re.compile(r"(?<=>)([^<]+)(?=<)")


def clean(text: str) -> str:
    """`text` cleaned: ligatures, accents (NFC) and line-end hyphenation (module docstring)."""
    if text.isascii() and "-" not in text and "`" not in text:
        return text  # the common case, at no cost
    # pdfium's line-end hyphen (U+FFFE), and WinAnsi's 0xAD, which a PDF shows as a hyphen
    text = text.translate(LIGATURES).replace("\ufffe", "-").replace("\u00ad", "-")
    text = unicodedata.normalize("NFC", _compose_accents(text))
    return _LINE_HYPHEN.sub(_join, text) if "-" in text else text


def _compose_accents(text: str) -> str:
    """Spacing accents, and combining marks NFC left alone, joined to their letter: the next
    letter (TeX's order), else the one before where no letter follows (`cafe´`) or the mark is
    set below (`Franc¸ois`); only where the two make one precomposed letter (so `don´t` keeps
    its accent)."""
    if not any(c in SPACING_ACCENTS or 0x300 <= ord(c) <= 0x36F for c in text):
        return text
    text = unicodedata.normalize("NFC", text)
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        combining = 0x300 <= ord(char) <= 0x36F
        mark = char if combining else SPACING_ACCENTS.get(char)
        after = text[i + 1] if i + 1 < len(text) and text[i + 1].isalpha() else ""
        before = out[-1] if out and out[-1].isalpha() else ""
        if combining:  # NFC found no letter before it to carry it
            sides = [(after, 2)]
        elif mark in _BELOW or not after:  # TeX sets a cedilla after a capital, before c
            sides = [(after, 2), (before, 1)]
        else:
            sides = [(after, 2)]
        if mark is None or (char == "`" and not (before and after)):
            sides = []
        for letter, width in sides:
            base = _DOTLESS.get(letter, letter)  # TeX's \"{\i}: the dot gives way to the mark
            composed = unicodedata.normalize("NFC", base + str(mark)) if letter else ""
            if len(composed) == 1:
                if width == 1:
                    out[-1] = composed  # the letter before
                else:
                    out.append(composed)  # the next letter, taken here
                i += width
                break
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _join(match: re.Match[str]) -> str:
    """A line-end hyphen's match: the word joined where it continues (module docstring)."""
    head, tail = match.group(1), match.group(2)
    if not tail[0].islower() or tail.lower() in SUSPENDED:
        return match.group(0)
    if "-" in head:
        return f"{head}-{tail}"  # a hyphenated word broken at one of its hyphens
    return head + tail


#: Codes pdfminer writes as `(cid:N)` that are white space in a string of the text layer (a
#: tab, a line feed, a carriage return typed into the string), when the page's glyphs say
#: nothing else of them.
_WHITE_CODES = {9: " ", 10: " ", 13: " "}


def _read_cids(text: str, known: dict[int, str]) -> str:
    """pdfminer's `(cid:N)` placeholders as the page's glyphs of code N read (a tab or a line
    break as a space; UNKNOWN else)."""

    def read(match: re.Match[str]) -> str:
        code = int(match.group(1))
        return known.get(code) or _WHITE_CODES.get(code, glyphs.UNKNOWN)

    return _CID.sub(read, text)


def clean_html(html: str) -> str:
    """`text_as_html` with each cell's text cleaned."""
    return _HTML_TEXT.sub(lambda m: clean(m.group(1)), html)


def clean_elements(elements: list[Element], path: Path | None, first_page: int = 1) -> list[str]:
    """Clean the text and `text_as_html` of `elements` in place; `path`: the PDF they were read
    from (its pages numbered from `first_page`) whose unmapped glyphs are read, None for an
    image. Returns the warnings (characters the text layer does not map, shown as U+FFFD)."""
    pages = {
        int(e["metadata"].get("page_number") or first_page) - first_page
        for e in elements
        if "(cid:" in e["text"]
    }
    codes = glyphs.page_codes(path, pages) if pages and path is not None else {}
    unknown: dict[int, int] = {}
    for element in elements:
        metadata = element["metadata"]
        number = int(metadata.get("page_number") or first_page)
        text = element["text"]
        if "(cid:" in text:
            text = _read_cids(text, codes.get(number - first_page, {}))
        element["text"] = clean(text)
        html = metadata.get("text_as_html")
        if isinstance(html, str):
            metadata["text_as_html"] = clean_html(html)
        count = max(element["text"].count(glyphs.UNKNOWN), (html or "").count(glyphs.UNKNOWN))
        if count:
            unknown[number] = unknown.get(number, 0) + count
    if not unknown:
        return []
    shown = ", ".join(map(str, sorted(unknown)[:20])) + (" …" if len(unknown) > 20 else "")
    return [
        f"{sum(unknown.values())} character(s) of the PDF's text layer on page(s) {shown} have "
        f"no Unicode mapping (their font does not say what they are): they are shown as "
        f"{glyphs.UNKNOWN} (U+FFFD), not dropped; check those pages against the PDF"
    ]
