"""The run-time replacements of `unstructured` and `unstructured_inference` functions.

ingestflow changes a few of the library's internals while it runs (`PATCHES`: what, and why),
through the guard (`patches.guard`): before any of them is applied the installed versions are
checked against `SUPPORTED` and every replaced function's signature against the one it had when
the patch was written; if not, an EnvironmentProblem says what differs and which versions to
install. Callers use `replaced()` (for one call, restored after) or `installed()` (once per
process), handing the replacement as a function of the original. The replacements that only
repair the library (`links_on_every_page`, `spacy_model`, and `lazy_imports`: its drawing module,
spaCy and numba imported at first use, not with the reading modules) live here; those that carry
ingestflow's own behaviour (High Res's OCR and tables, batched spaCy calls) live in their modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ingestflow.patches import guard, imports
from ingestflow.patches.guard import (
    Patch,
    check_patch,
    check_signature,
    installed,
    library_value,
    replaced,
    shape,
)

__all__ = [
    "LAZY",
    "PATCHES",
    "SUPPORTED",
    "Patch",
    "check",
    "check_patch",
    "check_signature",
    "check_version",
    "check_versions",
    "installed",
    "lazy_imports",
    "library_value",
    "links_on_every_page",
    "replaced",
    "shape",
    "spacy_model",
]

#: This module's name in the guard (`Patch.library`).
LIBRARY = "unstructured"
#: The versions whose internals the patches were checked against (docs/design.md, "Stages"):
#: unstructured 0.27.32 (installed) and 0.27.33-0.27.35 (their signatures, and this module's
#: tests on 0.27.35); unstructured-inference 1.6.14 only, so its patch release series.
SUPPORTED: dict[str, str] = {
    "unstructured": ">=0.27.32,<=0.27.35",
    "unstructured-inference": ">=1.6.14,<1.7",
}

_PDF = "unstructured.partition.pdf"
_OCR_AGENT = "'unstructured.partition.utils.ocr_models.tesseract_ocr.OCRAgentTesseract'"
_RENDER = (
    "(filename=None, file=None, dpi=200, output_folder=None, path_only=False, first_page=None, "
    "last_page=None, password=None, pdf_render_max_pixels_per_page=None)"
)

#: Every replaced attribute, by the name callers use.
PATCHES: dict[str, Patch] = {
    "extractable_elements": Patch(
        _PDF,
        "extractable_elements",
        "(filename='', file=None, languages=None, metadata_last_modified=None, "
        "starting_page_number=1, password=None, pdfminer_config=None, **kwargs)",
        "High Res asks 'is there a text layer?' of pypdfium2, not a full pdfminer pass",
    ),
    "supplement_page_layout_with_ocr": Patch(
        "unstructured.partition.pdf_image.ocr",
        "supplement_page_layout_with_ocr",
        "(page_layout, image, infer_table_structure=False, "
        f"ocr_agent={_OCR_AGENT}, ocr_languages='eng', ocr_mode='entire_page', "
        f"extracted_regions=None, ocr_layout_dumper=None, table_ocr_agent={_OCR_AGENT})",
        "High Res chooses OCR per page and builds table structure offline",
    ),
    "document_to_element_list": Patch(
        _PDF,
        "document_to_element_list",
        "(document, sortable=False, include_page_breaks=False, last_modification_date=None, "
        "infer_list_items=True, source_format=None, detection_origin=None, sort_mode='xy-cut', "
        "languages=None, starting_page_number=1, layouts_links=None, **kwargs)",
        "links are kept when the first page has none",
    ),
    "render_pdf_to_image": Patch(
        "unstructured.partition.pdf_image.pdf_image_utils",
        "render_pdf_to_image",
        _RENDER,
        "High Res renders each page once (and turns scans upright)",
    ),
    "convert_pdf_to_image": Patch(
        "unstructured_inference.inference.layout",
        "convert_pdf_to_image",
        _RENDER,
        "High Res renders each page once (and turns scans upright)",
    ),
    "save_elements": Patch(
        "unstructured.partition.pdf_image.pdf_image_utils",
        "save_elements",
        "(elements, starting_page_number, element_category_to_save, pdf_image_dpi, "
        "filename='', file=None, is_image=False, extract_image_block_to_payload=False, "
        "output_dir_path=None, password=None)",
        "High Res crops each page of a multi-page image from its own frame (hires frames)",
    ),
    "process_file_with_pdfminer": Patch(
        "unstructured.partition.pdf_image.pdfminer_processing",
        "process_file_with_pdfminer",
        "(filename='', dpi=350, password=None, pdfminer_config=None, rotation_corrections=None)",
        "High Res reads the text layer of a page shown turned (/Rotate) in the page's own frame "
        "(hires rotated_text)",
    ),
    "partition_pdf_or_image_local": Patch(
        _PDF,
        "_partition_pdf_or_image_local",
        "(filename='', file=None, is_image=False, infer_table_structure=False, "
        "include_page_breaks=False, languages=None, ocr_languages=None, "
        "ocr_mode='entire_page', model_name=None, hi_res_model_name=None, pdf_image_dpi=None, "
        "metadata_last_modified=None, pdf_text_extractable=False, extract_images_in_pdf=False, "
        "extract_image_block_types=None, extract_image_block_output_dir=None, "
        "extract_image_block_to_payload=False, analysis=False, "
        "analyzed_image_output_dir_path=None, starting_page_number=1, extract_forms=False, "
        "form_extraction_skip_tables=True, pdf_hi_res_max_pages=None, password=None, "
        f"pdfminer_config=None, ocr_agent={_OCR_AGENT}, table_ocr_agent={_OCR_AGENT}, "
        "**kwargs)",
        "High Res maps the coordinates of pages it turned upright back",
    ),
    "tokenize_process": Patch(
        "unstructured.nlp.tokenize",
        "_process",
        "(text)",
        "spaCy's checks are served from batches (nlp_batch)",
    ),
    "open_pdfminer_pages_generator": Patch(
        _PDF,
        "open_pdfminer_pages_generator",
        "(fp, password=None, pdfminer_config=None)",
        "Fast PDF pages are read ahead so their texts are checked in batches (nlp_batch)",
    ),
    "derive_element_type_from_text": Patch(
        "unstructured.partition.html.parser",
        "derive_element_type_from_text",
        "(text)",
        "a large HTML file's texts are listed before spaCy checks them (nlp_batch)",
    ),
    "is_possible_narrative_text": Patch(
        "unstructured.partition.text",
        "is_possible_narrative_text",
        "(text, cap_threshold=0.5, non_alpha_threshold=0.5, languages=['eng'], "
        "language_checks=False)",
        "a plain text's paragraphs with a verb among their first words are narrative without "
        "spaCy's whole pipeline (text_narrative)",
    ),
    "spacy_model_name": Patch(
        "unstructured.nlp.tokenize",
        "_SPACY_MODEL_NAME",
        "value: str",
        "the spaCy model comes from PyPI, not a download at first use (offline)",
    ),
    "html_parser": Patch(
        "unstructured.partition.html.partition",
        "html_parser",
        "value: HTMLParser",
        "deeply nested HTML is read in full, without libxml2's depth limit (html_depth)",
    ),
    "xycut_projection": Patch(
        "unstructured.partition.utils.xycut",
        "projection_by_bboxes",
        "(boxes, axis)",
        "XY-cut ordering without starting numba's compiler in every worker (xy_cut)",
    ),
    "xycut_split": Patch(
        "unstructured.partition.utils.xycut",
        "split_projection_profile",
        "(arr_values, min_value, min_gap)",
        "XY-cut ordering without starting numba's compiler in every worker (xy_cut)",
    ),
    "xycut_order": Patch(
        "unstructured.partition.utils.sorting",
        "recursive_xy_cut_swapped",
        "(boxes, indices, res)",
        "High Res reads a page's columns whole where its paragraphs end at one height "
        "(reading_order)",
    ),
    "html_partitioner_main": Patch(
        "unstructured.partition.html.partition",
        "_HtmlPartitioner._main",
        "value: cached_property (self)",
        "deeply nested HTML is refused before the library's walk cuts it short (html_depth)",
    ),
}


guard.declare(LIBRARY, SUPPORTED, PATCHES)


def check_version(package: str, installed: str, supported: str) -> None:
    """EnvironmentProblem when `installed` (a version of `package`) is outside `supported`."""
    guard.check_version(package, installed, supported, LIBRARY)


def check_versions() -> None:
    """EnvironmentProblem when an installed version is outside `SUPPORTED` (cheap: no import)."""
    guard.check_versions(LIBRARY)


def check(*names: str) -> None:
    """Check the installed versions and the named patched attributes (all when none is named),
    each once per process; EnvironmentProblem at the first that differs."""
    guard.check_versions(LIBRARY)
    guard.check(*(names or tuple(PATCHES)))


def spacy_model(name: str) -> None:
    """Make the library tokenize with the spaCy model package `name` (read at call time; set
    on every call, as a later import may have reset it)."""
    guard.assign("spacy_model_name", name)


#: The layout package's drawing module, whose import loads matplotlib's pyplot (~0.5 s, in every
#: process that reads a PDF) for a debugging aid the reading never calls (`draw_bbox`, by
#: `PageLayout.annotate`).
DRAWING = "unstructured_inference.visualize"
#: The High Res partitioner's analysis drawings (`analysis=True`, which ingestflow never asks
#: for), imported by every High Res call: matplotlib and numba (~0.2 s in every worker).
ANALYSIS = "unstructured.partition.pdf_image.analysis.tools"
#: spaCy (~0.4 s to import, with thinc and its CLI): the library's tokenizer module imports it,
#: and High Res reads PDFs and images without calling it.
SPACY = "spacy"
#: Modules the reading may never use, each with the names the library imports from it (checked
#: against the library's source by the tests): `lazy_imports` stands in for them until used.
LAZY: dict[str, tuple[str, ...]] = {
    DRAWING: ("draw_bbox",),
    ANALYSIS: ("save_analysis_artifiacts",),
    SPACY: (),  # the library uses it as `spacy.load`
}
#: The names the library imports from the drawing module.
DRAWING_NAMES = LAZY[DRAWING]
#: The library's XY-cut module, which imports numba (~0.1 s) for two functions that `xy_cut`
#: replaces in every process that reads.
XYCUT = "unstructured.partition.utils.xycut"


def lazy_imports() -> None:
    """Leave out what the reading may never use until it does: a stand-in for each module of
    `LAZY` that imports the real one at first use, and the XY-cut module imported without
    numba (`xycut_without_numba`). Before the library's modules are imported; each once."""
    for name, names in LAZY.items():
        imports.stand_in(name, names)
    xycut_without_numba()


def xycut_without_numba() -> None:
    """Import `XYCUT` with a stand-in numba whose `njit` leaves the functions as they are (the
    library's own Python, which `xy_cut` then replaces), so that numba is not imported; the
    stand-in is gone after, and a later `import numba` gets the real one."""
    import sys
    import types

    if XYCUT in sys.modules or "numba" in sys.modules:
        return
    numba = types.ModuleType("numba", "stands in while the XY-cut module is imported")

    def njit(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # @njit
        return lambda function: function  # @njit(cache=True)

    numba.njit = njit  # type: ignore[attr-defined]
    sys.modules["numba"] = numba
    try:
        importlib.import_module(XYCUT)
    except ImportError:  # a broken install: the library's own import says what is wrong
        pass
    finally:
        if sys.modules.get("numba") is numba:
            del sys.modules["numba"]


def links_on_every_page(original: Callable[..., Any]) -> Callable[..., Any]:
    """`document_to_element_list` keeping every page's links: the library reads
    `layouts_links` only when the first page has a link."""

    def to_elements(*args: Any, layouts_links: list[list] | None = None, **kwargs: Any) -> Any:
        if layouts_links and not layouts_links[0] and any(layouts_links):
            layouts_links = [_NoLinks(), *layouts_links[1:]]
        return original(*args, layouts_links=layouts_links, **kwargs)

    return to_elements


class _NoLinks(list):
    """A first page without links that still lets the library read the other pages' links (it
    tests `layouts_links[0]` for truth)."""

    def __bool__(self) -> bool:
        return True
