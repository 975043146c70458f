"""Pages High Res found nothing on: a note naming them, blank or not.

A blank page (a scanned sheet left white, a separator page) gives no elements, and its document
succeeds; the note says which pages were blank, and which gave nothing although they hold ink
(a faint scan, marks the layout model and OCR could not read). A page is blank when, rendered
at `NOTE_DPI`, under `MAX_INK_SHARE` of its pixels are dark: at that resolution a scanner's
specks average out to grey, while one short word of print is already ~0.0002 of a letter page.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingestflow.elements import Element
from ingestflow.stages.partition.hires.ink import INK_LEVEL

#: Resolution the pages without elements are looked at, in dots per inch.
NOTE_DPI = 72
#: Share of ink pixels under which a page is blank.
MAX_INK_SHARE = 1e-4


def notes(
    path: Path, elements: list[Element], is_image: bool, pages: int | None, first_page: int = 1
) -> list[str]:
    """Notes on the pages of `path` (numbered from `first_page`) that gave no elements: which
    are blank, which are not; [] when every page gave some. `pages`: how many it has (None:
    counted here)."""
    seen = {
        element["metadata"].get("page_number")
        for element in elements
        if element["type"] != "PageBreak"
    }
    images = _frames(path) if is_image else _pdf_pages(path)
    blank: list[int] = []
    unread: list[int] = []
    for index, image in enumerate(images):
        if pages is not None and index >= pages:
            break
        number = first_page + index
        if number in seen:
            continue
        (blank if is_blank(image) else unread).append(number)
    out = []
    if blank:
        out.append(f"{_pages(blank)} blank: no text or pictures were found on {_them(blank)}")
    if unread:
        out.append(
            f"{_pages(unread, 'is', 'are')} not blank but gave no elements: neither the layout "
            f"model nor OCR found anything to read on {_them(unread)} (a faint or unusual scan?)"
        )
    return out


def is_blank(image: Any) -> bool:
    """True when under `MAX_INK_SHARE` of the page image's pixels are ink."""
    import numpy as np

    gray = np.asarray(image.convert("L"))
    return int((gray < INK_LEVEL).sum()) < MAX_INK_SHARE * gray.size


def _pdf_pages(path: Path) -> Iterator[Any]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                yield page.render(scale=NOTE_DPI / 72, grayscale=True).to_pil()
            finally:
                page.close()
    finally:
        pdf.close()


def _frames(path: Path) -> Iterator[Any]:
    from PIL import Image, ImageSequence

    from ingestflow.stages.partition.hires.frames import register_heif

    register_heif()
    with Image.open(path) as image:
        for frame in ImageSequence.Iterator(image):
            scale = NOTE_DPI / 200  # an image's resolution is rarely known: as High Res's pages
            size = (max(1, round(frame.width * scale)), max(1, round(frame.height * scale)))
            yield frame.convert("L").resize(size, Image.Resampling.BOX)


def _pages(numbers: list[int], one: str = "is", many: str = "are") -> str:
    shown = ", ".join(map(str, numbers[:20])) + (" …" if len(numbers) > 20 else "")
    return f"page {shown} {one}" if len(numbers) == 1 else f"pages {shown} {many}"


def _them(numbers: list[int]) -> str:
    return "it" if len(numbers) == 1 else "them"
