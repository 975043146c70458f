"""High Res OCR engines: tesseract, and PP-OCRv6 (det + rec) bundled in `rapidocr`'s wheel,
chosen per language by measurement.

PP-OCRv6 reads small print and dense numbers that tesseract garbles ("33.3" read as "333",
"0.716" as "aris"; benchmarks/RESULTS.md, "OCR"), but its bundled model serves only Chinese,
Japanese and Latin-script languages, was measured here on English and Chinese, and costs 2.5–7
times tesseract's CPU on a whole page: it reads the cells of English tables without a text
layer, and Chinese pages and tables; English page text, and every other language (Korean, mixed
`eng+kor`, …), stays with tesseract (`MEASURED_BETTER`, `CJK`). `INGESTFLOW_OCR_ENGINE`
overrides the choice (`auto`, `tesseract`, `rapidocr`: PP-OCRv6 for pages and tables of the
languages it serves).

The models are the two ONNX files of `rapidocr==3.10.0`'s wheel (Apache-2.0; its
`MODEL_LICENSES.md` gives their provenance), loaded by explicit path after a sha256 check, so
rapidocr never reaches for its download path (it downloads a model that is missing or
different); one onnxruntime session each per worker process, one thread (the runner puts a
worker on every core).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ingestflow.errors import EnvironmentProblem
from ingestflow.stages.partition.hires.tables.parts import Word

#: What `metadata.ocr_engine` says for each engine.
RAPIDOCR = "rapidocr-ppocrv6"
TESSERACT = "tesseract"
#: The environment variable that overrides the choice, and its values.
ENGINE_ENV = "INGESTFLOW_OCR_ENGINE"
MODES = ("auto", "tesseract", "rapidocr")
#: What High Res OCRs: a scan's page (or a region without text layer), and a table's cells.
USES = ("page", "table")
#: Per use, the tesseract language codes PP-OCRv6 reads because it measured better there than
#: tesseract (benchmarks/RESULTS.md, "OCR"); every other language, and any mix with one, stays
#: with tesseract. Table cells: word accuracy 0.999 against 0.925 on rendered tables. Whole
#: pages: 0.990 against 0.983 on rendered pages, for 2.5–7 times tesseract's CPU, which
#: would take scans below High Res's 0.5 pages/s; so pages stay with tesseract
#: (`INGESTFLOW_OCR_ENGINE=rapidocr` reads them with PP-OCRv6 too) — but for Chinese: on
#: OmniDocBench's Chinese pages, text edit 0.533 against tesseract's (chi_sim+eng) 0.644, table
#: TEDS 0.580 against 0.467 (benchmarks/RESULTS.md, "Page reading"), where tesseract's Chinese
#: is slow too. A language set that holds one of `CJK` and only languages PP-OCRv6 serves is
#: read by it, pages and tables.
MEASURED_BETTER = {"page": frozenset(), "table": frozenset({"eng"})}
#: Scripts PP-OCRv6 reads for every use (simplified Chinese measured; traditional is the same
#: recogniser's script set).
CJK = frozenset({"chi_sim", "chi_tra"})
#: Tesseract codes the bundled multilingual PP-OCRv6 recogniser serves at all (rapidocr's
#: `ppocrv6_langs`: Chinese, Japanese and Latin-script languages); Korean, Cyrillic, Arabic …
#: are download-only in rapidocr, so tesseract reads them.
_SERVED = (
    "eng chi_sim chi_tra jpn afr aze bos cat ces cym dan deu spa est eus fin fra gle glg hrv hun "
    "ind isl ita kur lat ltz lit lav mri msa mlt nld nor oci pol por que ron slk slv sqi swe swa "
    "tgl tur uzb vie"
)
SERVED = frozenset(_SERVED.split())

PACKAGE = "rapidocr==3.10.0"
#: The bundled model files and their sha256 (as in the wheel's MODEL_LICENSES.md).
MODELS = {
    "det": (
        "PP-OCRv6_det_small.onnx",
        "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f",
    ),
    "rec": (
        "PP-OCRv6_rec_small.onnx",
        "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884",
    ),
}
#: Text-detection input size: a page or crop is scaled so that its longer side is at most this
#: (PP-OCR's default, "the shorter side at least 736", enlarges a small table crop several
#: times over, and detection's cost with it, for no gain on 200 dpi renders).
DET_MAX_SIDE = 1600
#: The recogniser's input height (PP-OCRv6's); a batch of crops is padded to its widest crop.
REC_HEIGHT = 48
_LOCK = threading.Lock()
_ENGINE: Any = None


def mode() -> str:
    """The engine override from the environment; EnvironmentProblem on an unknown value."""
    value = os.environ.get(ENGINE_ENV, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise EnvironmentProblem(
            f"{ENGINE_ENV}={value!r} is not an OCR engine choice; use one of "
            f"{', '.join(MODES)} (docs/hi_res.md, 'OCR')"
        )
    return value


def engine_for(codes: list[str], use: str = "page") -> str:
    """The engine that reads text in these tesseract languages (`RAPIDOCR` or `TESSERACT`) for
    one of `USES`."""
    chosen = mode()
    if chosen == "tesseract":
        return TESSERACT
    if chosen == "rapidocr":
        lacking = [code for code in codes if code not in SERVED]
        if lacking:
            raise EnvironmentProblem(
                f"{ENGINE_ENV}=rapidocr cannot read {', '.join(lacking)}: the PP-OCRv6 model in "
                f"{PACKAGE} serves Chinese, Japanese and Latin-script languages only; unset "
                f"{ENGINE_ENV} (tesseract then reads them) or set it to tesseract"
            )
        return RAPIDOCR
    if any(code in CJK for code in codes) and all(code in SERVED for code in codes):
        return RAPIDOCR
    better = MEASURED_BETTER[use]
    return RAPIDOCR if codes and all(code in better for code in codes) else TESSERACT


def model_paths() -> dict[str, Path]:
    """The bundled model files after checking their sha256; EnvironmentProblem when rapidocr is
    missing or a file is absent or different."""
    import importlib.util

    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentProblem(
            f"OCR of English needs the Python package {PACKAGE}; run scripts/setup.sh (or set "
            f"{ENGINE_ENV}=tesseract)"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "models"
    paths = {}
    for task, (name, sha256) in MODELS.items():
        path = folder / name
        if not path.is_file():
            raise EnvironmentProblem(
                f"the OCR model file {name} is missing from the installed rapidocr; reinstall "
                f"{PACKAGE} (scripts/setup.sh does)"
            )
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != sha256:
            raise EnvironmentProblem(
                f"the OCR model file {name} of the installed rapidocr is not the expected one "
                f"(sha256 {digest[:16]}…, expected {sha256[:16]}…); reinstall {PACKAGE}"
            )
        paths[task] = path
    return paths


def available() -> str | None:
    """None when PP-OCRv6 can be loaded, else a one-line reason (checks the files' hashes)."""
    try:
        model_paths()
    except EnvironmentProblem as exc:
        return str(exc)
    return None


def import_rapidocr() -> None:
    """Import rapidocr's pipeline (`rapidocr.main`) with its model catalogue read once: two of
    its modules each load the same 85 KB YAML file into an OmegaConf config at import (~0.12 s
    each), and both only read it, so the second gets the first's. OmegaConf is as before after."""
    import importlib
    import sys

    if "rapidocr.main" in sys.modules:
        return
    from ingestflow.patches import omegaconf

    loaded: dict[str, Any] = {}

    def load_of(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def load(file_: Any) -> Any:
            if not isinstance(file_, str | os.PathLike):  # an open file: read as always
                return original(file_)
            key = os.path.realpath(file_)
            if key not in loaded:
                loaded[key] = original(file_)
            return loaded[key]

        return load

    with omegaconf.load(load_of):  # the class's own entry is put back as it was
        importlib.import_module("rapidocr.main")


def get_engine() -> Any:
    """The process's RapidOCR pipeline, its sessions loaded on first use (once per worker)."""
    global _ENGINE
    with _LOCK:
        if _ENGINE is None:
            import_rapidocr()
            from rapidocr import RapidOCR

            paths = model_paths()
            engine = RapidOCR(
                params={
                    "Global.log_level": "error",
                    "Global.use_cls": False,  # page orientation is handled before OCR
                    "Global.text_score": 0.5,
                    "Det.model_path": str(paths["det"]),
                    "Det.limit_type": "max",
                    "Det.limit_side_len": DET_MAX_SIDE,
                    "Rec.model_path": str(paths["rec"]),
                    "EngineConfig.onnxruntime.intra_op_num_threads": 1,
                    "EngineConfig.onnxruntime.inter_op_num_threads": 1,
                    # measured: the arena and larger batches take ~15% off recognition's CPU
                    "EngineConfig.onnxruntime.enable_cpu_mem_arena": True,
                    "Rec.rec_batch_num": 16,
                    # a batch is as wide as its widest crop, not at least 320 px: most table
                    # cells are a word or a number (~27% of recognition's CPU saved; measured:
                    # benchmarks/RESULTS.md, "High Res speed: recognition at the crops' width")
                    "Rec.rec_img_shape": [3, REC_HEIGHT, REC_HEIGHT],
                }
            )
            # load both sessions now, not on the first page
            engine._load_det_model()
            engine._load_rec_model()
            _ENGINE = engine
        return _ENGINE


def load(codes: list[str], tables: bool) -> None:
    """Load PP-OCRv6 now (once per process, not on the first page) when these languages use it
    for page text, or for table cells and `tables` (the node reads table structure); otherwise
    not at all (~1–2 CPU s a worker saved)."""
    uses = USES if tables else ("page",)
    if any(engine_for(codes, use) == RAPIDOCR for use in uses):
        get_engine()


#: Image modes a PNM file holds as they are (bilevel, grey, RGB: what High Res hands tesseract).
_PNM_MODES = ("1", "L", "RGB")


@contextlib.contextmanager
def raw_tesseract_input() -> Iterator[None]:
    """While a hi_res call runs, images go to tesseract as uncompressed PNM files, not PNG.

    The tesseract wrapper writes each image it is given (a whole page, a region, a table crop) to
    a temporary file, PNG by default; encoding a 200 dpi page costs ~0.3 CPU s (about a tenth of
    tesseract's own time on it) and tesseract then decodes it again. A PNM file holds the same
    pixels with no compression and, like the PNG, no resolution, so tesseract reads exactly
    the same image (the same hOCR: benchmarks/RESULTS.md, "High Res speed")."""
    from ingestflow.patches import pytesseract

    def prepare_of(original: Callable[[Any], tuple[Any, str]]) -> Callable[[Any], Any]:
        def prepare(image: Any) -> tuple[Any, str]:
            fresh = getattr(image, "format", None) is None  # an array, or an image in memory
            image, extension = original(image)
            if fresh and image.mode in _PNM_MODES:
                image.format = extension = "PPM"  # Pillow's name for PBM, PGM and PPM alike
            return image, extension

        return prepare

    with pytesseract.prepare(prepare_of):
        yield


def _bgr(image: Any) -> Any:
    """A PIL image or a numpy array (grey, RGB from PIL) as the BGR array rapidocr reads."""
    import numpy as np

    if hasattr(image, "convert"):
        return np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])
    array = np.asarray(image)
    if array.ndim == 2:
        return np.ascontiguousarray(np.repeat(array[:, :, None], 3, axis=2))
    return np.ascontiguousarray(array)


def read_words(image: Any) -> list[Word]:
    """Words and their boxes (pixels of `image`), in reading order, by PP-OCRv6."""
    array = _bgr(image)
    if array.size == 0 or min(array.shape[:2]) < 4:
        return []
    # every flag given: the engine keeps the last call's flags (`line_boxes` turns rec off)
    out = get_engine()(array, use_det=True, use_cls=False, use_rec=True, return_word_box=True)
    words: list[Word] = []
    for line, text in zip(out.word_results or (), out.txts or (), strict=False):
        pieces = [(t, box) for t, _score, box in line if t and t.strip()]
        if not pieces:
            continue
        # Latin text: one box per space-separated word; CJK: one per character — joined back to
        # the line's words when the counts differ (the line's text is the reference)
        if len(pieces) != len(text.split()):
            pieces = [(text, [point for _t, box in pieces for point in box])]
        for t, box in pieces:
            xs = [p[0] for p in box]
            ys = [p[1] for p in box]
            words.append(Word(t.strip(), min(xs), min(ys), max(xs), max(ys)))
    return words


def read_text(image: Any) -> str:
    """The text of an image (a region's crop) by PP-OCRv6, line by line."""
    array = _bgr(image)
    if array.size == 0 or min(array.shape[:2]) < 4:
        return ""
    out = get_engine()(array, use_det=True, use_cls=False, use_rec=True, return_word_box=False)
    return "\n".join(t for t in out.txts or () if t.strip())


def line_boxes(image: Any) -> list[Word]:
    """The boxes of the text lines PP-OCRv6's detector finds in `image` (text unread: about a
    tenth of the cost of reading them), as words with no text."""
    array = _bgr(image)
    if array.size == 0 or min(array.shape[:2]) < 4:
        return []
    out = get_engine()(array, use_det=True, use_cls=False, use_rec=False)
    boxes = getattr(out, "boxes", None)
    if boxes is None:
        return []
    return [
        Word(
            "",
            float(b[:, 0].min()),
            float(b[:, 1].min()),
            float(b[:, 0].max()),
            float(b[:, 1].max()),
        )
        for b in boxes
    ]


# --- High Res hooks ------------------------------------------------------------------------------
def text_regions(image: Any) -> Any:
    """The page's words as the library's `TextRegions` (what its whole-page OCR merges into the
    layout), read by PP-OCRv6."""
    import numpy as np
    from unstructured.partition.utils.constants import Source
    from unstructured_inference.inference.elements import TextRegions

    words = read_words(image)
    coords = np.array([[w.x0, w.y0, w.x1, w.y1] for w in words], dtype=float).reshape(-1, 4)
    return TextRegions(
        element_coords=coords,
        texts=np.array([w.text for w in words], dtype=object),
        sources=np.array([Source.OCR_PADDLE] * len(words)),  # PaddleOCR's model
    )


def supplement_page(page_layout: Any, image: Any, ocr_mode: str) -> Any:
    """The library's `supplement_page_layout_with_ocr` with PP-OCRv6 reading: the whole page
    merged into the layout (`entire_page`), or each region without text read from its crop."""
    from unstructured.partition.pdf_image.ocr import merge_out_layout_with_ocr_layout
    from unstructured.partition.utils.config import env_config

    elements = page_layout.elements_array
    if ocr_mode == "entire_page":
        page_layout.elements_array = merge_out_layout_with_ocr_layout(
            out_layout=elements, ocr_layout=text_regions(image)
        )
        return page_layout
    pad = env_config.IMAGE_CROP_PAD
    elements.texts = elements.texts.astype(object)  # fixed-width strings would cut texts short
    for i, text in enumerate(elements.texts):
        if text:
            continue
        x1, y1, x2, y2 = elements.x1[i], elements.y1[i], elements.x2[i], elements.y2[i]
        elements.texts[i] = read_text(image.crop((x1 - pad, y1 - pad, x2 + pad, y2 + pad)))
    return page_layout


Box = tuple[float, float, float, float]


def untexted_boxes(page_layout: Any) -> list[Box]:
    """Boxes of the page's layout regions that have no text yet (those the library OCRs)."""
    elements = page_layout.elements_array
    return [
        (float(elements.x1[i]), float(elements.y1[i]), float(elements.x2[i]), float(elements.y2[i]))
        for i, text in enumerate(elements.texts)
        if not text
    ]


def mark_elements(
    elements: list[Any],
    whole_pages: dict[int, str],
    regions: list[tuple[int, Box, str]],
    first_page: int = 1,
) -> None:
    """Set `metadata.ocr_engine` on the elements whose text OCR read: every element with text on
    a page OCRed whole (`whole_pages`: page → engine), and the element of each OCRed region
    (`regions`: page, box in the page image's pixels, engine; a table's cells read by OCR are
    such a region, and win over the page). Pages are numbered from 1 within the call; the
    elements' from `first_page`."""
    for element in elements:
        if not (element.text or "").strip():
            continue  # nothing read (an Image, a blank region)
        metadata = element.metadata
        page = (metadata.page_number or first_page) - first_page + 1
        engine = whole_pages.get(page)
        points = getattr(metadata.coordinates, "points", None)
        if points:
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            mine = (min(xs), min(ys), max(xs), max(ys))
            for number, box, region_engine in regions:
                if number == page and all(abs(a - b) <= 2 for a, b in zip(mine, box, strict=True)):
                    engine = region_engine
        if engine:
            metadata.ocr_engine = engine
