"""High Res offline: the library's own hi_res pipeline on a bundled layout model, local OCR and
ingestflow's table structure.

`unstructured.partition.auto.partition(strategy="hi_res")` does the work — render pages, detect
regions (`layout_model`), merge them with the PDF's text layer (pdfminer), OCR what has no text
(tesseract, or PP-OCRv6 where module `ocr` chooses it), type the elements and order them
(columns read one after the other) — with five hooks, active only while a hi_res call runs in
this process:

- the library's text-layer probe (a full pdfminer pass whose only use under hi_res is "is there a
  text layer?") is answered from pypdfium2's character count, which costs a few milliseconds;
- OCR is chosen per page: a page with a text layer OCRs only the regions that have no text (a
  figure, a scanned insert); a page without one (a scan, a photo) is OCRed whole;
- table structure comes from ingestflow's own builders (`table_model`: SLANet-1M by default, or
  `tables.table_html` from word gaps and ruling lines) with words from the text layer or from OCR
  of the table's crop, instead of the library's Table Transformer, which downloads from a model
  hub;
- link annotations are read on every page: the library keeps `metadata.links` only when the first
  page of the call has a link, which drops every link of a document (or page range) whose first
  page has none;
- scanned pages are turned upright (90/180/270 degrees, and a few degrees of skew) before
  layout and OCR, and their elements' coordinates mapped back (`orientation`);
- pages are rendered once: the library renders every page to a PNG file up to four times (layout,
  OCR, and once per type of `extract_image_block_types`), and PNG encoding was a third of the
  time of a text PDF; later renderings of the same pages are hard links to the first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ingestflow.errors import DocumentError, EnvironmentProblem
from ingestflow.stages import layout_model, ocr, orientation, table_finding, table_model
from ingestflow.stages.page_words import ocr_words, page_number, pdf_words
from ingestflow.stages.tables import Word

#: Rendering resolution of the library's hi_res (layout model and OCR), in dots per inch.
DPI = 200
#: Languages whose tesseract data the set-up script installs (docs/hi_res.md).
INSTALLED_BY_SETUP = ("eng", "kor")


@dataclass
class _Call:
    """What the hooks need to know about the hi_res call in progress."""

    path: Path
    is_image: bool
    tables: bool
    language: str  # tesseract's form: "eng+kor"
    table_mode: str = table_model.DEFAULT_MODE
    pages_ocr_full: int = 0
    pages_ocr_blocks: int = 0
    ocr_engine: str = ocr.TESSERACT  # page text (module `ocr`)
    table_ocr_engine: str = ocr.TESSERACT  # table cells without a text layer
    ocr_pages: dict[int, str] = field(default_factory=dict)  # page OCRed whole → engine
    ocr_regions: list[tuple[int, ocr.Box, str]] = field(default_factory=list)  # region OCRed


# --- list items ----------------------------------------------------------------------------------
#: Element types of a text region that may hold a bulleted list.
_LIST_HOSTS = ("NarrativeText", "UncategorizedText", "Text")
#: Glyphs that start a list item. Not the middle dot (·), which separates keywords and stands in
#: formulas (`d1, · · · , dD`), nor a hyphen.
BULLETS = "•●▪◦■□‣⁃○➢➤►▶✓✔◆◇❖"


def split_list_items(elements: list[dict[str, Any]], unique_ids: bool) -> list[dict[str, Any]]:
    """Text elements that hold bulleted items (the layout model has no list class: a list comes
    as one text region) split into one ListItem per bullet, in place and in order; text before
    the first bullet keeps its type. Only the glyphs of `BULLETS` split, and only when every item
    has words. The items share the region's metadata; the first piece keeps the element's id,
    the others get ids derived from it (random ones when unique_element_ids is true)."""
    import copy

    from ingestflow.stages.ids import new_id

    out: list[dict[str, Any]] = []
    for element in elements:
        items = _bulleted(element["text"]) if element["type"] in _LIST_HOSTS else None
        if items is None:
            out.append(element)
            continue
        head, *items = items
        pieces = [(element["type"], head)] if head else []
        pieces += [("ListItem", item) for item in items]
        for number, (kind, piece) in enumerate(pieces):
            part = element if number == 0 else copy.deepcopy(element)
            part["type"], part["text"] = kind, piece
            if number:
                part["element_id"] = new_id(unique_ids, element["element_id"], number)
            out.append(part)
    return out


def _bulleted(text: str) -> list[str] | None:
    """[text before the first bullet, item, item …], or None when `text` is not a list."""
    import re

    parts = [part.strip() for part in re.split(f"[{BULLETS}]", text)]
    head, items = parts[0], parts[1:]
    if not items or (len(items) < 2 and head):
        return None
    if not all(len(re.findall(r"\w", item)) >= 2 for item in items):
        return None  # a glyph inside a formula or a decoration, not items
    return [head, *items]


# --- environment ---------------------------------------------------------------------------------
def tesseract_languages() -> set[str]:
    """Languages the installed tesseract can read (empty when tesseract is missing)."""
    return set(_tesseract_languages())


@cache
def _tesseract_languages() -> tuple[str, ...]:
    exe = shutil.which("tesseract")
    if exe is None:
        return ()
    try:
        out = subprocess.run(
            [exe, "--list-langs"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    lines = (out.stdout + out.stderr).splitlines()
    return tuple(line.strip() for line in lines if line.strip() and " " not in line.strip())


def tesseract_codes(languages: list[str]) -> list[str]:
    """The workflow's ocr_languages as tesseract's codes (`en` and `eng` are both English)."""
    from unstructured.partition.common.lang import prepare_languages_for_tesseract

    return prepare_languages_for_tesseract(list(languages)).split("+")


def debian_package(code: str) -> str:
    """The Debian package that carries tesseract's data for `code` (chi_sim → chi-sim)."""
    return "tesseract-ocr-" + code.lower().replace("_", "-")


def check_environment(node: str, languages: list[str], tables: bool = False) -> None:
    """EnvironmentProblem naming what to install when High Res cannot run here (with `tables`,
    also the table-structure builder and its model)."""
    problem = layout_model.available()
    if problem:
        raise EnvironmentProblem(f"partition node {node!r}: High Res: {problem}")
    problem = orientation.available()
    if problem:
        raise EnvironmentProblem(f"partition node {node!r}: High Res: {problem}")
    if tables:
        try:
            mode = table_model.structure_mode()
        except EnvironmentProblem as exc:
            raise EnvironmentProblem(f"partition node {node!r}: High Res: {exc}") from None
        problem = table_model.available() if mode != "rules" else None
        if problem:
            raise EnvironmentProblem(f"partition node {node!r}: High Res: {problem}")
    if shutil.which("tesseract") is None:
        raise EnvironmentProblem(
            f"partition node {node!r}: High Res needs the tesseract OCR engine; install the "
            "Debian package tesseract-ocr (scripts/setup.sh does)"
        )
    from ingestflow.offline import set_offline_env

    set_offline_env()
    codes = tesseract_codes(languages)
    unknown = [lang for lang, code in zip(languages, codes, strict=False) if not code]
    if unknown or not codes:
        raise EnvironmentProblem(
            f"partition node {node!r}: ocr_languages {languages} names no language tesseract "
            "knows; use tesseract codes such as eng, deu, fra, kor (docs/hi_res.md)"
        )
    try:
        engines = {ocr.engine_for(codes, use) for use in ocr.USES}
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(f"partition node {node!r}: High Res: {exc}") from None
    problem = ocr.available() if ocr.RAPIDOCR in engines else None
    if problem:
        raise EnvironmentProblem(f"partition node {node!r}: High Res: {problem}")
    installed = tesseract_languages()
    missing = [code for code in codes if code not in installed]
    if missing:
        packages = " ".join(debian_package(code) for code in missing)
        raise EnvironmentProblem(
            f"partition node {node!r}: ocr_languages needs tesseract data for "
            f"{', '.join(missing)}, which is not installed; install the Debian package(s) "
            f"{packages} (apt-get install {packages})"
        )


def load_layout_model() -> None:
    """Register and load the layout model now (once per process), not on the first page."""
    layout_model.register()
    from unstructured_inference.models.base import get_model

    get_model(layout_model.LAYOUT_MODEL_NAME)
    orientation.get_session()


def load_ocr(languages: list[str], tables: bool) -> None:
    """Load the OCR model these languages use now (once per process), not on the first page."""
    ocr.load(tesseract_codes(languages), tables)


def mark_ocr(elements: list[Any], call: _Call, first_page: int = 1) -> None:
    """Name the OCR engine in the metadata of each element whose text OCR read."""
    ocr.mark_elements(elements, call.ocr_pages, call.ocr_regions, first_page)


def load_table_model() -> None:
    """Load the table-structure model now (once per process) when the builder uses it."""
    if table_model.structure_mode() != "rules":
        table_model.get_model()


# --- one call ------------------------------------------------------------------------------------
@contextlib.contextmanager
def hooks(path: Path, is_image: bool, tables: bool, languages: list[str]) -> Iterator[_Call]:
    """Install the six hooks for one hi_res call (see the module docstring)."""
    import unstructured.partition.pdf as pdf_module
    import unstructured.partition.pdf_image.ocr as ocr_module

    layout_model.register()
    codes = tesseract_codes(languages)
    call = _Call(path, is_image, tables, "+".join(codes))
    call.ocr_engine = ocr.engine_for(codes, "page")
    call.table_ocr_engine = ocr.engine_for(codes, "table")
    if tables:
        call.table_mode = table_model.structure_mode()
    import unstructured.partition.pdf_image.pdf_image_utils as image_utils
    import unstructured_inference.inference.layout as layout_module

    saved = (
        pdf_module.extractable_elements,
        ocr_module.supplement_page_layout_with_ocr,
        pdf_module.document_to_element_list,
        image_utils.render_pdf_to_image,
        layout_module.convert_pdf_to_image,
    )
    original_supplement, original_to_elements, original_render = saved[1], saved[2], saved[3]

    def probe(*args: Any, **kwargs: Any) -> list[list[Any]]:
        from unstructured.documents.elements import Text

        return [[Text("text layer")]] if text_layer_chars(path) else []

    def supplement(page_layout: Any, image: Any, **kwargs: Any) -> Any:
        regions = kwargs.get("extracted_regions")
        has_text = regions is not None and any(
            (t or "").strip() for t in getattr(regions, "texts", [])
        )
        kwargs["ocr_mode"] = "individual_blocks" if has_text else "entire_page"
        if has_text:
            call.pages_ocr_blocks += 1
        else:
            call.pages_ocr_full += 1
        kwargs["infer_table_structure"] = False  # the hub model; ingestflow's own below
        page = page_number(page_layout, call)
        if has_text:
            boxes = ocr.untexted_boxes(page_layout)
            call.ocr_regions += [(page, box, call.ocr_engine) for box in boxes]
        else:
            call.ocr_pages[page] = call.ocr_engine
        if call.ocr_engine == ocr.RAPIDOCR:
            result = ocr.supplement_page(page_layout, image, kwargs["ocr_mode"])
        else:
            result = original_supplement(page_layout, image, **kwargs)
        if call.tables:
            table_finding.find(result, image, call, has_text)  # tables called something else
            _add_tables(result, image, call, has_text)
            table_finding.fill_texts(result)  # a table OCR of the page could not read
        return result

    def to_elements(*args: Any, layouts_links: list[list] | None = None, **kwargs: Any) -> Any:
        if layouts_links and not layouts_links[0] and any(layouts_links):
            layouts_links = [_NoLinks(), *layouts_links[1:]]
        return original_to_elements(*args, layouts_links=layouts_links, **kwargs)

    pdf_module.extractable_elements = probe
    ocr_module.supplement_page_layout_with_ocr = supplement
    pdf_module.document_to_element_list = to_elements
    try:
        with (
            _single_threaded_ocr(),
            tempfile.TemporaryDirectory(prefix="ingestflow-renders-") as folder,
            orientation.hooks(path, is_image) as straightener,
        ):
            renders = _Renders(Path(folder), original_render, straightener.rendered)
            image_utils.render_pdf_to_image = renders
            layout_module.convert_pdf_to_image = renders
            yield call
    finally:
        (
            pdf_module.extractable_elements,
            ocr_module.supplement_page_layout_with_ocr,
            pdf_module.document_to_element_list,
            image_utils.render_pdf_to_image,
            layout_module.convert_pdf_to_image,
        ) = saved


class _Renders:
    """The library's page rendering (`convert_pdf_to_image`), done once per set of arguments:
    the PNG files of the first call are kept (hard links, in `folder`) and later calls get links
    to them in the folder they ask for."""

    def __init__(self, folder: Path, render: Any, rendered: orientation.Rendered) -> None:
        self.folder = folder
        self.render = render
        self.rendered = rendered  # turns scanned pages upright, in place
        self.done: dict[str, list[Path]] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = kwargs.get("output_folder")
        if args or not kwargs.get("path_only") or not target or kwargs.get("file") is not None:
            return self.render(*args, **kwargs)  # not a rendering to files: as the library does
        key = repr(
            sorted((k, str(v)) for k, v in kwargs.items() if k != "output_folder" and v is not None)
        )
        kept = self.done.get(key)
        if kept is None:
            paths = self.render(**kwargs)
            self.rendered(paths)
            keep = self.folder / str(len(self.done))
            keep.mkdir()
            self.done[key] = [_link(Path(path), keep / Path(path).name) for path in paths]
            return paths
        return [str(_link(path, Path(target) / path.name)) for path in kept]


def _link(source: Path, target: Path) -> Path:
    """`target` as a hard link to `source` (a copy across file systems)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
    return target


class _NoLinks(list):
    """A first page without links that still lets the library read the other pages' links (it
    tests `layouts_links[0]` for truth)."""

    def __bool__(self) -> bool:
        return True


@contextlib.contextmanager
def _single_threaded_ocr() -> Iterator[None]:
    """One tesseract thread per worker: the runner already puts a worker on every core."""
    before = os.environ.get("OMP_THREAD_LIMIT")
    os.environ["OMP_THREAD_LIMIT"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("OMP_THREAD_LIMIT", None)
        else:
            os.environ["OMP_THREAD_LIMIT"] = before


def text_layer_chars(path: Path) -> int:
    """Characters in the PDF's text layer (0 for a scan); DocumentError when it cannot open."""
    return sum(page_text_chars(path))


def page_text_chars(path: Path) -> list[int]:
    """Characters of the text layer on each page."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise DocumentError(f"the PDF cannot be opened: {exc}") from None
    try:
        counts = []
        for page in pdf:
            text = page.get_textpage()
            counts.append(text.count_chars())
            text.close()
            page.close()
        return counts
    finally:
        pdf.close()


# --- tables --------------------------------------------------------------------------------------
def _add_tables(layout: Any, image: Any, call: _Call, has_text: bool) -> None:
    """Fill `text_as_html` of the page's Table regions."""
    import numpy as np

    elements = layout.elements_array if hasattr(layout, "elements_array") else layout
    class_map = elements.element_class_id_map
    table_ids = [k for k, v in class_map.items() if v == "Table"]
    if not table_ids or not len(elements.element_class_ids):
        return
    indices = np.where(np.isin(elements.element_class_ids, table_ids))[0]
    if not len(indices):
        return
    if len(elements.text_as_html) != len(elements.element_class_ids):
        elements.text_as_html = np.array([None] * len(elements.element_class_ids), dtype=object)
    page_words = (
        pdf_words(call.path, layout.number - 1, image.width)
        if has_text and not call.is_image
        else None
    )
    rgb = np.asarray(image.convert("RGB"))
    gray = np.asarray(image.convert("L"))
    for index in indices:
        if isinstance(elements.text_as_html[index], str):
            continue  # read already (table_finding)
        x0, y0, x1, y1 = (float(v) for v in elements.element_coords[index])
        pad = 6
        box = (
            max(0, x0 - pad),
            max(0, y0 - pad),
            min(image.width, x1 + pad),
            min(image.height, y1 + pad),
        )
        crop = gray[int(box[1]) : int(box[3]), int(box[0]) : int(box[2])]
        bgr = rgb[int(box[1]) : int(box[3]), int(box[0]) : int(box[2]), ::-1]
        if page_words is not None:
            words = [
                Word(w.text, w.x0 - box[0], w.y0 - box[1], w.x1 - box[0], w.y1 - box[1])
                for w in page_words
                if box[0] <= w.cx <= box[2] and box[1] <= w.cy <= box[3]
            ]
        else:
            words = _table_ocr(call, index, elements, crop, bgr, max(1.0, 1600 / image.width))
            page = page_number(layout, call)
            call.ocr_regions.append((page, (x0, y0, x1, y1), call.table_ocr_engine))
        html = table_model.table_html_from(bgr, crop, words, call.table_mode) if crop.size else ""
        elements.text_as_html[index] = html or None


def _table_ocr(
    call: _Call, index: int, elements: Any, gray: Any, bgr: Any, scale: float
) -> list[Word]:
    """Words of a table crop by the engine chosen for table cells; when it is not the page's,
    the Table's text is these words too (one reading for its text and its cells)."""
    if call.table_ocr_engine == ocr.TESSERACT:
        return ocr_words(gray, call.language, scale)
    words = ocr.read_words(bgr)
    if call.table_ocr_engine != call.ocr_engine and words:
        if elements.texts.dtype != object:  # fixed-width strings would cut the text short
            elements.texts = elements.texts.astype(object)
        elements.texts[index] = " ".join(w.text for w in words)
    return words
