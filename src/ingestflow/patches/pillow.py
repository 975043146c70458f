"""Pillow: `PIL.Image.open` replaced while a High Res call runs (how the library opens the
pages and images it reads, which it offers no hook for), and its pixel bound left off where
ingestflow bounds the pixels itself."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ingestflow.patches import guard
from ingestflow.patches.guard import Patch

LIBRARY = "pillow"
#: Checked on Pillow 13.0.0 (the set-up's).
SUPPORTED: dict[str, str] = {"pillow": ">=13.0,<14"}
PATCHES: dict[str, Patch] = {
    "image_open": Patch(
        "PIL.Image",
        "open",
        "(fp, mode='r', formats=None)",
        "a rendered page opens with its notes, a scanned image upright (hires page_files, "
        "orientation)",
        LIBRARY,
    ),
    "max_image_pixels": Patch(
        "PIL.Image",
        "MAX_IMAGE_PIXELS",
        "value: int|float|NoneType",  # unstructured's PDF module sets 5e8 at its import
        "a page preview bounds an image's pixels itself, with its own words (service.page_render)",
        LIBRARY,
    ),
}
guard.declare(LIBRARY, SUPPORTED, PATCHES)


def image_open(make: Callable[[Any], Any]) -> AbstractContextManager[None]:
    """While open, `PIL.Image.open` is `make(current)`; restored after."""
    return guard.replaced(("image_open", make))


def no_pixel_limit() -> None:
    """Leave Pillow's decompression-bomb bound off (set on every call: a later import of
    unstructured's PDF module sets its own)."""
    guard.assign("max_image_pixels", None)
