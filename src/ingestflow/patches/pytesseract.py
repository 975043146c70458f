"""unstructured.pytesseract: how the tesseract wrapper prepares an image for its temporary
file, replaced while a High Res call runs (`ocr.raw_tesseract_input`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ingestflow.patches import guard
from ingestflow.patches.guard import Patch

LIBRARY = "pytesseract"
#: Checked on unstructured.pytesseract 0.3.15 (the set-up's).
SUPPORTED: dict[str, str] = {"unstructured.pytesseract": ">=0.3.15,<0.4"}
PATCHES: dict[str, Patch] = {
    "tesseract_prepare": Patch(
        "unstructured_pytesseract.pytesseract",
        "prepare",
        "(image)",
        "images go to tesseract as uncompressed PNM files, not PNG (ocr.raw_tesseract_input)",
        LIBRARY,
    ),
}
guard.declare(LIBRARY, SUPPORTED, PATCHES)


def prepare(make: Callable[[Any], Any]) -> AbstractContextManager[None]:
    """While open, the wrapper's `prepare` is `make(current)`; restored after."""
    return guard.replaced(("tesseract_prepare", make))
