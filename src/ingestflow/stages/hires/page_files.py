"""Rendered PDF pages kept as uncompressed files while one High Res call runs.

The library renders the pages it reads and saves each one as a PNG file (zlib level 1, with two
text notes: the page's /Rotate and the extra turn it gave the page). Its layout, OCR and crop
steps then each open and decode that file again. For a 200 dpi page that costs ~0.11 CPU s to
encode and ~0.04 s every time the page is read back: about a sixth of a text PDF's time
(benchmarks/RESULTS.md, "High Res speed: pages kept uncompressed").

Here the library's own function still renders every page, one page at a time, but each page is
saved as a binary PNM file (PPM, PGM or PBM: the same pixels, no compression, written and read at
memory speed), under the name the library gives it. Its text notes are kept beside it, and
every image opened from such a file while the call runs gets them back in its `info`, exactly as
the PNG's text chunks gave them (strings). A mode PNM cannot hold (none that the renderer gives)
is saved as the library saves it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: Image modes a binary PNM file holds as they are.
PNM_MODES = ("1", "L", "RGB")


class PageFiles:
    """The page files of one call and their text notes, by absolute path."""

    def __init__(self) -> None:
        self._notes: dict[str, dict[str, str]] = {}

    def render(self, render: Callable[..., Any], kwargs: dict[str, Any]) -> list[str]:
        """What `render(**kwargs)` returns when it saves pages (`path_only`, `output_folder`,
        a `filename`): the same files, each page rendered on its own and saved uncompressed."""
        folder = Path(kwargs["output_folder"])
        first = kwargs.get("first_page") or 1
        last = min(kwargs.get("last_page") or 10**9, _page_count(kwargs))
        paths: list[str] = []
        for number in range(first, last + 1):
            one = {**kwargs, "output_folder": None, "path_only": False}
            for image in render(**{**one, "first_page": number, "last_page": number}):
                path = folder / f"page_{number}.png"  # the library's name for it
                self.write(path, image, _notes(image.info))
                paths.append(str(path))
        return paths

    def write(self, path: str | Path, image: Any, notes: dict[str, str]) -> None:
        """Save `image` at `path` (PNM where its mode allows), its notes kept beside it."""
        if image.mode in PNM_MODES:
            image.save(path, format="PPM")  # Pillow's name for PBM, PGM and PPM alike
        else:  # as the library saves a page
            from PIL.PngImagePlugin import PngInfo

            info = PngInfo()
            for key, value in notes.items():
                info.add_text(key, value)
            image.save(path, format="PNG", compress_level=1, pnginfo=info)
        self._notes[_key(path)] = dict(notes)

    def link(self, source: str | Path, target: str | Path) -> None:
        """`target` is another name of `source` (a hard link or a copy): the same notes."""
        notes = self._notes.get(_key(source))
        if notes is not None:
            self._notes[_key(target)] = notes

    def notes(self, path: str | Path) -> dict[str, str] | None:
        """The text notes of a page file of this call (None: not one of them)."""
        return self._notes.get(_key(path))

    @contextlib.contextmanager
    def opening(self) -> Iterator[None]:
        """While it is active, an image opened from one of the call's page files has the
        page's notes in its `info`."""
        import PIL.Image

        current = PIL.Image.open

        def open_page(fp: Any, *args: Any, **kwargs: Any) -> Any:
            image = current(fp, *args, **kwargs)
            if isinstance(fp, (str, os.PathLike)):
                notes = self._notes.get(_key(fp))
                if notes:
                    image.info.update(notes)
            return image

        PIL.Image.open = open_page
        try:
            yield
        finally:
            PIL.Image.open = current


def _notes(info: dict[str, Any]) -> dict[str, str]:
    """A rendered page's notes as the PNG text chunks the library writes hold them."""
    return {key: str(value) for key, value in info.items() if isinstance(value, (int, str))}


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(path))


def _page_count(kwargs: dict[str, Any]) -> int:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(kwargs["filename"], password=kwargs.get("password"))
    try:
        return len(pdf)
    finally:
        pdf.close()
