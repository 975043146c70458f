"""A region the layout model found more than once comes out as one element (`hires.repeats`)."""

from __future__ import annotations

from typing import Any

from ingestflow.stages.partition.hires import drop_repeats


def element(kind: str, text: str, box: tuple[float, float, float, float], page: int = 1) -> Any:
    from unstructured.documents.coordinates import PixelSpace
    from unstructured.documents.elements import Header, NarrativeText

    x0, y0, x1, y1 = box
    made = {"Header": Header, "NarrativeText": NarrativeText}[kind](
        text=text,
        coordinates=((x0, y0), (x0, y1), (x1, y1), (x1, y0)),
        coordinate_system=PixelSpace(width=1700, height=2200),
    )
    made.metadata.page_number = page
    return made


def test_a_page_number_found_three_times_is_one_header():
    # as on a straightened scan: three boxes over the same '454', at lower confidence
    found = [
        element("Header", "454", (115, 174, 150, 202)),
        element("Header", "454", (116, 185, 151, 216)),
        element("Header", "454", (104, 186, 151, 204)),
        element("Header", "Data in Brief", (413, 146, 883, 190)),
    ]
    kept = drop_repeats(found)
    assert kept == [found[0], found[3]]


def test_the_same_text_elsewhere_on_the_page_or_on_another_page_stays():
    found = [
        element("NarrativeText", "Total", (100, 100, 300, 130)),
        element("NarrativeText", "Total", (100, 900, 300, 930)),  # further down
        element("NarrativeText", "Total", (100, 100, 300, 130), page=2),
        element("Header", "Total", (100, 100, 300, 130)),  # another type
        element("NarrativeText", "Totals", (100, 100, 300, 130)),  # another text
    ]
    assert drop_repeats(found) == found


def test_elements_without_text_or_place_are_kept():
    from unstructured.documents.elements import Image, NarrativeText

    found = [
        Image(text=""),
        Image(text=""),
        NarrativeText(text="no place"),
        NarrativeText("no place"),
    ]
    assert drop_repeats(found) == found
