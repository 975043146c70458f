"""The frames of a multi-page image file (a TIFF of several pages, a HEIF container) under High
Res: every frame read and cropped as a page of its own.

The library reads every frame of an image for layout and OCR, but crops the blocks of
`extract_image_block_types` from the file as if it held one page (its list of page images
has the file alone): an Image or Table on page 2 failed the document with `IndexError: list
index out of range`, and one on page 1 of a later frame's size came from the wrong pixels.
Here each page's blocks are cropped from that page's own frame, as the call's hooks open it
(turned upright where `orientation` turned it, so the crops match the coordinates the library
has at that point).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def register_heif() -> None:
    """Let Pillow open HEIC/HEIF files (the library registers pi-heif only inside its own call,
    after the hooks have looked at the file)."""
    try:
        from pi_heif import register_heif_opener
    except ImportError:  # pragma: no cover - pi-heif comes with the library
        return
    register_heif_opener()


def save_elements_per_frame(original: Callable[..., Any]) -> Callable[..., Any]:
    """The library's `save_elements`, called once per frame of a multi-frame image file with
    that frame's elements and the frame alone (as a lossless PNG); as it was otherwise."""

    def save_elements(
        elements: list[Any],
        starting_page_number: int,
        element_category_to_save: str,
        pdf_image_dpi: int,
        filename: str = "",
        file: Any = None,
        is_image: bool = False,
        **kwargs: Any,
    ) -> Any:
        def call(part: list[Any], first: int, name: str) -> Any:
            return original(
                part,
                first,
                element_category_to_save,
                pdf_image_dpi,
                filename=name,
                file=file,
                is_image=is_image,
                **kwargs,
            )

        if not is_image or file is not None or not filename:
            return call(elements, starting_page_number, filename)
        from PIL import Image, ImageSequence

        with Image.open(filename) as image:  # through the call's hooks: frames upright
            if getattr(image, "n_frames", 1) <= 1:
                return call(elements, starting_page_number, filename)
            with tempfile.TemporaryDirectory(prefix="ingestflow-frames-") as folder:
                for index, frame in enumerate(ImageSequence.Iterator(image)):
                    number = starting_page_number + index
                    part = [e for e in elements if e.metadata.page_number == number]
                    if not any(e.category == element_category_to_save for e in part):
                        continue
                    path = Path(folder) / f"frame-{index}.png"
                    frame.convert("RGB").save(path, format="PNG", compress_level=1)
                    call(part, number, str(path))
        return None

    return save_elements
