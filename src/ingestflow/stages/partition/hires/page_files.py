"""Rendered PDF pages kept as uncompressed files while one High Res call runs.

The library renders the pages it reads and saves each one as a PNG file (zlib level 1, with two
text notes: the page's /Rotate and the extra turn it gave the page). Its layout, OCR and crop
steps then each open and decode that file again. For a 200 dpi page that costs ~0.11 CPU s to
encode and ~0.04 s every time the page is read back: about a sixth of a text PDF's time
(benchmarks/RESULTS.md, "High Res speed: pages kept uncompressed").

Here the library's own function still renders every page, a few pages at a time (`BATCH`: the
pages of a batch are held in memory together), but each page is saved as a binary PNM file (PPM,
PGM or PBM: the same pixels, no compression, written and read at memory speed), under the name
the library gives it. Its text notes are kept beside it, and every image opened from such a file
while the call runs gets them back in its `info`, exactly as the PNG's text chunks gave them
(strings). An uncompressed page is ~11 MB (a letter page at 200 dpi), ten to thirty times its
PNG: past `UNCOMPRESSED_BUDGET` for one call (a long document read in one call), or where the
disk is short of room, pages are saved as the library saves them (PNG, its notes in it), and so
is a mode PNM cannot hold (none that the renderer gives).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: Image modes a binary PNM file holds as they are.
PNM_MODES = ("1", "L", "RGB")
#: Pages rendered by one call of the library's function (held in memory together until saved).
BATCH = 8
#: Bytes of uncompressed pages one High Res call keeps at most (~90 letter pages at 200 dpi);
#: the pages after them are PNG files, as the library writes them.
UNCOMPRESSED_BUDGET = 1 << 30
#: Room left free on the disk after an uncompressed page, beyond the page itself.
MIN_FREE = 256 << 20


class PageFiles:
    """The page files of one call and their text notes, by absolute path."""

    def __init__(self, budget: int = UNCOMPRESSED_BUDGET) -> None:
        self._notes: dict[str, dict[str, str]] = {}
        self._left = budget  # bytes of uncompressed pages still allowed
        self._sizes: dict[str, int] = {}  # each uncompressed file's bytes, by absolute path

    def render(self, render: Callable[..., Any], kwargs: dict[str, Any]) -> list[str]:
        """What `render(**kwargs)` returns when it saves pages (`path_only`, `output_folder`,
        a `filename`): the same files, the pages rendered `BATCH` at a time in memory and
        saved by `write`."""
        folder = Path(kwargs["output_folder"])
        first, last = kwargs.get("first_page"), kwargs.get("last_page")
        number = 1 if first is None else max(first, 1)  # the library's range, page by page
        in_memory = {**kwargs, "output_folder": None, "path_only": False}
        paths: list[str] = []
        while last is None or number <= last:
            upto = number + BATCH - 1 if last is None else min(number + BATCH - 1, last)
            images = render(**{**in_memory, "first_page": number, "last_page": upto})
            for image in images:
                path = folder / f"page_{number}.png"  # the library's name for it
                self.write(path, image, _notes(image.info))
                paths.append(str(path))
                number += 1
            if number <= upto:  # fewer pages than asked: the document ends here
                break
        return paths

    def write(self, path: str | Path, image: Any, notes: dict[str, str]) -> None:
        """Save `image` at `path`, its notes kept beside it: PNM where its mode allows and the
        budget and the disk have room, else PNG as the library saves a page."""
        self._left += self._sizes.pop(_key(path), 0)  # a page saved again (turned upright)
        size = image.width * image.height * len(image.getbands())
        if image.mode in PNM_MODES and size <= self._left and _room(path, size):
            image.save(path, format="PPM")  # Pillow's name for PBM, PGM and PPM alike
            self._left -= size
            self._sizes[_key(path)] = size
        else:
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
        from ingestflow.patches import pillow

        def open_page_of(current: Callable[..., Any]) -> Callable[..., Any]:
            def open_page(fp: Any, *args: Any, **kwargs: Any) -> Any:
                image = current(fp, *args, **kwargs)
                if isinstance(fp, (str, os.PathLike)):
                    notes = self._notes.get(_key(fp))
                    if notes:
                        image.info.update(notes)
                return image

            return open_page

        with pillow.image_open(open_page_of):
            yield


def _notes(info: dict[str, Any]) -> dict[str, str]:
    """A rendered page's notes as the PNG text chunks the library writes hold them."""
    return {key: str(value) for key, value in info.items() if isinstance(value, (int, str))}


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(path))


def _room(path: str | Path, size: int) -> bool:
    """True when the disk holding `path` keeps `MIN_FREE` bytes free after `size` more."""
    try:
        return shutil.disk_usage(Path(path).parent).free >= size + MIN_FREE
    except OSError:
        return False
