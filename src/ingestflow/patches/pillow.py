"""Pillow: `PIL.Image.open` replaced while a High Res call runs (how the library opens the
pages and images it reads, which it offers no hook for)."""

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
}
guard.declare(LIBRARY, SUPPORTED, PATCHES)


def image_open(make: Callable[[Any], Any]) -> AbstractContextManager[None]:
    """While open, `PIL.Image.open` is `make(current)`; restored after."""
    return guard.replaced(("image_open", make))
