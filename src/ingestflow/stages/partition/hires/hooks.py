"""The hooks of one High Res call, active only while it runs in this process (the package's
docstring says what each does); the library's functions are replaced through
`patches.unstructured`, which checks their shape first."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ingestflow.patches import unstructured as patches
from ingestflow.stages.partition.hires import (
    frames,
    layout_model,
    ocr,
    orientation,
    prose,
    reading_order,
    rotated_text,
    unread,
)
from ingestflow.stages.partition.hires.call import Call
from ingestflow.stages.partition.hires.environment import tesseract_codes
from ingestflow.stages.partition.hires.page_files import PageFiles
from ingestflow.stages.partition.hires.page_words import page_number
from ingestflow.stages.partition.hires.tables import finding as table_finding
from ingestflow.stages.partition.hires.tables import model as table_model
from ingestflow.stages.partition.hires.tables import promotion as table_promotion
from ingestflow.stages.partition.hires.tables.cells import add_tables
from ingestflow.stages.partition.hires.text_layer import text_layer_chars


@contextlib.contextmanager
def hooks(path: Path, is_image: bool, tables: bool, languages: list[str]) -> Iterator[Call]:
    """Install the hooks for one hi_res call (see the package's docstring)."""
    layout_model.register()
    codes = tesseract_codes(languages)
    call = Call(path, is_image, tables, "+".join(codes))
    call.ocr_engine = ocr.engine_for(codes, "page")
    call.table_ocr_engine = ocr.engine_for(codes, "table")
    if tables:
        call.table_mode = table_model.structure_mode()

    def probe(*args: Any, **kwargs: Any) -> list[list[Any]]:
        from unstructured.documents.elements import Text

        return [[Text("text layer")]] if text_layer_chars(path) else []

    def supplement_of(original_supplement: Callable[..., Any]) -> Callable[..., Any]:
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
            if not hasattr(result, "elements_array"):
                return result  # not a page's regions (a stand-in's answer): nothing to read
            if call.ocr_engine != ocr.RAPIDOCR:
                for box in unread.fill_unread(result, image, codes):
                    call.ocr_regions.append((page, box, ocr.RAPIDOCR))
            if call.tables:
                table_finding.find(result, image, call, has_text)  # tables called something else
                add_tables(result, image, call, has_text)
                table_promotion.fill_texts(result)  # a table OCR of the page could not read
            # after the tables: a picture that holds a table is that table, not paragraphs
            prose.text_pictures(
                result, image, lambda box: _words_in(box, image, call, has_text, page_layout)
            )
            return result

        return supplement

    with (
        _single_threaded_ocr(),
        ocr.raw_tesseract_input(),
        tempfile.TemporaryDirectory(prefix="ingestflow-renders-") as folder,
        orientation.hooks(path, is_image) as straightener,
    ):
        pages = PageFiles()
        renders: list[_Renders] = []  # one for both of the library's render functions

        def render_of(original_render: Callable[..., Any]) -> _Renders:
            renders.append(_Renders(Path(folder), original_render, straightener, pages))
            return renders[0]

        with (
            patches.replaced(
                ("extractable_elements", lambda _: probe),
                ("supplement_page_layout_with_ocr", supplement_of),
                ("document_to_element_list", patches.links_on_every_page),
                ("render_pdf_to_image", render_of),
                ("convert_pdf_to_image", lambda _: renders[0]),
                ("xycut_order", lambda _: reading_order.xy_cut),
                ("save_elements", frames.save_elements_per_frame),
                ("process_file_with_pdfminer", rotated_text.process_file_with_pdfminer_upright),
            ),
            pages.opening(),
        ):
            yield call
        # the elements' boxes are on the pages as stored by now (`orientation`): so are these
        call.ocr_regions = straightener.stored_regions(call.ocr_regions)


def _words_in(
    box: tuple[float, float, float, float], image: Any, call: Call, has_text: bool, layout: Any
) -> list[Any]:
    """The words of a region of the page, in page pixels: the text layer's, or OCR's of its
    crop (PP-OCRv6 where it serves the languages, tesseract otherwise)."""
    import numpy as np

    from ingestflow.stages.partition.hires import page_words
    from ingestflow.stages.partition.hires.tables.parts import Word

    x0, y0, x1, y1 = box
    if has_text and not call.is_image:
        turn = page_words.image_turn(image)
        found = page_words.pdf_words(call.path, layout.number - 1, image.width, turn)
        return [w for w in found if x0 <= w.cx <= x1 and y0 <= w.cy <= y1]
    crop = image.crop((int(x0), int(y0), int(x1), int(y1)))
    codes = call.language.split("+") if call.language else []
    if ocr.mode() != "tesseract" and codes and all(c in ocr.SERVED for c in codes):
        words = ocr.read_words(crop)
    else:
        gray = np.asarray(crop.convert("L"))
        words = page_words.ocr_words(gray, call.language, max(1.0, 1600 / image.width))
    return [Word(w.text, w.x0 + x0, w.y0 + y0, w.x1 + x0, w.y1 + y0) for w in words]


class _Renders:
    """The library's page rendering (`convert_pdf_to_image`), done once per set of arguments:
    the page files of the first call (uncompressed: `page_files`) are kept (hard links, in
    `folder`) and later calls get links to them in the folder they ask for."""

    def __init__(
        self, folder: Path, render: Any, straightener: orientation.Straightener, pages: PageFiles
    ) -> None:
        self.folder = folder
        self.render = render
        self.straightener = straightener  # turns scanned pages upright, in place
        self.pages = pages
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
            paths = self.pages.render(self.render, kwargs)
            self.straightener.rendered(paths, self.pages)
            keep = self.folder / str(len(self.done))
            keep.mkdir()
            self.done[key] = [self._link(Path(path), keep / Path(path).name) for path in paths]
            return paths
        return [str(self._link(path, Path(target) / path.name)) for path in kept]

    def _link(self, source: Path, target: Path) -> Path:
        """`target` as a hard link to `source` (a copy across file systems)."""
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
        self.pages.link(source, target)
        return target


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
