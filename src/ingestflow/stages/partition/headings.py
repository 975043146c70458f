"""Headings with levels on High Res pages: `metadata.category_depth` of each Title from its
numbering and its type size, the usual section names recognised as headings, and what is never
a heading (a URL, a figure's caption, a long sentence) no longer typed Title.

The layout model says "title" and nothing of its level, so the library gave every Title the
same depth. Here, over the whole document (after its page ranges are joined):
- a numbered heading takes its level from its numbering (`2` → 0, `2.1` → 1, `2.1.3` → 2),
  one level down when larger unnumbered headings stand above the numbered ones (a document's
  title);
- any other takes the level of its type size among the document's heading sizes (largest: 0).
  The size is the line height the box gives for its text (`_size`: the number of lines is the
  fewest that fit the text in the box's width);
- a short line that is a usual section name (`Abstract`, `I. INTRODUCTION`, `References`,
  `Installation` …) is a Title whatever the layout model said;
- a "Title" that is a URL or an e-mail address, a long sentence, or starts `Figure 3` / `Table 2`
  is typed as what it is (text, or a caption).
Elements of pages Auto read with Fast keep the library's reading.
"""

from __future__ import annotations

import re
from typing import Any

#: Usual section names (a heading whatever the layout model said), numbered or not.
SECTION_NAMES = (
    "abstract|introduction|background|related work|methods?|methodology|materials and methods|"
    "experiments?|experimental setup|results?|results and discussion|discussion|conclusions?|"
    "summary|acknowledge?ments?|references|bibliography|appendix|contents|table of contents|"
    "installation|usage|getting started|requirements|features|license|overview|preface|index"
)
_NUMBER = r"(?:(?:\d{1,2}(?:\.\d{1,2}){0,3}|[IVXLC]{1,6})\.?)"
_SECTION = re.compile(rf"^(?:{_NUMBER}\s+)?(?:{SECTION_NAMES})[.:]?$", re.IGNORECASE)
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+\S")
_ROMAN = re.compile(r"^[IVXLC]{1,6}\.\s+\S")
_NOT_A_HEADING = re.compile(
    r"(https?://|www\.|\S+@\S+\.\w+|^\s*(?:fig\.?|figure|table|tab\.)\s*\d)", re.IGNORECASE
)
_CAPTION = re.compile(r"^\s*(?:fig\.?|figure|table|tab\.)\s*\d", re.IGNORECASE)
#: A heading is short; a "Title" longer than this many words is running text.
MAX_WORDS = 24
#: Two heading sizes within this ratio are one level.
SAME_SIZE = 1.15


def set_levels(elements: list[dict[str, Any]]) -> None:
    """Retype and give levels to the document's headings, in place (see the module)."""
    mine = [e for e in elements if (e.get("metadata") or {}).get("partition_strategy") != "fast"]
    for element in mine:
        _retype(element)
    titles = [e for e in mine if e["type"] == "Title"]
    if not titles:
        return
    sizes = {id(e): _size(e) for e in titles}
    numbered = [e for e in titles if _numbering(e["text"]) is not None]
    known = sorted({round(s, 1) for s in sizes.values() if s}, reverse=True)
    levels = _levels(known)
    top_numbered = max((sizes[id(e)] or 0.0 for e in numbered), default=0.0)
    above = any(
        (sizes[id(e)] or 0.0) > top_numbered * SAME_SIZE
        for e in titles
        if _numbering(e["text"]) is None
    )
    for element in titles:
        number = _numbering(element["text"])
        if number is not None:
            depth = number + (1 if above else 0)
        else:
            size = sizes[id(element)]
            depth = levels.get(round(size, 1), 0) if size else 0
        element["metadata"]["category_depth"] = min(depth, 5)


def _retype(element: dict[str, Any]) -> None:
    """A section name typed as text becomes a Title; a "Title" that is no heading, what it is."""
    text = " ".join((element.get("text") or "").split())
    kind = element["type"]
    if kind in ("NarrativeText", "UncategorizedText", "Text") and _SECTION.match(text):
        element["type"] = "Title"
    elif kind == "Title":
        if _CAPTION.match(text):
            element["type"] = "FigureCaption"
        elif _NOT_A_HEADING.search(text) or len(text.split()) > MAX_WORDS:
            element["type"] = "NarrativeText" if len(text.split()) > 6 else "UncategorizedText"


def _numbering(text: str) -> int | None:
    """The level a heading's numbering gives (`2` → 0, `2.1` → 1), or None when unnumbered."""
    text = " ".join(text.split())
    match = _NUMBERED.match(text)
    if match:
        return match.group(1).count(".")
    if _ROMAN.match(text):
        return 0
    return None


def _levels(sizes: list[float]) -> dict[float, int]:
    """Each size (largest first) → its level, sizes within `SAME_SIZE` of the level's first
    being one level."""
    levels: dict[float, int] = {}
    level, first = -1, None
    for size in sizes:
        if first is None or first > size * SAME_SIZE:
            level, first = level + 1, size
        levels[size] = level
    return levels


def _size(element: dict[str, Any]) -> float | None:
    """The heading's line height in its page's pixels: the box's height over the fewest lines
    in which its text fits the box's width (a character about half the line height wide)."""
    points = ((element.get("metadata") or {}).get("coordinates") or {}).get("points")
    text = " ".join((element.get("text") or "").split())
    if not points or not text:
        return None
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    width, height = max(xs) - min(xs), max(ys) - min(ys)
    if width <= 0 or height <= 0:
        return None
    for lines in range(1, 7):
        size = height / (1.25 * lines)
        if len(text) * 0.5 * size <= 1.15 * width * lines:
            return size
    return height / (1.25 * 6)
