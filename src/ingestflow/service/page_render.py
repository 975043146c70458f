"""Page images for the web UI, rendered at a bounded cost: pixels, memory and time.

A document is anybody's: a 723-byte PDF may declare a page 100,000 points tall, and a small PNG
may unpack to gigapixels. So a page is never rendered in the server's own process. A renderer is
a child process (spawned once, reused) that opens the document, scales the page to at most
`MAX_PIXELS` and `MAX_SIDE_PX` (the UI stretches the image over the page's layout box, so a
smaller image still lines up with its boxes), and returns PNG bytes. It runs under an address-
space limit (`MEMORY_BYTES`), and the server waits for it `RENDER_SECONDS` at most: a renderer
past that is killed (the next page starts a fresh one), and the page is refused with the reason.
Two renderers serve the server's threads, so one slow page never holds up every other.
"""

from __future__ import annotations

import io
import math
import multiprocessing
import queue
import threading
from collections import OrderedDict
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ingestflow.errors import DocumentError, NotFound

PAGE_WIDTH_PX = 1000  # a page is rendered this wide, when that fits the bounds below
MAX_SCALE = 4.0  # a tiny page is not blown up past this (pixels per point)
MAX_PIXELS = 16_000_000  # pixels of one page image, at most
MAX_SIDE_PX = 16_384  # either side of one page image, at most
MAX_SOURCE_PIXELS = 400_000_000  # an image file larger than this is refused, not decoded
MEMORY_BYTES = 3 << 30  # a renderer's address space (Python, PDFium and one page)
RENDER_SECONDS = 30.0  # one page, at most; then its renderer is killed
RENDERERS = 2
REMEMBERED = 256  # pages refused for their cost, remembered (the oldest forgotten first)

# what a browser shows as it is; other images (TIFF, BMP, HEIC ...) are converted to PNG
BROWSER_IMAGES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                  ".gif": "image/gif", ".webp": "image/webp"}  # fmt: skip
IMAGE_SUFFIXES = {*BROWSER_IMAGES, ".tif", ".tiff", ".bmp", ".heic"}


def bounded_scale(width: float, height: float) -> float:
    """The scale (pixels per unit) at which a `width` x `height` page is rendered: PAGE_WIDTH_PX
    wide, at most MAX_SCALE, and within MAX_PIXELS and MAX_SIDE_PX."""
    width, height = max(width, 1.0), max(height, 1.0)
    scale = min(PAGE_WIDTH_PX / width, MAX_SCALE)
    scale = min(scale, MAX_SIDE_PX / width, MAX_SIDE_PX / height)
    return min(scale, math.sqrt(MAX_PIXELS / (width * height)))


def page_image(path: Path, number: int) -> tuple[bytes, str]:
    """Page `number` (from 1) of a PDF or an image as image bytes and their media type: a PDF
    page rendered to PNG; a browser-ready image of bounded size as it is; any other image
    converted (scaled down when over the bounds) to PNG. NotFound for a page the document does
    not have, DocumentError for one that cannot be rendered within the bounds."""
    suffix = path.suffix.lower()
    if suffix != ".pdf" and suffix not in IMAGE_SUFFIXES:
        raise NotFound(f"pages of a {suffix or 'suffix-less'} file cannot be shown as images")
    if suffix in BROWSER_IMAGES and number == 1 and _small_image(path):
        return path.read_bytes(), BROWSER_IMAGES[suffix]
    return _POOL.render(path, number)


def _small_image(path: Path) -> bool:
    """True when the image's header says it is within the bounds (nothing is decoded)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            width, height = image.size
    except Exception:  # not readable here: the renderer says why
        return False
    return width * height <= MAX_PIXELS and max(width, height) <= MAX_SIDE_PX


class _Renderer:
    """One child process and the pipe to it."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")  # no copy of the server's threads
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child,), name="ingestflow-page-renderer", daemon=True
        )
        self.process.start()
        child.close()

    def render(self, path: Path, number: int) -> tuple[str, Any, Any]:
        """("ok", bytes, media type) or ("missing" | "failed", message, None); TimeoutError
        past RENDER_SECONDS, EOFError when the child died."""
        self.conn.send((str(path), number))
        if not self.conn.poll(RENDER_SECONDS):
            raise TimeoutError
        answer: tuple[str, Any, Any] = self.conn.recv()
        return answer

    def end(self) -> None:
        """Kill the child (it may be stuck in PDFium) and reap it."""
        self.process.kill()
        self.process.join(timeout=10)
        self.conn.close()


class _Pool:
    """RENDERERS renderers, started on first use; a thread takes a free one or waits. A page
    is rendered by one request at a time (others for it wait for that one), and a page refused
    for its cost is remembered (the same file, unchanged): asked again, it is refused at once,
    so one costly page never holds the renderers twice."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.free: queue.Queue[_Renderer | None] = queue.Queue()
        self.lock = threading.Lock()
        self.started = False
        self.pages: dict[tuple[str, int, int, int], threading.Lock] = {}
        self.refused: OrderedDict[tuple[str, int, int, int], str] = OrderedDict()

    def render(self, path: Path, number: int) -> tuple[bytes, str]:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns, number)
        with self.lock:
            page = self.pages.setdefault(key, threading.Lock())
        with page:  # one render of a page at a time; the others wait for its outcome
            with self.lock:
                reason = self.refused.get(key)
            if reason is not None:
                raise DocumentError(reason)
            try:
                return self._render(path, number)
            except DocumentError as exc:
                with self.lock:
                    self.refused[key] = str(exc)
                    while len(self.refused) > REMEMBERED:
                        self.refused.popitem(last=False)
                raise
            finally:
                with self.lock:
                    self.pages.pop(key, None)

    def _render(self, path: Path, number: int) -> tuple[bytes, str]:
        with self.lock:
            if not self.started:
                for _ in range(self.size):
                    self.free.put(None)  # started when first taken
                self.started = True
        # every renderer is bounded by RENDER_SECONDS, so the wait for one is bounded too
        renderer = self.free.get()
        healthy = False
        try:
            renderer = renderer or _Renderer()
            status, value, media = renderer.render(path, number)
            healthy = True
        except TimeoutError:
            raise DocumentError(
                f"page {number} of {path.name} was not rendered: it took longer than "
                f"{RENDER_SECONDS:g} s (a page this costly is not shown)"
            ) from None
        except (EOFError, OSError):
            raise DocumentError(
                f"page {number} of {path.name} was not rendered: its renderer ended while "
                "drawing it (the page needs more memory than a page image may use)"
            ) from None
        finally:
            if not healthy and renderer is not None:
                renderer.end()
                renderer = None
            self.free.put(renderer)
        if status == "missing":
            raise NotFound(value)
        if status == "failed":
            raise DocumentError(value)
        return value, media


_POOL = _Pool(RENDERERS)


# --- the renderer's side ------------------------------------------------------------------
def _serve(conn: Connection) -> None:
    """A renderer's loop: a (path, page number) in, an answer out, until the server goes."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    while True:
        try:
            path, number = conn.recv()
        except (EOFError, OSError):  # the server has gone
            return
        try:
            data, media = _render(Path(path), number)
            answer: tuple[str, Any, Any] = ("ok", data, media)
        except NotFound as exc:
            answer = ("missing", str(exc), None)
        except MemoryError:
            answer = ("failed", f"page {number} of {Path(path).name} was not rendered: it "
                      "needs more memory than a page image may use", None)  # fmt: skip
        except Exception as exc:  # one line, whatever the library raised
            from ingestflow.errors import one_line

            answer = ("failed", f"page {number} of {Path(path).name} was not rendered: "
                      f"{one_line(exc)}", None)  # fmt: skip
        conn.send(answer)


def _render(path: Path, number: int) -> tuple[bytes, str]:
    if path.suffix.lower() == ".pdf":
        return _pdf_page(path, number), "image/png"
    return _image_page(path, number), "image/png"


def _pdf_page(path: Path, number: int) -> bytes:
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError:
        raise DocumentError(
            f"page {number} of {path.name} cannot be rendered: PDFium cannot open the "
            "document (damaged or encrypted)"
        ) from None
    try:
        if not 1 <= number <= len(pdf):
            raise NotFound(f"page {number} is not in the document ({len(pdf)} pages)")
        page = pdf[number - 1]
        try:
            scale = bounded_scale(page.get_width(), page.get_height())
            image = page.render(scale=scale).to_pil()
        finally:
            page.close()
    finally:
        pdf.close()
    return _png(image)


def _image_page(path: Path, number: int) -> bytes:
    from PIL import Image

    from ingestflow.patches import pillow

    try:  # HEIC: the opener ships with the project's HEIF reader
        from pi_heif import register_heif_opener

        register_heif_opener()
    except ImportError:
        pass
    pillow.no_pixel_limit()  # checked below, with this module's own bound and words
    with Image.open(path) as image:
        try:
            image.seek(number - 1)  # multi-page TIFF
        except EOFError:
            raise NotFound(f"page {number} is not in the image") from None
        width, height = max(image.size[0], 1), max(image.size[1], 1)
        if width * height > MAX_SOURCE_PIXELS:
            raise DocumentError(
                f"page {number} of {path.name} was not rendered: the image is {width} x "
                f"{height} pixels, over the {MAX_SOURCE_PIXELS // 1_000_000} megapixels a page "
                "image may be decoded from"
            )
        scale = min(1.0, MAX_SIDE_PX / max(width, height), math.sqrt(MAX_PIXELS / (width * height)))
        if scale < 1.0:
            image.draft("RGB", (int(width * scale), int(height * scale)))  # JPEG: decode smaller
            image = image.resize((max(1, int(width * scale)), max(1, int(height * scale))))
        return _png(image.convert("RGB"))


def _png(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=False)
    return buffer.getvalue()
