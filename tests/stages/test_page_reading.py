"""A High Res page read as a reader does (issue: page reading): columns read whole, running
text never a Table, running heads typed, a block's text never twice."""

from __future__ import annotations

from typing import Any

from ingestflow.stages.partition.hires import drop_contained, prose, reading_order
from ingestflow.stages.partition.hires import type_running_heads as typed
from ingestflow.stages.partition.hires.tables.parts import Word


def element(kind: str, text: str, box: tuple[float, float, float, float], page: int = 1) -> Any:
    from unstructured.documents import elements as library
    from unstructured.documents.coordinates import PixelSpace

    x0, y0, x1, y1 = box
    made = getattr(library, "Text" if kind == "UncategorizedText" else kind)(
        text=text,
        coordinates=((x0, y0), (x0, y1), (x1, y1), (x1, y0)),
        coordinate_system=PixelSpace(width=1000, height=1400),
    )
    made.metadata.page_number = page
    return made


# --- reading order ---------------------------------------------------------------------------
def test_columns_are_read_whole_where_their_paragraphs_end_at_one_height():
    """A running head across both columns blocks a page-wide gutter; the library then cut the
    page into bands and read the columns across (left 1, right 1, left 2 ...)."""
    boxes = [
        (100, 20, 900, 40),  # the running head, across
        (100, 60, 480, 300),
        (520, 60, 900, 300),
        (100, 320, 480, 600),  # both columns' paragraphs end and start at the same heights
        (520, 320, 900, 600),
        (100, 620, 900, 660),  # a footnote across
    ]
    assert reading_order.order(boxes) == [0, 1, 3, 2, 4, 5]


def test_a_single_column_and_a_figure_beside_a_column_keep_their_order():
    assert reading_order.order([(100, 60, 900, 100), (100, 120, 900, 300)]) == [0, 1]
    # a column that goes on below where its neighbour stops is still one column
    boxes = [(100, 60, 480, 300), (520, 60, 900, 200), (100, 320, 480, 600)]
    assert reading_order.order(boxes) == [0, 2, 1]


def test_the_library_orders_columns_whole_under_the_hook_and_as_before_outside_it():
    import numpy as np
    from unstructured.partition.utils import sorting

    from ingestflow.patches import unstructured as patches

    boxes = np.array(
        [
            [100, 20, 900, 40],
            [100, 60, 480, 300],
            [520, 60, 900, 300],
            [100, 320, 480, 600],
            [520, 320, 900, 600],
        ]
    )
    before: list[int] = []
    sorting.recursive_xy_cut_swapped(boxes, np.arange(5), before)
    assert before == [0, 1, 2, 3, 4]  # the library: across the columns, band by band
    with patches.replaced(("xycut_order", lambda _: reading_order.xy_cut)):
        after: list[int] = []
        sorting.recursive_xy_cut_swapped(boxes, np.arange(5), after)
    assert after == [0, 1, 3, 2, 4]


# --- running text taken for a table ----------------------------------------------------------
def column_of_prose(x: float, lines: int, words: int = 6, top: float = 0.0) -> list[Word]:
    """`lines` lines of running text, `words` words each, in a column starting at `x`."""
    found = []
    for row in range(lines):
        for k in range(words):
            x0 = x + k * 30 + (20 if row % 5 == 0 else 0)  # each paragraph's first line indented
            found.append(Word(f"word{row}{k}", x0, top + row * 14, x0 + 26, top + row * 14 + 10))
    return found


def table_rows(lines: int) -> list[Word]:
    """`lines` rows of a table: a label and three figures far apart."""
    found = []
    for row in range(lines):
        y = row * 14
        found.append(Word("Revenue", 0, y, 50, y + 10))
        for col, x in enumerate((200, 300, 400)):
            found.append(Word(f"{row * 100 + col:,}", x, y, x + 40, y + 10))
    return found


def test_three_columns_of_prose_are_prose_and_a_table_is_not():
    page = column_of_prose(0, 20) + column_of_prose(220, 20) + column_of_prose(440, 20)
    assert prose.is_prose(page)
    assert not prose.is_prose(table_rows(20))
    assert not prose.is_prose(column_of_prose(0, 3))  # too little to tell


def test_prose_is_read_column_by_column_in_paragraphs():
    page = column_of_prose(0, 10) + column_of_prose(220, 10)
    blocks = prose.paragraphs(page)
    assert [b.text.split()[0] for b in blocks] == ["word00", "word50", "word00", "word50"]
    assert [round(b.box[0]) for b in blocks] == [0, 0, 220, 220]  # left column first
    assert blocks[0].text.split()[-1] == "word45"  # a paragraph: five lines, joined


def test_a_word_broken_at_a_line_end_is_joined():
    """A paragraph's lines are joined with a space; clean text (run on every High Res
    element) then joins the word a line end broke, the one rule for both."""
    from ingestflow.stages.partition.hires.clean_text import clean

    lines = [["the", "informa-"], ["tion", "kept"], ["well-"], ["Known"]]
    words = [
        Word(text, 30 * k, 14 * row, 30 * k + 26, 14 * row + 10)
        for row, line in enumerate(lines)
        for k, text in enumerate(line)
    ]
    [block] = prose.paragraphs(words)
    assert clean(block.text) == "the information kept well- Known"


# --- running heads ---------------------------------------------------------------------------
def test_page_numbers_and_loose_text_in_the_margins_are_running_heads():
    found = [
        element("UncategorizedText", "Federal", (100, 20, 180, 40)),
        element("Header", "Register / Vol. 89", (190, 20, 600, 40)),
        element("UncategorizedText", "2024 / Notices", (610, 20, 700, 40)),
        element("NarrativeText", "Body text " * 20, (100, 200, 900, 1200)),
        element("NarrativeText", "Hence u < 0 in U.", (100, 1280, 400, 1300)),  # body, at the end
        element("UncategorizedText", "- 12 -", (480, 1350, 520, 1370)),
    ]
    kinds = [e.category for e in typed(found)]
    assert kinds == ["Header", "Header", "Header", "NarrativeText", "NarrativeText", "PageNumber"]
    assert typed(found)[0].id == found[0].id  # the same element, retyped


def test_a_title_at_the_top_of_a_slide_stays_a_title():
    found = [
        element("Title", "Quarterly results", (100, 30, 900, 120)),
        element("NarrativeText", "Body text " * 20, (100, 200, 900, 1200)),
    ]
    assert [e.category for e in typed(found)] == ["Title", "NarrativeText"]


# --- text once -------------------------------------------------------------------------------
def test_a_region_inside_another_with_its_text_is_dropped():
    """The layout model found an equation's numbers alone and together: `(13)`, `(13) (14)`,
    `(14)` came out as three elements, the numbers twice."""
    found = [
        element("UncategorizedText", "(13)", (900, 100, 950, 130)),
        element("UncategorizedText", "(13) (14)", (890, 95, 960, 260)),
        element("UncategorizedText", "(14)", (900, 220, 950, 250)),
        element("NarrativeText", "(13) elsewhere", (100, 600, 400, 630)),
    ]
    assert [e.text for e in drop_contained(found)] == ["(13) (14)", "(13) elsewhere"]
    picture = [
        element("Image", "OCR of a chart", (0, 0, 999, 999)),
        element("Title", "OCR", (10, 10, 90, 30)),
    ]
    assert drop_contained(picture) == picture  # a picture's OCR never stands for the page's text


def test_a_title_row_above_a_heading_is_not_taken_for_two_columns():
    """`Unit 2` and `Poems` side by side at the top, then `Warming Up` under the first: the
    heading is not the left column's continuation (a band alone joins columns only where two
    bands already made them)."""
    boxes = [
        (200, 195, 575, 359),
        (688, 282, 1050, 358),
        (223, 514, 533, 642),
        (240, 680, 1630, 960),
    ]
    assert reading_order.order(boxes) == [0, 1, 2, 3]


def test_a_large_header_region_is_a_title():
    found = [
        element("Header", "Unit 2", (200, 30, 575, 120)),  # 6% of the page's height
        element("Header", "Annual report 2024", (100, 20, 400, 40)),
        element("NarrativeText", "Body text " * 20, (100, 200, 900, 1200)),
    ]
    assert [e.category for e in typed(found)] == ["Title", "Header", "NarrativeText"]


def test_a_picture_found_over_a_table_is_the_table():
    """A shaded, ruled table is found as both; the library's merge kept the picture and the
    table was lost."""
    import numpy as np

    from ingestflow.stages.partition.hires.layout_model import _not_doubled

    boxes = np.array([[222, 1667, 1627, 2369], [222, 1671, 1632, 2367], [100, 100, 500, 400]])
    assert _not_doubled(boxes, ["Picture", "Table", "Picture"]) == [1, 2]


def test_text_repeated_in_the_margins_of_the_pages_is_a_running_head():
    """A journal's running line and a revision footer on every page (a page number changing),
    typed over the whole document; a title that opens one page only stays."""
    from ingestflow.stages.partition.hires.running_heads import type_repeated

    def el(kind: str, text: str, y: float, page: int) -> dict[str, Any]:
        points = [[100, y], [100, y + 20], [900, y + 20], [900, y]]
        coordinates = {"points": points, "layout_width": 1000, "layout_height": 1400}
        return {
            "type": kind,
            "text": text,
            "metadata": {"page_number": page, "coordinates": coordinates},
        }

    found = []
    for page in (1, 2, 3):
        found += [
            el("NarrativeText", f"PLOS NTDs | www.plosntds.org {page}", 30, page),
            el("NarrativeText", "Body text " * 30, 400, page),
            el("UncategorizedText", "Revision: 2.4", 1360, page),
        ]
    found.insert(0, el("Title", "A Study of Harbours", 60, 1))
    type_repeated(found)
    assert [e["type"] for e in found if e["metadata"]["page_number"] == 1] == [
        "Title",
        "Header",
        "NarrativeText",
        "Footer",
    ]
    assert [e["type"] for e in found].count("Header") == 3


def test_a_picture_holding_a_page_of_text_becomes_its_paragraphs_and_a_photo_stays():
    """Scanned notes the layout model took for one picture came out as one Image holding all
    the page's OCR (and Markdown, rightly, leaves a picture's OCR out: the page was empty)."""
    from types import SimpleNamespace

    import numpy as np
    from unstructured_inference.inference.layoutelement import LayoutElements

    def layout(text: str) -> Any:
        return SimpleNamespace(
            elements_array=LayoutElements(
                element_coords=np.array([[0.0, 0.0, 700.0, 300.0]]),
                texts=np.array([text], dtype=object),
                element_class_ids=np.array([2]),
                element_class_id_map={0: "Text", 1: "Title", 2: "Picture"},
            )
        )

    notes = column_of_prose(0, 10) + column_of_prose(220, 10)
    page = SimpleNamespace(width=1000, height=1000)
    found = layout(" ".join(w.text for w in notes))
    prose.text_pictures(found, page, lambda box: notes)
    kinds = found.elements_array.element_class_id_map
    assert [kinds[int(k)] for k in found.elements_array.element_class_ids] == ["Text"] * 4
    assert found.elements_array.texts[0].startswith("word00 word01")
    photo = layout("EXIT " * 50)  # a sign read in a photo: long enough, but no running text
    prose.text_pictures(photo, page, lambda box: [Word("EXIT", 0, 0, 30, 10)] * 50)
    assert list(photo.elements_array.element_class_ids) == [2]


def test_a_page_number_below_everything_is_one_however_high_the_foot_margin():
    """A filing's page number sits at two thirds of the page's height, under its statement."""
    found = [
        element("Table", "Cash flows 2018 2017", (149, 241, 900, 900)),
        element("UncategorizedText", "60", (480, 940, 500, 960)),
    ]
    assert [e.category for e in typed(found)] == ["Table", "PageNumber"]
    body_end = [
        element("NarrativeText", "Body text " * 20, (100, 200, 900, 900)),
        element("UncategorizedText", "3", (480, 902, 500, 915)),  # no gap: the text's own
    ]
    assert [e.category for e in typed(body_end)] == ["NarrativeText", "UncategorizedText"]


def test_lines_of_chinese_are_prose_and_a_page_of_them_replaces_the_regions_but_pictures():
    """OCR gives a line of Chinese as one word: a CJK character counts as two letters, so a
    newspaper's twelve-character lines are long phrases (it was read as one table)."""
    from types import SimpleNamespace

    import numpy as np
    from unstructured_inference.inference.layoutelement import LayoutElements

    line = "福建具有茶之乡茶之祖等诸多"  # 13 characters
    column = [
        Word(line, x, row * 20, x + 200, row * 20 + 14) for row in range(12) for x in (0, 240)
    ]
    assert prose.is_prose(column)
    assert not prose.is_prose(
        [Word("合计", x, r * 20, x + 40, r * 20 + 14) for r in range(12) for x in (0, 240)]
    )
    page = SimpleNamespace(
        elements_array=LayoutElements(
            element_coords=np.array(
                [[0.0, 0.0, 500.0, 300.0], [300.0, 0.0, 400.0, 50.0], [0, 0, 20, 20]]
            ),
            texts=np.array(["one big table", "a photo", "stray"], dtype=object),
            element_class_ids=np.array([1, 2, 0]),
            element_class_id_map={0: "Text", 1: "Table", 2: "Picture"},
        )
    )
    prose.replace_page(page, column)
    kinds = page.elements_array.element_class_id_map
    got = [kinds[int(k)] for k in page.elements_array.element_class_ids]
    assert got.count("Picture") == 1 and "Table" not in got and got.count("Text") == 2


def test_a_word_that_only_looks_like_a_roman_numeral_is_no_page_number():
    def page(last: str) -> list[Any]:
        body = element("NarrativeText", "Body text " * 20, (100, 200, 900, 900))
        return [body, element("UncategorizedText", last, (480, 1360, 520, 1380))]

    assert typed(page("civil"))[1].category == "Footer"  # loose text at the foot, no number
    assert typed(page("xiv"))[1].category == "PageNumber"
