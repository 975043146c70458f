"""The patches of `unstructured` (`stages/unstructured_patches.py`): each replaced attribute is
replaced while it should be and does what it is there for, and the checker finds a version out
of range and an attribute whose shape changed (tried on fakes: it takes any target)."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ingestflow.errors import DocumentError, EnvironmentProblem
from ingestflow.offline import SPACY_MODEL
from ingestflow.stages import hires, html_depth, nlp_batch, orientation, xy_cut
from ingestflow.stages import unstructured_patches as patches
from ingestflow.stages.partition import configure_unstructured
from tests.stages.test_partition import make_pdf, nested_html

configure_unstructured()  # offline before the library is imported below


def _changed(target: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in with `target`'s signature but its first parameter renamed."""
    signature = inspect.signature(target)
    first, *rest = signature.parameters.values()
    changed = signature.replace(parameters=[first.replace(name=f"{first.name}_v2"), *rest])

    def fake(*args: Any, **kwargs: Any) -> None:
        return None

    fake.__signature__ = changed  # type: ignore[attr-defined]
    return fake


def assert_shape_change_found(name: str) -> None:
    """The checker accepts the library's own attribute `name` and refuses a changed one."""
    patch = patches.PATCHES[name]
    patches.check_patch(patch)  # the installed library is as assumed
    target = patches.library_value(patch)
    where = f"{patch.module}.{patch.attribute}"
    if patch.assumed.startswith("value: "):
        if isinstance(target, functools.cached_property):
            changed = functools.cached_property(_changed(target.func))
            with pytest.raises(EnvironmentProblem, match=r"\(missing self; new self_v2\)"):
                _check_value(changed, patch.assumed)
        with pytest.raises(EnvironmentProblem, match=r"is a dict, not the \w+ ingestflow's patch"):
            _check_value({}, patch.assumed)
        return
    first = next(iter(inspect.signature(target).parameters))
    with pytest.raises(
        EnvironmentProblem,
        match=rf"^{where} does not have the signature ingestflow's patch of it assumes "
        rf"\(missing {first}.*; new {first}_v2.*\); install the supported versions "
        r"\(unstructured>=",
    ):
        patches.check_signature(_changed(target), patch.assumed, where)


_FAKE: Any = None


def _check_value(value: Any, assumed: str) -> None:
    """`check_patch` on a value of this module (as a library attribute would be looked up)."""
    global _FAKE
    _FAKE = value
    patches.check_patch(patches.Patch(__name__, "_FAKE", assumed, "test"))


# --- the checker ---------------------------------------------------------------------------------
def test_the_installed_library_passes_every_check():
    patches.check()
    patches.check_versions()


def test_a_version_outside_the_supported_range_is_an_environment_problem():
    supported = patches.SUPPORTED["unstructured"]
    patches.check_version("unstructured", "0.27.32", supported)
    with pytest.raises(
        EnvironmentProblem,
        match=r"^unstructured 0\.27\.36 is installed, but ingestflow patches internals that it "
        r"checked only in unstructured>=0\.27\.32,<=0\.27\.35; install the supported versions",
    ):
        patches.check_version("unstructured", "0.27.36", supported)


def test_a_partition_node_stops_at_precheck_on_a_version_outside_the_range(
    monkeypatch: pytest.MonkeyPatch,
):
    from ingestflow.spec.settings import UnstructuredPartitionSettings
    from ingestflow.stages.base import RunContext
    from ingestflow.stages.partition import UnstructuredPartitionStage

    monkeypatch.setitem(patches.SUPPORTED, "unstructured", ">=0.27.36")
    patches._versions_checked.cache_clear()  # checked once per process: check again
    stage = UnstructuredPartitionStage(
        "Partitioner",
        "unstructured_api",
        UnstructuredPartitionSettings(strategy="fast"),
        RunContext(),
    )
    try:
        with pytest.raises(
            EnvironmentProblem,
            match=r"^unstructured [\d.]+ is installed, but .* only in unstructured>=0\.27\.36",
        ):
            stage.precheck()
    finally:
        patches._versions_checked.cache_clear()


def test_a_missing_attribute_is_an_environment_problem():
    patch = patches.Patch("unstructured.partition.pdf", "no_such_function", "(text)", "test")
    with pytest.raises(
        EnvironmentProblem,
        match=r"^unstructured\.partition\.pdf\.no_such_function is missing \(AttributeError\)",
    ):
        patches.check_patch(patch)


def test_a_replacement_is_undone_when_the_call_fails():
    import unstructured.nlp.tokenize as tokenize

    before = tokenize._process
    with (
        pytest.raises(ValueError, match="inside"),
        patches.replaced(("tokenize_process", lambda original: lambda text: None)),
    ):
        assert tokenize._process is not before
        raise ValueError("inside")
    assert tokenize._process is before


# --- High Res ------------------------------------------------------------------------------------
@pytest.fixture
def text_pdf(tmp_path: Path) -> Path:
    path = tmp_path / "text.pdf"
    path.write_bytes(make_pdf(["A heading\nA line of text on the page."]))
    return path


@pytest.fixture
def scan_pdf(tmp_path: Path) -> Path:
    from PIL import Image

    path = tmp_path / "scan.pdf"
    Image.new("RGB", (400, 500), "white").save(path, "PDF", resolution=72)
    return path


def test_extractable_elements(text_pdf: Path, scan_pdf: Path):
    """High Res's text-layer probe answers from pypdfium2's character count."""
    import unstructured.partition.pdf as pdf

    library = pdf.extractable_elements
    with hires.hooks(text_pdf, False, False, ["eng"]):
        assert [[e.text for e in page] for page in pdf.extractable_elements()] == [["text layer"]]
    with hires.hooks(scan_pdf, False, False, ["eng"]):
        assert pdf.extractable_elements(filename=str(scan_pdf)) == []
    assert pdf.extractable_elements is library
    assert_shape_change_found("extractable_elements")


def test_supplement_page_layout_with_ocr(scan_pdf: Path, monkeypatch: pytest.MonkeyPatch):
    """OCR is chosen per page: a page without text is OCRed whole, one with text only where it
    has none; the library's table model is never asked for."""
    import numpy as np
    import unstructured.partition.pdf_image.ocr as ocr_module

    monkeypatch.setenv("INGESTFLOW_OCR_ENGINE", "tesseract")  # the library's own OCR is wrapped
    seen: list[dict[str, Any]] = []

    def library(page_layout: Any, image: Any, **kwargs: Any) -> str:
        seen.append(kwargs)
        return "supplemented"

    regions = SimpleNamespace(
        elements_array=SimpleNamespace(
            texts=np.array(["", "text"], dtype=object),
            x1=np.array([1.0, 5.0]),
            y1=np.array([2.0, 6.0]),
            x2=np.array([3.0, 7.0]),
            y2=np.array([4.0, 8.0]),
        ),
        number=2,
    )
    with (
        patches.replaced(("supplement_page_layout_with_ocr", lambda _: library)),
        hires.hooks(scan_pdf, False, False, ["eng"]) as call,
    ):
        blank = SimpleNamespace(texts=[""])
        assert ocr_module.supplement_page_layout_with_ocr(regions, None, extracted_regions=blank)
        texted = SimpleNamespace(texts=["", "words"])
        ocr_module.supplement_page_layout_with_ocr(
            regions, None, extracted_regions=texted, infer_table_structure=True
        )
    assert [(k["ocr_mode"], k["infer_table_structure"]) for k in seen] == [
        ("entire_page", False),
        ("individual_blocks", False),
    ]
    assert call.ocr_pages == {2: "tesseract"}
    assert call.ocr_regions == [(2, (1.0, 2.0, 3.0, 4.0), "tesseract")]
    assert (call.pages_ocr_full, call.pages_ocr_blocks) == (1, 1)
    assert_shape_change_found("supplement_page_layout_with_ocr")


def test_document_to_element_list(text_pdf: Path):
    """The other pages' links are read when the first page has none."""
    import unstructured.partition.pdf as pdf

    received: list[Any] = []

    def library(*args: Any, layouts_links: Any = None, **kwargs: Any) -> list[Any]:
        received.append(layouts_links)
        return []

    with (
        patches.replaced(("document_to_element_list", lambda _: library)),
        hires.hooks(text_pdf, False, False, ["eng"]),
    ):
        link = {"text": "ingestflow", "url": "https://example.org"}
        pdf.document_to_element_list(None, layouts_links=[[], [link]])
        pdf.document_to_element_list(None, layouts_links=[[], []])
    first, second = received
    assert bool(first[0]) and list(first[0]) == [] and first[1] == [link]  # read, and empty
    assert second == [[], []]  # no link anywhere: as the library had it
    assert_shape_change_found("document_to_element_list")


def _render_twice(render: Callable[..., Any], pdf: Path, tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    kwargs = {"filename": str(pdf), "dpi": 50, "path_only": True}
    (one,) = render(output_folder=str(first), **kwargs)
    (two,) = render(output_folder=str(second), **kwargs)
    return Path(one), Path(two)


def test_render_pdf_to_image(text_pdf: Path, tmp_path: Path):
    """A page rendered twice with the same settings is rendered once (a hard link after)."""
    import unstructured.partition.pdf_image.pdf_image_utils as image_utils

    with hires.hooks(text_pdf, False, False, ["eng"]):
        one, two = _render_twice(image_utils.render_pdf_to_image, text_pdf, tmp_path)
        assert one.parent != two.parent and os.path.samefile(one, two)
    (tmp_path / "after").mkdir()
    one, two = _render_twice(image_utils.render_pdf_to_image, text_pdf, tmp_path / "after")
    assert not os.path.samefile(one, two)  # the library's own again: rendered twice
    assert_shape_change_found("render_pdf_to_image")


def test_convert_pdf_to_image(text_pdf: Path, tmp_path: Path):
    """The layout library's rendering shares the renderings of the partition library's."""
    import unstructured.partition.pdf_image.pdf_image_utils as image_utils
    import unstructured_inference.inference.layout as layout_module

    library = layout_module.convert_pdf_to_image
    with hires.hooks(text_pdf, False, False, ["eng"]):
        assert layout_module.convert_pdf_to_image is image_utils.render_pdf_to_image
        (first,) = image_utils.render_pdf_to_image(
            filename=str(text_pdf), dpi=50, output_folder=str(tmp_path), path_only=True
        )
        (tmp_path / "again").mkdir()
        (again,) = layout_module.convert_pdf_to_image(
            filename=str(text_pdf), dpi=50, output_folder=str(tmp_path / "again"), path_only=True
        )
        assert os.path.samefile(first, again)
    assert layout_module.convert_pdf_to_image is library
    assert_shape_change_found("convert_pdf_to_image")


def test_partition_pdf_or_image_local(scan_pdf: Path, monkeypatch: pytest.MonkeyPatch):
    """The elements of a hi_res call go through the straightener, with the call's first page."""
    import unstructured.partition.pdf as pdf

    restored: list[tuple[list[Any], int]] = []
    monkeypatch.setattr(
        orientation.Straightener,
        "restore",
        lambda self, elements, first_page: restored.append((elements, first_page)),
    )
    with (
        patches.replaced(("partition_pdf_or_image_local", lambda _: lambda **kw: ["element"])),
        orientation.hooks(scan_pdf, False),
    ):
        assert pdf._partition_pdf_or_image_local(starting_page_number=7) == ["element"]
    assert restored == [(["element"], 7)]
    assert_shape_change_found("partition_pdf_or_image_local")


# --- spaCy in batches ----------------------------------------------------------------------------
def test_tokenize_process():
    """While texts are prefetched, the library's spaCy calls on them get the batch's results."""
    from unstructured.nlp import tokenize

    texts = [f"The keeper number {i} lit the lamp at dusk." for i in range(nlp_batch.MIN_TEXTS)]
    with nlp_batch.prefetched(texts):
        served = tokenize._process(texts[3])
        assert tokenize._process(texts[3]) is served  # from the batch, not processed again
    alone = tokenize._process(texts[3])
    assert alone is not served
    assert [t.tag_ for t in served] == [t.tag_ for t in alone]
    assert_shape_change_found("tokenize_process")


def test_open_pdfminer_pages_generator(tmp_path: Path):
    """Under the Fast PDF look-ahead, pages are read as the library reads them, and the texts of
    their boxes are processed before the library classifies them."""
    import unstructured.partition.pdf as pdf
    from unstructured.nlp import tokenize

    path = tmp_path / "doc.pdf"
    path.write_bytes(make_pdf([f"Page {n} has a line of text." for n in range(1, 4)]))
    with open(path, "rb") as fp:
        alone = [page.pageid for page, _ in pdf.open_pdfminer_pages_generator(fp)]
    with nlp_batch.pdf_prefetched(), open(path, "rb") as fp:
        ahead = [page.pageid for page, _ in pdf.open_pdfminer_pages_generator(fp)]
        served = tokenize._process("Page 2 has a line of text.")
        assert tokenize._process("Page 2 has a line of text.") is served  # prefetched
    assert ahead == alone and len(alone) == 3
    assert_shape_change_found("open_pdfminer_pages_generator")


def test_derive_element_type_from_text():
    """An HTML file's texts are listed by the library's own walk, without spaCy; afterwards the
    classifier is the library's again."""
    from unstructured.documents.elements import NarrativeText, Title
    from unstructured.partition.html import parser, partition_html

    html = "<html><body><h1>Harbour</h1><p>The keeper lit the lamp at dusk.</p></body></html>"
    texts = nlp_batch.html_texts(lambda: partition_html(text=html))
    assert "The keeper lit the lamp at dusk." in texts
    assert parser.derive_element_type_from_text("The keeper lit the lamp at dusk.") in (
        NarrativeText,
        Title,
    )
    assert_shape_change_found("derive_element_type_from_text")


# --- XY-cut without numba's compiler --------------------------------------------------------------
def _layouts() -> list[Any]:
    """Integer boxes (x0, y0, x1, y1) as the library's XY-cut gets them: pages of columns and
    rows, boxes at the page's edge, empty and inverted boxes."""
    import numpy as np

    rng = np.random.default_rng(7)
    layouts = []
    for _ in range(40):
        n = int(rng.integers(1, 60))
        x0, y0 = rng.integers(0, 1600, n), rng.integers(0, 2100, n)
        boxes = np.stack([x0, y0, x0 + rng.integers(0, 400, n), y0 + rng.integers(0, 60, n)], 1)
        layouts.append(boxes.astype(int))
    layouts.append(np.array([[0, 0, 0, 0], [5, 5, 3, 9], [0, 10, 40, 12]]))
    return layouts


def test_xycut_projection():
    """The replacement gives the compiled function's projection, array for array, and the
    library's XY-cut the same reading order."""
    import numpy as np
    from unstructured.partition.utils import xycut

    xy_cut.install()
    compiled = patches.library_value(patches.PATCHES["xycut_projection"])
    assert xycut.projection_by_bboxes is not compiled
    for boxes in _layouts():
        for axis in (0, 1):
            ours, theirs = xycut.projection_by_bboxes(boxes=boxes, axis=axis), compiled(boxes, axis)
            assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    negative = np.array([[-3, 0, 5, 4], [2, 1, 9, 8]])  # the library's own Python reads these
    assert np.array_equal(xycut.projection_by_bboxes(negative, 0), compiled.py_func(negative, 0))
    assert_shape_change_found("xycut_projection")


def test_xycut_split():
    """The replacement (the library's Python) splits a profile as the compiled one does, and
    the library's reading order is the same with both."""
    import numpy as np
    from unstructured.partition.utils import xycut

    xy_cut.install()
    compiled = patches.library_value(patches.PATCHES["xycut_split"])
    projection = patches.library_value(patches.PATCHES["xycut_projection"])
    for boxes in _layouts():
        profile = projection(boxes, 0)
        ours, theirs = xycut.split_projection_profile(profile, 0, 1), compiled(profile, 0, 1)
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))
        order: list[int] = []
        xycut.recursive_xy_cut_swapped(boxes, np.arange(len(boxes)), order)
        reference: list[int] = []
        with patches.replaced(
            ("xycut_projection", lambda _: projection), ("xycut_split", lambda _: compiled)
        ):
            xycut.recursive_xy_cut_swapped(boxes, np.arange(len(boxes)), reference)
        assert [int(i) for i in order] == [int(i) for i in reference]
    assert_shape_change_found("xycut_split")


# --- offline, and deep HTML ----------------------------------------------------------------------
def test_spacy_model_name(monkeypatch: pytest.MonkeyPatch):
    """The library tokenizes with the spaCy model from PyPI, set again after a reset."""
    import unstructured.nlp.tokenize as tokenize

    monkeypatch.setattr(tokenize, "_SPACY_MODEL_NAME", "en_core_web_sm")
    configure_unstructured()
    assert tokenize._SPACY_MODEL_NAME == SPACY_MODEL
    assert_shape_change_found("spacy_model_name")


def test_html_parser():
    """HTML nested deeper than libxml2's default 256 levels is read in full."""
    from unstructured.partition.html import partition_html

    html_depth.install()
    texts = [e.text for e in partition_html(text=nested_html(300).decode())]
    assert texts == [
        "Before the deep part.",
        "The deepest paragraph.",
        "After the deep part, paragraph 0.",
    ]
    assert_shape_change_found("html_parser")


def test_html_partitioner_main():
    """HTML nested deeper than the library's walk follows is refused, naming the depth."""
    from unstructured.partition.html import partition_html

    html_depth.install()
    with pytest.raises(DocumentError, match=r"^the HTML is nested 60\d levels deep"):
        partition_html(text=nested_html(600).decode())
    assert_shape_change_found("html_partitioner_main")


def test_every_patch_has_its_test():
    tested = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert set(patches.PATCHES) - tested == set()


_DRAWING_IN_A_FRESH_PROCESS = """
import sys
from ingestflow.stages.partition import configure_unstructured

configure_unstructured()
from PIL import Image
from unstructured_inference.inference import layout
from unstructured_inference.inference.elements import TextRegion

print("matplotlib before drawing:", "matplotlib" in sys.modules)
drawn = layout.draw_bbox(Image.new("RGB", (40, 40), "white"), TextRegion.from_coords(5, 5, 30, 30))
print("drawn:", drawn.size, drawn.getpixel((5, 5)) != (255, 255, 255))
print("matplotlib after drawing:", "matplotlib" in sys.modules)
"""


def test_the_layout_package_draws_with_matplotlib_loaded_only_when_it_draws() -> None:
    # a fresh process (this one may hold the real module): matplotlib's pyplot (~0.5 s) is left
    # out until the library's drawing aid is called, and then it draws as before
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _DRAWING_IN_A_FRESH_PROCESS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "matplotlib before drawing: False" in out.stdout
    assert "drawn: (40, 40) True" in out.stdout
    assert "matplotlib after drawing: True" in out.stdout


def test_the_stand_in_covers_every_name_the_library_imports_from_the_drawing_module() -> None:
    import re
    import sys

    site = Path(inspect.getfile(patches.importlib.import_module("unstructured_inference"))).parent
    imported: set[str] = set()
    for root in (site, site.parent / "unstructured"):
        for source in root.rglob("*.py"):
            text = source.read_text(encoding="utf-8")
            pattern = r"from unstructured_inference\.visualize import (\([^)]*\)|[^\n]+)"
            for names in re.findall(pattern, text):
                imported |= {n.strip() for n in names.strip("()").split(",") if n.strip()}
    assert imported == set(patches.DRAWING_NAMES)
    stand_in = sys.modules.get(patches.DRAWING)
    real = patches.importlib.import_module(patches.DRAWING)  # the real one from here on
    for name in patches.DRAWING_NAMES:
        assert callable(getattr(real, name)), name
    assert stand_in is None or stand_in is real or set(patches.DRAWING_NAMES) <= set(vars(stand_in))
