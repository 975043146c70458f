"""`ingestflow.markdown.to_markdown`: a document's elements as a reader wants them, each kind of
element on its own, chunks written as the elements they kept (the library's own packing)."""

from __future__ import annotations

import html
from typing import Any

import pytest

from ingestflow.markdown import to_markdown


def el(kind: str, text: str = "", **metadata: Any) -> dict[str, Any]:
    """One element as the library writes it (a dict)."""
    return {"type": kind, "element_id": f"{kind}:{text}", "text": text, "metadata": metadata}


def test_titles_take_their_level_from_category_depth() -> None:
    titles = [
        el("Title", "Report"),  # no depth: the top level
        el("Title", "Methods", category_depth=0),
        el("Title", "Data", category_depth=1),
        el("Title", "Cleaning  the\ndata", category_depth=2),
        el("Title", "Far down", category_depth=9),  # Markdown has six levels
        el("Title", "Odd", category_depth=-1),
    ]
    assert to_markdown(titles) == (
        "# Report\n\n# Methods\n\n## Data\n\n### Cleaning the data\n\n###### Far down\n\n# Odd\n"
    )


def test_paragraphs_lists_formulas_code_and_tables() -> None:
    table = "<table><tr><td>a</td><td>1</td></tr>\n\n<tr><td>b</td><td>2</td></tr></table>"
    elements = [
        el("NarrativeText", "The first line\nand the second."),
        el("ListItem", "One"),
        el("ListItem", "Two"),
        el("UncategorizedText", "After the list."),
        el("Formula", "e i pi + 1 = 0", latex="e^{i\\pi}+1=0"),
        el("Formula", "x = y"),  # no LaTeX: the text as read
        el("CodeSnippet", "print(1)\nprint(2)"),
        el("Table", "a 1 b 2", text_as_html=table),
        el("Table", "no html here"),
    ]
    assert to_markdown(elements) == (
        "The first line and the second.\n\n"
        "- One\n- Two\n\n"
        "After the list.\n\n"
        "$$\ne^{i\\pi}+1=0\n$$\n\n"
        "$$\nx = y\n$$\n\n"
        "```\nprint(1)\nprint(2)\n```\n\n"
        # one HTML block: a blank line inside would end it mid-table
        "<table><tr><td>a</td><td>1</td></tr>\n<tr><td>b</td><td>2</td></tr></table>\n\n"
        "no html here\n"
    )


def test_running_heads_page_breaks_pictures_and_empty_elements_are_left_out() -> None:
    elements = [
        el("Header", "Annual Report 2024"),
        el("Title", "Results"),
        el("PageNumber", "3"),
        el("PageBreak"),
        el("Image", "OCR of a chart"),
        el("Figure", "axis labels"),
        el("NarrativeText", "   "),
        el("Table", ""),
        el("NarrativeText", "Sales rose."),
        el("Footer", "Confidential | www.example.com"),
    ]
    assert to_markdown(elements) == "# Results\n\nSales rose.\n"
    assert to_markdown([]) == ""
    assert to_markdown([el("Footer", "only a footer")]) == ""


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("# not a heading", "\\# not a heading"),
        ("#", "\\#"),
        ("- not a list item", "\\- not a list item"),
        ("* nor this", "\\* nor this"),
        ("+ nor this", "\\+ nor this"),
        ("1. Numbered, but a paragraph", "1\\. Numbered, but a paragraph"),
        ("12) also", "12\\) also"),
        ("> not a quote", "\\> not a quote"),
        ("---", "\\---"),
        ("* * *", "\\* * *"),
        ("```not a fence", "\\```not a fence"),
        ("$$ not a formula", "\\$$ not a formula"),
        ("<table> as words & more", "&lt;table&gt; as words &amp; more"),
        ("<!-- not a comment", "&lt;!-- not a comment"),
        # text that only looks close stays as it is
        ("#hashtag stays", "#hashtag stays"),
        ("-5 degrees", "-5 degrees"),
        ("2024. A year", "2024\\. A year"),  # an ordered list starting at 2024, else
        ("3.5 percent", "3.5 percent"),
        ("3 < 4", "3 < 4"),
    ],
)
def test_a_paragraph_that_starts_like_markup_is_escaped(text: str, written: str) -> None:
    assert to_markdown([el("NarrativeText", text)]) == written + "\n"
    # a CommonMark reader (markdown-it, which rich brings) sees one paragraph of the text
    from markdown_it import MarkdownIt

    assert MarkdownIt("commonmark").render(written) == f"<p>{html.escape(text, quote=False)}</p>\n"


def test_list_items_and_headings_that_look_like_markup_are_escaped() -> None:
    elements = [el("ListItem", "# one"), el("Title", "Using C #", category_depth=1)]
    assert to_markdown(elements) == "- \\# one\n\n## Using C \\#\n"


def test_chunks_are_written_as_the_elements_they_kept() -> None:
    from unstructured.chunking.title import chunk_by_title
    from unstructured.documents.elements import (
        ElementMetadata,
        Footer,
        ListItem,
        NarrativeText,
        Table,
        Title,
    )
    from unstructured.staging.base import elements_to_base64_gzipped_json, elements_to_dicts

    long_text = " ".join(f"word{i}" for i in range(80))  # split over chunks of 200 characters
    html = "<table><tr><td>" + "</td><td>".join(f"c{i}" for i in range(60)) + "</td></tr></table>"
    small = (
        "<table><tr><th>Station</th><th>Built</th></tr>"
        "<tr><td>Gull Rock</td><td>1902</td></tr></table>"
    )
    elements = [
        Title("Harbour", metadata=ElementMetadata(category_depth=0)),
        NarrativeText("The harbour opened in spring."),
        Footer("Page footer"),
        ListItem("Boats left at dawn."),
        NarrativeText(long_text),
        Table(" ".join(f"c{i}" for i in range(60)), metadata=ElementMetadata(text_as_html=html)),
        Table("Station Built Gull Rock 1902", metadata=ElementMetadata(text_as_html=small)),
    ]
    chunks = elements_to_dicts(chunk_by_title(elements, max_characters=200))
    assert [c["type"] for c in chunks][-3:] == ["TableChunk", "TableChunk", "Table"]
    assert "<th>" not in chunks[-1]["metadata"]["text_as_html"]  # the chunker's own HTML
    assert isinstance(chunks[0]["metadata"]["orig_elements"], str)  # packed, as written
    expected = (
        f"# Harbour\n\nThe harbour opened in spring.\n\n- Boats left at dawn.\n\n{long_text}\n\n"
        f"{html}\n\n{small}\n"
    )
    assert to_markdown(chunks) == expected  # the long element and the table once each

    # packed by hand as the library packs them: the same
    packed = [
        {
            "type": "CompositeElement",
            "text": "ignored",
            "metadata": {"orig_elements": elements_to_base64_gzipped_json(elements[:2])},
        }
    ]
    assert to_markdown(packed) == "# Harbour\n\nThe harbour opened in spring.\n"


def test_chunks_without_their_elements_are_paragraphs() -> None:
    chunks = [
        el("CompositeElement", "Harbour\n\nThe harbour opened\nin spring.\n\n- not a list"),
        el("CompositeElement", "Next chunk.", orig_elements="not base64 gzipped JSON"),
        el("TableChunk", "a b", text_as_html="<table><tr><td>a</td><td>b</td></tr></table>"),
    ]
    assert to_markdown(chunks) == (
        "Harbour\n\nThe harbour opened in spring.\n\n\\- not a list\n\nNext chunk.\n\n"
        "<table><tr><td>a</td><td>b</td></tr></table>\n"
    )
