"""Page images for the web UI at a bounded cost: a page that declares a huge size is rendered
scaled down in a renderer process of its own, an image too large to decode is refused with the
reason, and a page past the time limit is refused while the next one renders."""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from ingestflow.errors import DocumentError, NotFound
from ingestflow.service import page_render
from ingestflow.service.page_render import MAX_PIXELS, MAX_SIDE_PX, page_image


def _pdf(path: Path, width: float, height: float, pages: int = 1) -> Path:
    import pypdfium2

    pdf = pypdfium2.PdfDocument.new()
    for _ in range(pages):
        pdf.new_page(width, height)
    pdf.save(str(path))
    pdf.close()
    return path


def _size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def test_a_page_declared_400_megapixels_is_rendered_scaled_down(tmp_path: Path) -> None:
    """250 x 100,000 points: 1,000 px wide would be 1,000 x 400,000 px (the server took 2.9 GB
    rendering it); the image is bounded, and it is drawn in another process."""
    tall = _pdf(tmp_path / "tall.pdf", 250, 100_000)
    assert tall.stat().st_size < 2_000
    data, media = page_image(tall, 1)
    width, height = _size(data)
    assert media == "image/png"
    assert width * height <= MAX_PIXELS and max(width, height) <= MAX_SIDE_PX
    assert height / width == pytest.approx(400, rel=0.05)  # the page's shape is kept
    renderers = [r for r in page_render._POOL.free.queue if r is not None]
    assert renderers and all(r.process.pid != os.getpid() for r in renderers)


def test_an_ordinary_page_is_1000_px_wide(tmp_path: Path) -> None:
    letter = _pdf(tmp_path / "letter.pdf", 612, 792, pages=2)
    assert _size(page_image(letter, 2)[0])[0] == 1000
    with pytest.raises(NotFound, match=r"page 3 is not in the document \(2 pages\)"):
        page_image(letter, 3)


def test_a_page_past_the_time_limit_is_refused_remembered_and_the_next_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused page is refused at once when asked again (no renderer spends its time on it
    twice); another page renders, in a fresh renderer."""
    page = _pdf(tmp_path / "page.pdf", 612, 792, pages=2)
    asked: list[int] = []
    render = page_render._Renderer.render

    def counted(self: Any, path: Path, number: int) -> Any:
        asked.append(number)
        return render(self, path, number)

    monkeypatch.setattr(page_render._Renderer, "render", counted)
    monkeypatch.setattr(page_render, "RENDER_SECONDS", 0.0)  # no page renders in no time
    with pytest.raises(DocumentError, match=r"page 1 of page.pdf was not rendered: it took longer"):
        page_image(page, 1)
    monkeypatch.setattr(page_render, "RENDER_SECONDS", 30.0)
    with pytest.raises(DocumentError, match=r"page 1 of page.pdf was not rendered: it took longer"):
        page_image(page, 1)  # remembered
    assert asked == [1]
    assert _size(page_image(page, 2)[0])[0] == 1000  # a fresh renderer
    assert asked == [1, 2]


def test_an_image_too_large_to_decode_is_refused_with_its_size(tmp_path: Path) -> None:
    """A 54-byte BMP header that declares 30,000 x 30,000 pixels: refused before decoding."""
    width = height = 30_000
    header = b"BM" + struct.pack("<IHHI", 54, 0, 0, 54)
    header += struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, 0, 2835, 2835, 0, 0)
    bomb = tmp_path / "bomb.bmp"
    bomb.write_bytes(header)
    with pytest.raises(DocumentError, match=r"30000 x 30000 pixels, over the 400 megapixels"):
        page_image(bomb, 1)


def test_large_images_are_scaled_down_and_small_ones_served_as_they_are(tmp_path: Path) -> None:
    wide = tmp_path / "wide.png"  # over the side limit: converted, not handed to the browser
    Image.new("L", (20_000, 10), 255).save(wide)
    data, media = page_image(wide, 1)
    assert media == "image/png" and _size(data) == (MAX_SIDE_PX, 8)
    small = tmp_path / "small.png"
    Image.new("RGB", (40, 20), "white").save(small)
    assert page_image(small, 1) == (small.read_bytes(), "image/png")
    scan = tmp_path / "scan.tif"  # 20 megapixels: over MAX_PIXELS
    Image.new("L", (5_000, 4_000), 255).save(scan)
    width, height = _size(page_image(scan, 1)[0])
    assert width * height <= MAX_PIXELS and width / height == pytest.approx(1.25, rel=0.01)
