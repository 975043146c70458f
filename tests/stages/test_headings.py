"""Headings with levels under High Res (`stages/partition/headings.py`): from numbering and type
size, section names recognised, and what is no heading not typed Title."""

from __future__ import annotations

from typing import Any

from ingestflow.stages.partition.headings import set_levels


def el(kind: str, text: str, box: tuple[float, float, float, float], **meta: Any) -> dict:
    x0, y0, x1, y1 = box
    points = [[x0, y0], [x0, y1], [x1, y1], [x1, y0]]
    return {"type": kind, "text": text, "metadata": {"coordinates": {"points": points}, **meta}}


def depths(elements: list[dict]) -> list[Any]:
    return [(e["type"], e["metadata"].get("category_depth")) for e in elements]


def test_numbering_gives_the_level_and_a_larger_title_above_takes_level_zero():
    found = [
        el("Title", "A Study of Harbours", (100, 100, 1500, 180)),  # 64 px type
        el("Title", "1 Introduction", (100, 300, 500, 340)),
        el("NarrativeText", "Text " * 40, (100, 360, 1500, 600)),
        el("Title", "2.1 Data", (100, 700, 400, 740)),
        el("Title", "2.1.3 Sources", (100, 800, 400, 830)),
    ]
    set_levels(found)
    assert depths(found) == [
        ("Title", 0),
        ("Title", 1),
        ("NarrativeText", None),
        ("Title", 2),
        ("Title", 3),
    ]


def test_unnumbered_headings_take_the_level_of_their_type_size():
    found = [
        el("Title", "Unit 2", (200, 195, 575, 359)),  # large type
        el("Title", "Warming Up", (223, 514, 533, 580)),
        el("Title", "Pre-reading", (226, 1404, 567, 1470)),  # the same size: the same level
    ]
    set_levels(found)
    assert depths(found) == [("Title", 0), ("Title", 1), ("Title", 1)]


def test_section_names_are_headings_and_urls_captions_and_sentences_are_not():
    found = [
        el("NarrativeText", "I. INTRODUCTION", (100, 100, 500, 130)),
        el("UncategorizedText", "References", (100, 900, 400, 930)),
        el("Title", "https://www.plosntds.org/article", (100, 1000, 800, 1030)),
        el("Title", "Figure 3. Harbour traffic by month", (100, 1100, 900, 1130)),
        el("Title", " ".join(["word"] * 30), (100, 1200, 1500, 1400)),
        el(
            "NarrativeText",
            "The introduction of the method is given below.",
            (100, 1500, 900, 1530),
        ),
    ]
    set_levels(found)
    assert [e["type"] for e in found] == [
        "Title",
        "Title",
        "UncategorizedText",
        "FigureCaption",
        "NarrativeText",
        "NarrativeText",
    ]


def test_pages_auto_read_with_fast_keep_the_librarys_reading():
    found = [el("Title", "www.example.org", (0, 0, 500, 30), partition_strategy="fast")]
    set_levels(found)
    assert depths(found) == [("Title", None)]
