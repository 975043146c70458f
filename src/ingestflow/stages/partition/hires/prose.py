"""Running text is never a Table: a Table region whose words read as prose becomes the
paragraphs a reader sees, column by column.

The layout model takes a page of narrow columns (a newspaper, a register of notices) for one big
table, and the table model then reads its lines across the columns as rows of cells. Its words
tell the difference: the phrases of a table's rows (words between wide gaps) are short, labels
and figures of one to three words, while a column of running text is made of long phrases, one a
line. Such a region is cut into blocks where a gutter runs between its words (columns, left to
right) or a blank band runs across them (top to bottom), recursively (XY-cut), and each block's
lines into paragraphs at a blank line, an indented first line or a short last line.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from ingestflow.stages.partition.hires.tables.grid import lines_of, phrases_of
from ingestflow.stages.partition.hires.tables.parts import Word

#: Prose: most of the region's phrases hold this many words or more (a table's cells rarely do).
LONG_PHRASE = 4
MIN_LONG_SHARE = 0.6
LONG_CHARS = 16
#: ... and there are enough lines to tell (a two-line caption is left to the table model).
MIN_LINES = 8


@dataclass(frozen=True)
class Block:
    """A paragraph of running text: its text, its box (pixels of the words' image) and whether
    it reads as a heading (a short line in capitals)."""

    text: str
    box: tuple[float, float, float, float]
    heading: bool = False


def is_prose(words: list[Word], min_long: float = MIN_LONG_SHARE) -> bool:
    """True when a region's words read as running text rather than a table's cells (a phrase
    is long with four words, or sixteen characters, a CJK one counted twice: OCR gives a line
    of Chinese as one word)."""
    words = [w for w in words if w.text.strip()]
    if len(words) < MIN_LINES or sum(len(w.text) for w in words) < 20 * MIN_LINES:
        return False
    height = median(w.y1 - w.y0 for w in words) or 1.0
    phrases: list[list[Word]] = []
    lines = 0
    for column in _columns(words, height):
        for line in lines_of(column):
            lines += 1
            phrases += phrases_of(line, height)
    if lines < MIN_LINES or not phrases:
        return False
    long = sum(1 for p in phrases if len(p) >= LONG_PHRASE or _width(p) >= LONG_CHARS)
    numeric = sum(1 for p in phrases if all(_numeric(w.text) for w in p))
    return long >= min_long * len(phrases) and numeric < 0.2 * len(phrases)


def paragraphs(words: list[Word]) -> list[Block]:
    """The words' paragraphs in reading order: XY-cut into blocks, then lines into paragraphs."""
    words = [w for w in words if w.text.strip()]
    if not words:
        return []
    height = median(w.y1 - w.y0 for w in words) or 1.0
    blocks: list[Block] = []
    for block in _xy_cut(words, height, depth=0):
        blocks += _paragraphs_of(block, height)
    return blocks


def _width(phrase: list[Word]) -> int:
    """A phrase's length in characters, a CJK character counted twice (one is about a word)."""
    return sum(len(w.text) + sum(1 for c in w.text if _cjk(c)) for w in phrase)


def _cjk(c: str) -> bool:
    return "\u3040" <= c <= "\u30ff" or "\u3400" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af"


def _numeric(text: str) -> bool:
    stripped = text.strip("$€£%()+-–—.,:;")
    return bool(stripped) and all(c.isdigit() or c in ".,%" for c in stripped)


def _columns(words: list[Word], height: float) -> list[list[Word]]:
    """Words split at every vertical gutter that no word crosses (one list when none)."""
    cuts = _gutters(words, height)
    if not cuts:
        return [words]
    parts: list[list[Word]] = [[] for _ in range(len(cuts) + 1)]
    for w in words:
        parts[sum(1 for c in cuts if w.cx > c)].append(w)
    return [p for p in parts if p]


def _gutters(words: list[Word], height: float) -> list[float]:
    """x positions of the vertical bands between words (at least half a word's height wide)
    that at most a couple of words cross (a running head or a rule line across the columns),
    with words on both sides."""
    import numpy as np

    left = int(min(w.x0 for w in words))
    width = int(max(w.x1 for w in words)) - left + 1
    cover = np.zeros(width + 1, dtype=int)
    for w in words:
        cover[int(w.x0) - left] += 1
        cover[int(w.x1) - left + 1] -= 1
    crossing = np.cumsum(cover)[:width]
    free = crossing <= (2 if len(words) >= 40 else 0)
    cuts: list[float] = []
    x = 0
    while x < width:
        if not free[x]:
            x += 1
            continue
        end = x
        while end < width and free[end]:
            end += 1
        if end - x >= 0.5 * height and x > 0 and end < width:
            cut = left + (x + end) / 2
            before = sum(1 for w in words if w.cx < cut)
            if min(before, len(words) - before) >= max(3, 0.05 * len(words)):
                cuts.append(cut)
        x = end
    return cuts


def _bands(words: list[Word], height: float) -> list[float]:
    """y positions of the free horizontal bands (a blank line or more) between words."""
    spans = sorted((w.y0, w.y1) for w in words)
    cuts: list[float] = []
    reach = spans[0][1]
    for y0, y1 in spans[1:]:
        if y0 - reach >= 0.9 * height:
            cuts.append((reach + y0) / 2)
        reach = max(reach, y1)
    return cuts


def _xy_cut(words: list[Word], height: float, depth: int) -> list[list[Word]]:
    """Blocks in reading order: columns left to right, bands top to bottom, recursively."""
    if depth > 12 or len(words) < 2:
        return [words]
    columns = _columns(words, height)
    if len(columns) > 1:
        return [b for c in columns for b in _xy_cut(c, height, depth + 1)]
    cuts = _bands(words, height)
    if not cuts:
        return [words]
    parts: list[list[Word]] = [[] for _ in range(len(cuts) + 1)]
    for w in words:
        parts[sum(1 for c in cuts if w.cy > c)].append(w)
    return [b for p in parts if p for b in _xy_cut(p, height, depth + 1)]


def _paragraphs_of(words: list[Word], height: float) -> list[Block]:
    """One block's lines grouped into paragraphs: a new one after a line that ends short of the
    block's right edge, or at a line indented past the block's left edge."""
    lines = lines_of(words)
    left = min(w.x0 for w in words)
    right = max(w.x1 for w in words)
    groups: list[list[list[Word]]] = []
    for i, line in enumerate(lines):
        indented = line[0].x0 - left > 0.8 * height
        ended = i > 0 and right - lines[i - 1][-1].x1 > 3 * height
        if not groups or (indented and len(lines) > 2) or ended:
            groups.append([line])
        else:
            groups[-1].append(line)
    blocks = []
    for group in groups:
        # lines joined with a space: clean text joins a word a line end broke (`informa- tion`)
        text = " ".join(" ".join(w.text for w in line) for line in group)
        members = [w for line in group for w in line]
        box = (
            min(w.x0 for w in members),
            min(w.y0 for w in members),
            max(w.x1 for w in members),
            max(w.y1 for w in members),
        )
        letters = [c for c in text if c.isalpha()]
        heading = (
            len(group) <= 2
            and len(text) <= 120
            and len(letters) >= 4
            and sum(c.isupper() for c in letters) >= 0.8 * len(letters)
        )
        blocks.append(Block(text, box, heading))
    return blocks


# --- the hook in High Res ------------------------------------------------------------------------
#: A Picture region is looked at as a page of text when what the page's reading put in it is at
#: least this long and it covers this share of the page (a photo's sign, a chart's labels are
#: neither).
PICTURE_CHARS = 200
PICTURE_SHARE = 0.15
#: ... and its phrases are long this often (a list of short items on a page of notes).
PICTURE_LONG_SHARE = 0.4


def replace_page(layout: Any, words: list[Word]) -> None:
    """The page's regions, but its pictures, replaced by the paragraphs of `words` (page
    pixels): an image the layout model read no table in, whose whole reads as running text
    in columns rather than as the one table it looked like (a newspaper page)."""
    names = layout.elements_array.element_class_id_map
    ids = layout.elements_array.element_class_ids
    replaced: dict[int, list[Block]] = {
        i: [] for i, c in enumerate(ids) if names.get(int(c)) not in ("Picture", "Image", "Figure")
    }
    if replaced:
        replaced[min(replaced)] = paragraphs(words)
        replace_regions(layout, replaced)


def text_pictures(layout: Any, image: Any, read_words: Any) -> None:
    """Picture regions that hold a page of text (a scanned letter, notes, a newspaper's column
    the layout model took for one picture) become its paragraphs, as a Table region of prose
    does; `read_words(box)` gives a region's words in page pixels (the text layer's or OCR's)."""
    elements = layout.elements_array
    names = elements.element_class_id_map
    page_area = float(image.width * image.height) or 1.0
    replaced: dict[int, list[Block]] = {}
    for i, class_id in enumerate(elements.element_class_ids):
        if names.get(int(class_id)) not in ("Picture", "Image", "Figure"):
            continue
        text = elements.texts[i]
        x0, y0, x1, y1 = (float(v) for v in elements.element_coords[i])
        if not isinstance(text, str) or len("".join(text.split())) < PICTURE_CHARS:
            continue
        if (x1 - x0) * (y1 - y0) < PICTURE_SHARE * page_area:
            continue
        words = read_words((x0, y0, x1, y1))
        if is_prose(words, PICTURE_LONG_SHARE):  # against a photo or a chart, not a table
            replaced[i] = paragraphs(words)
    replace_regions(layout, replaced)


def replace_regions(layout: Any, replaced: dict[int, list[Block]]) -> None:
    """The page's regions `replaced` (index → its paragraphs, in page pixels) become one Text
    (or Title) region per paragraph, in their place in the region order."""
    import numpy as np

    from ingestflow.stages.partition.hires.tables.promotion import class_id, ensure_html

    if not replaced:
        return
    elements = layout.elements_array
    ensure_html(elements)
    class_map = elements.element_class_id_map
    text_id, title_id = class_id(class_map, "Text"), class_id(class_map, "Title")
    order: list[int] = []
    new: dict[int, Block] = {}  # position in the new order → the paragraph it holds
    for i in range(len(elements.element_class_ids)):
        for block in replaced.get(i, [None]):
            if block is not None:
                new[len(order)] = block
            order.append(i)
    sliced = elements.slice(np.array(order, dtype=int))
    sliced.texts = sliced.texts.astype(object)
    sliced.text_as_html = sliced.text_as_html.astype(object)
    for position, block in new.items():
        sliced.element_coords[position] = block.box
        sliced.texts[position] = block.text
        sliced.element_class_ids[position] = title_id if block.heading else text_id
        sliced.text_as_html[position] = None
        sliced.table_as_cells[position] = None
    layout.elements_array = sliced
