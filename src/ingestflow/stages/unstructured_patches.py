"""Every run-time replacement of an `unstructured` function, in one guarded place.

ingestflow changes a few of the library's internals while it runs (`PATCHES`: what, and why).
They rely on functions the library does not promise to keep, so before any of them is applied
`check()` verifies that the installed versions are within `SUPPORTED` and that every replaced
function still has the signature it had when the patch was written; if not, an
EnvironmentProblem says what differs and which versions to install. No other module assigns
into the library: they call `replaced()` (for one call, restored after) or `installed()` (once
per process), handing the replacement as a function of the original. The replacements that only
repair the library (`links_on_every_page`, `spacy_model`, and `lazy_imports`: its drawing module,
spaCy and numba imported at first use, not with the reading modules) live here; those that carry
ingestflow's own behaviour (High Res's OCR and tables, batched spaCy calls) live in their modules.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from ingestflow.errors import EnvironmentProblem

#: The versions whose internals the patches were checked against (docs/design.md, "Stages"):
#: unstructured 0.27.32 (installed) and 0.27.33-0.27.35 (their signatures, and this module's
#: tests on 0.27.35); unstructured-inference 1.6.14 only, so its patch release series.
SUPPORTED: dict[str, str] = {
    "unstructured": ">=0.27.32,<=0.27.35",
    "unstructured-inference": ">=1.6.14,<1.7",
}
_FIX = (
    "install the supported versions ({}) as scripts/setup.sh does, or adapt "
    "ingestflow.stages.unstructured_patches to the new version"
)


@dataclass(frozen=True)
class Patch:
    """One replaced attribute of the library and the shape the replacement assumes."""

    module: str
    attribute: str  # dotted inside the module: "_HtmlPartitioner._main"
    assumed: str  # the signature without annotations, or "value: <type name>" for a value
    why: str


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
    "html_partitioner_main": Patch(
        "unstructured.partition.html.partition",
        "_HtmlPartitioner._main",
        "value: cached_property (self)",
        "deeply nested HTML is refused before the library's walk cuts it short (html_depth)",
    ),
}


def shape(target: Any) -> str:
    """A callable's signature without annotations (what a replacement relies on)."""
    signature = inspect.signature(target)
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=bare, return_annotation=inspect.Signature.empty))


def check_signature(target: Any, assumed: str, where: str) -> None:
    """EnvironmentProblem when callable `target` (named `where`) does not have the signature
    `assumed` (as `shape` writes it), naming the parameters that differ."""
    found = shape(target)
    if found == assumed:
        return
    expected, actual = _parameters(assumed), _parameters(found)
    missing = [p for p in expected if p not in actual]
    extra = [p for p in actual if p not in expected]
    differs = "; ".join(
        part
        for part in (
            f"missing {', '.join(missing)}" if missing else "",
            f"new {', '.join(extra)}" if extra else "",
        )
        if part
    )
    raise EnvironmentProblem(
        f"{where} does not have the signature ingestflow's patch of it assumes "
        f"({differs or f'parameters reordered: {found}'}); " + _FIX.format(_ranges())
    )


def check_version(package: str, installed: str, supported: str) -> None:
    """EnvironmentProblem when `installed` (a version of `package`) is outside `supported`."""
    from packaging.specifiers import SpecifierSet

    if installed not in SpecifierSet(supported):
        raise EnvironmentProblem(
            f"{package} {installed} is installed, but ingestflow patches internals that it "
            f"checked only in {package}{supported}; " + _FIX.format(_ranges())
        )


def check_patch(patch: Patch) -> None:
    """EnvironmentProblem when the library's attribute `patch` replaces is missing or changed."""
    where = f"{patch.module}.{patch.attribute}"
    try:
        target = library_value(patch)
    except (ImportError, AttributeError) as exc:
        raise EnvironmentProblem(
            f"{where} is missing ({type(exc).__name__}), and ingestflow replaces it at run "
            "time; " + _FIX.format(_ranges())
        ) from None
    if patch.assumed.startswith("value: "):
        kind, _, rest = patch.assumed.removeprefix("value: ").partition(" ")
        if type(target).__name__ != kind:
            raise EnvironmentProblem(
                f"{where} is a {type(target).__name__}, not the {kind} ingestflow's patch of "
                "it assumes; " + _FIX.format(_ranges())
            )
        if rest:  # a cached_property: the function it wraps
            check_signature(target.func, rest, where)
        return
    check_signature(target, patch.assumed, where)


def check_versions() -> None:
    """EnvironmentProblem when an installed version is outside `SUPPORTED` (cheap: no import)."""
    _versions_checked()


def check(*names: str) -> None:
    """Check the installed versions and the named patched attributes (all when none is named),
    each once per process; EnvironmentProblem at the first that differs."""
    _versions_checked()
    for name in names or tuple(PATCHES):
        _patch_checked(name)


@functools.cache
def _versions_checked() -> None:
    for package, supported in SUPPORTED.items():
        try:
            installed = metadata.version(package)
        except metadata.PackageNotFoundError:
            raise EnvironmentProblem(
                f"the Python package {package} is not installed; run scripts/setup.sh"
            ) from None
        check_version(package, installed, supported)


@functools.cache
def _patch_checked(name: str) -> None:
    check_patch(PATCHES[name])


@contextmanager
def replaced(*changes: tuple[str, Callable[[Any], Any]]) -> Iterator[None]:
    """While open, each named attribute of `PATCHES` is `make(original)`; restored after."""
    check(*(name for name, _ in changes))
    saved = [(PATCHES[name], _lookup(PATCHES[name])) for name, _ in changes]
    outermost = [patch for patch, original in saved if patch not in _originals]
    try:
        for (patch, original), (_, make) in zip(saved, changes, strict=True):
            _originals.setdefault(patch, original)
            _assign(patch, make(original))
        yield
    finally:
        for patch, original in reversed(saved):
            _assign(patch, original)
        for patch in outermost:
            _originals.pop(patch, None)


_installed: dict[str, Any] = {}
_installing = threading.Lock()
#: The library's own value of each attribute replaced now (what `check_patch` looks at).
_originals: dict[Patch, Any] = {}


def installed(name: str, make: Callable[[Any], Any]) -> Any:
    """Replace the attribute `name` of `PATCHES` by `make(original)` for the rest of the process
    (the first call does; later calls change nothing); the original."""
    with _installing:
        if name not in _installed:
            check(name)
            original = _originals.get(PATCHES[name], _lookup(PATCHES[name]))
            _assign(PATCHES[name], make(original))
            _installed[name] = _originals[PATCHES[name]] = original
        return _installed[name]


def spacy_model(name: str) -> None:
    """Make the library tokenize with the spaCy model package `name` (read at call time; set
    on every call, as a later import may have reset it)."""
    check("spacy_model_name")
    _assign(PATCHES["spacy_model_name"], name)


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

_stand_in_lock = threading.RLock()  # one real import may bring another


def lazy_imports() -> None:
    """Leave out what the reading may never use until it does: a stand-in for each module of
    `LAZY` that imports the real one at first use, and the XY-cut module imported without
    numba (`xycut_without_numba`). Before the library's modules are imported; each once."""
    for name, names in LAZY.items():
        _stand_in(name, names)
    xycut_without_numba()


def _stand_in(name: str, names: tuple[str, ...] = ()) -> None:
    """Put a module in `sys.modules[name]` that imports the real one at its first use (an
    attribute, a submodule) and hands every use on to it; nothing when `name` is imported or
    not installed. `names` are bound as functions up front, for `from name import f`."""
    import importlib.util
    import sys
    import types

    if name in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # its package is missing or broken
        spec = None
    if spec is None:  # not installed: the import that needs it says so
        return
    stand_in = types.ModuleType(name, "imported at first use (ingestflow: unstructured_patches)")
    stand_in.__spec__ = spec  # `find_spec` answers from it, as for the real module

    def real() -> Any:
        with _stand_in_lock:  # two first uses at once: one import
            if sys.modules.get(name) is stand_in:
                sys.modules.pop(name, None)
            return importlib.import_module(name)

    def delegate(function: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(real(), function)(*args, **kwargs)

        call.__name__ = call.__qualname__ = function
        return call

    def attribute(attr: str) -> Any:
        if attr == "__path__" and spec.submodule_search_locations is not None:
            return real().__path__  # a submodule's import: the package itself first
        if attr.startswith("__"):  # the import system's other questions: a module's
            raise AttributeError(attr)
        return getattr(real(), attr)

    for function in names:
        setattr(stand_in, function, delegate(function))
    stand_in.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[name] = stand_in


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


def library_value(patch: Patch) -> Any:
    """The library's own value of `patch`'s attribute, not a replacement of ours."""
    return _originals[patch] if patch in _originals else _lookup(patch)


def _lookup(patch: Patch) -> Any:
    """The library's current value of `patch`'s attribute (a class attribute unbound)."""
    owner: Any = importlib.import_module(patch.module)
    *path, last = patch.attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if last in vars(klass):
                return vars(klass)[last]
        raise AttributeError(f"{owner.__name__} has no attribute {last!r}")
    return getattr(owner, last)


def _assign(patch: Patch, value: Any) -> None:
    owner: Any = importlib.import_module(patch.module)
    *path, last = patch.attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    if isinstance(value, functools.cached_property):
        value.__set_name__(owner, last)
    setattr(owner, last, value)


def _parameters(signature: str) -> list[str]:
    """The parameters of a signature as `shape` writes it, each as written."""
    inner = signature.strip()[1:-1]
    parts: list[str] = []
    depth, quote, current = 0, "", ""
    for char in inner:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def _ranges() -> str:
    return ", ".join(f"{package}{spec}" for package, spec in SUPPORTED.items())
