"""The page's regions edited once table finding (`table_finding`) read some as tables: regions
promoted to Table regions, a whole image replaced by one table, Table regions given their cells'
text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ingestflow.stages.partition.hires.tables.parts import Cell

if TYPE_CHECKING:
    from ingestflow.stages.partition.hires.tables.reading import Reading


def fill_texts(layout: Any) -> None:
    """Table regions with HTML but no text (OCR of the whole page read nothing there, while OCR
    of the enlarged crop read the cells) take their cells' text: the library drops an element
    without text, and with it the table."""
    from ingestflow.quality import table_rows

    elements = layout.elements_array
    names = elements.element_class_id_map
    if len(elements.text_as_html) != len(elements.element_class_ids):
        return
    ensure_html(elements)
    for index, class_id in enumerate(elements.element_class_ids):
        markup = elements.text_as_html[index]
        text = elements.texts[index]
        if (
            names.get(int(class_id)) == "Table"
            and isinstance(markup, str)
            and not (isinstance(text, str) and text.strip())
        ):
            elements.texts[index] = " ".join(c for row in table_rows(markup) for c in row if c)


def _table_id(elements: Any) -> int:
    """The class id of Table in the page's class map (added when the map has none)."""
    return class_id(elements.element_class_id_map, "Table")


def class_id(class_map: dict[int, str], name: str) -> int:
    """The id of layout class `name` in a page's class map (added when the map has none)."""
    for key, value in class_map.items():
        if value == name:
            return int(key)
    key = max((int(k) for k in class_map), default=-1) + 1
    class_map[key] = name
    return key


def table_text(cells: list[Cell]) -> str:
    """A table's text: its cells row by row."""
    return " ".join(c.text for c in sorted(cells, key=lambda c: (c.row, c.col)) if c.text)


def promote(layout: Any, found: list[tuple[int, Reading]]) -> None:
    """Regions that read as tables become Table regions with their HTML and text; regions
    that lie inside one of them (its parts read as text) are dropped."""
    import numpy as np

    elements = layout.elements_array
    ensure_html(elements)
    table = _table_id(elements)
    drop: set[int] = set()
    promoted = {i for i, _ in found}
    for index, reading in found:
        elements.element_class_ids[index] = table
        elements.text_as_html[index] = reading.html or None
        elements.texts[index] = table_text(reading.cells)
        box = elements.element_coords[index]
        for other in range(len(elements.element_class_ids)):
            inside = _inside_share(elements.element_coords[other], box)
            if other not in promoted and inside >= 0.8:
                drop.add(other)
    if drop:
        keep = np.array([i for i in range(len(elements.element_class_ids)) if i not in drop])
        layout.elements_array = elements.slice(keep)


def replace_all(layout: Any, reading: Reading) -> None:
    """The page's regions replaced by one Table region over the whole image."""
    import numpy as np
    from unstructured_inference.constants import Source
    from unstructured_inference.inference.layoutelement import LayoutElements

    elements = layout.elements_array
    class_map = dict(elements.element_class_id_map)
    probe = LayoutElements(element_coords=np.zeros((0, 4)), element_class_id_map=class_map)
    table = _table_id(probe)
    layout.elements_array = LayoutElements(
        element_coords=np.array([list(reading.box)], dtype=float),
        texts=np.array([table_text(reading.cells)], dtype=object),
        element_probs=np.array([reading.score]),
        element_class_ids=np.array([table]),
        element_class_id_map=probe.element_class_id_map,
        sources=np.array([Source.YOLOX]),
        text_as_html=np.array([reading.html or None], dtype=object),
    )


def ensure_html(elements: Any) -> None:
    """`text_as_html` as an object array with one slot per region."""
    import numpy as np

    if len(elements.text_as_html) != len(elements.element_class_ids):
        elements.text_as_html = np.array([None] * len(elements.element_class_ids), dtype=object)
    else:
        elements.text_as_html = elements.text_as_html.astype(object)
    elements.texts = np.asarray(elements.texts).astype(object)


def _inside_share(inner: Any, outer: Any) -> float:
    """Share of box `inner` inside box `outer`."""
    width = min(inner[2], outer[2]) - max(inner[0], outer[0])
    height = min(inner[3], outer[3]) - max(inner[1], outer[1])
    area = max((inner[2] - inner[0]) * (inner[3] - inner[1]), 1e-6)
    return max(0.0, width) * max(0.0, height) / area
