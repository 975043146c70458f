"""Where elements lie on their pages (both coordinate systems), the elements each chunk came
from (kept by the chunker, or matched by text), and the job's own document: found only while
its content is what the job read."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import pytest

from ingestflow.errors import NotFound
from ingestflow.service import page_view


def element(
    kind: str,
    text: str,
    points: list[list[float]] | None = None,
    page: int = 1,
    system: str = "PixelSpace",
    size: tuple[float, float] = (1000, 2000),
) -> dict:
    meta: dict[str, Any] = {"page_number": page}
    if points is not None:
        meta["coordinates"] = {
            "points": points,
            "system": system,
            "layout_width": size[0],
            "layout_height": size[1],
        }
    return {"type": kind, "text": text, "metadata": meta}


SQUARE: list[list[float]] = [[100, 200], [100, 300], [400, 300], [400, 200]]


def test_boxes_per_page_in_pixel_and_point_space() -> None:
    pixel = element("Title", "A", SQUARE)
    point = element("Table", "B", SQUARE, page=2, system="PointSpace", size=(612, 792))
    pages = page_view.pages_of([pixel, element("NarrativeText", "no coordinates"), point])
    assert [(p.number, p.width, p.height) for p in pages] == [(1, 1000, 2000), (2, 612, 792)]
    (first,) = pages[0].boxes
    assert (first.index, first.type, first.x, first.y, first.width, first.height) == (
        0, "Title", 100, 200, 300, 100,
    )  # fmt: skip
    (second,) = pages[1].boxes
    # PointSpace counts y upwards from the page's foot: the box is flipped into y downwards
    assert (second.index, second.y, second.height) == (2, 792 - 300, 100)


@pytest.mark.parametrize(
    "coordinates",
    [{"points": []}, {"points": [["x", 1]], "layout_width": 1, "layout_height": 1},
     {"points": SQUARE, "layout_width": 0, "layout_height": 10}, {"points": SQUARE}],
)  # fmt: skip
def test_broken_coordinates_draw_no_box(coordinates: dict[str, Any]) -> None:
    broken = {"type": "Title", "text": "x", "metadata": {"coordinates": coordinates}}
    assert page_view.box_of(broken) is None and page_view.pages_of([broken]) == []


def test_kept_orig_elements_are_exact_and_give_a_chunks_boxes() -> None:
    from unstructured.documents.coordinates import PixelSpace
    from unstructured.documents.elements import (
        CoordinatesMetadata,
        ElementMetadata,
        NarrativeText,
        Title,
    )
    from unstructured.staging.base import elements_to_base64_gzipped_json

    title = Title("Release plan", metadata=ElementMetadata(page_number=1))
    body = NarrativeText("Ship the beta in March.", metadata=ElementMetadata(page_number=1))
    body.metadata.coordinates = CoordinatesMetadata(
        points=((10, 20), (10, 40), (90, 40), (90, 20)), system=PixelSpace(100, 200)
    )
    chunk = {
        "type": "CompositeElement",
        "text": "Release plan\n\nShip the beta in March.",
        "metadata": {"orig_elements": elements_to_base64_gzipped_json([title, body])},
    }
    origins, exact = page_view.chunk_origins([chunk], None)
    assert exact and [o["text"] for o in origins[0]] == ["Release plan", "Ship the beta in March."]
    (page,) = page_view.pages_of([chunk], origins)
    (box,) = page.boxes
    assert (box.chunk, box.type, box.x, box.y, box.width, box.height) == (
        0, "NarrativeText", 10, 20, 80, 20,
    )  # fmt: skip
    bad = {"type": "CompositeElement", "text": "x", "metadata": {"orig_elements": "!!not b64"}}
    assert page_view.origins_of(bad) is None


def test_chunks_without_kept_elements_are_matched_by_text_in_order() -> None:
    before = [
        element("Title", "Release plan"),
        element("PageBreak", ""),
        element("Header", "Page header the chunker dropped"),
        element("NarrativeText", "Ship the beta in March."),
        element("Title", "Room"),
        element("NarrativeText", "Book the big room early, well before the launch."),
    ]
    chunks = [
        {"type": "CompositeElement", "text": "Release plan\n\nShip the beta\nin March."},
        {"type": "CompositeElement", "text": "Room\n\nBook the big room early,"},
        {"type": "CompositeElement", "text": "well before the launch."},
    ]
    origins, exact = page_view.chunk_origins(chunks, before)
    assert not exact
    assert [[o["text"] for o in own] for own in origins] == [
        ["Release plan", "Ship the beta in March."],
        ["Room", "Book the big room early, well before the launch."],
        [],
    ]


def test_the_document_is_the_jobs_only_while_its_content_is(tmp_path: Path) -> None:
    from PIL import Image

    from ingestflow.store import Workspace

    picture = tmp_path / "scan.png"
    Image.new("RGB", (40, 20), "white").save(picture)
    ws = Workspace(tmp_path / "ws")
    try:
        record = {"id": "", "files": []}
        entry = {
            "file_id": "f1",
            "filename": "scan.png",
            "version": hashlib.sha256(picture.read_bytes()).hexdigest(),
        }
        named = [
            {"metadata": {"data_source": {"record_locator": {
                "protocol": "file", "remote_file_path": str(picture)}}}}
        ]  # fmt: skip
        assert page_view.source_document(ws, record, entry, named) == picture.resolve()
        data, media = page_view.page_image(picture, 1)
        assert media == "image/png" and data == picture.read_bytes()  # served as it is
        tiff = tmp_path / "one.tif"  # not shown by browsers: converted to PNG
        Image.new("RGB", (10, 10), "white").save(tiff)
        data, media = page_view.page_image(tiff, 1)
        assert media == "image/png" and Image.open(io.BytesIO(data)).size == (10, 10)
        with pytest.raises(NotFound, match="page 2 is not in the image"):
            page_view.page_image(tiff, 2)
        Image.new("RGB", (40, 20), "black").save(picture)  # edited since the job
        assert page_view.source_document(ws, record, entry, named) is None
        with pytest.raises(NotFound, match="is not in job"):
            page_view.find_file({"id": "j", "files": [entry]}, "../scan.png")
    finally:
        ws.close()
