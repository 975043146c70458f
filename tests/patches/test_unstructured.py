"""The patches of `unstructured` (`patches/unstructured.py`): each replaced attribute is
replaced while it should be and does what it is there for, and the checker finds a version out
of range and an attribute whose shape changed (tried on fakes: it takes any target)."""

from __future__ import annotations

import base64
import functools
import importlib
import inspect
import io
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ingestflow.errors import DocumentError, EnvironmentProblem
from ingestflow.offline import SPACY_MODEL
from ingestflow.patches import guard, imports
from ingestflow.patches import unstructured as patches
from ingestflow.stages.partition import (
    configure_unstructured,
    hires,
    html_depth,
    nlp_batch,
    text_narrative,
)
from ingestflow.stages.partition.hires import orientation, xy_cut
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
    guard.versions_checked.cache_clear()  # checked once per process: check again
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
        guard.versions_checked.cache_clear()


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


def test_save_elements(tmp_path: Path):
    """A block on page 2 of a multi-page image is cropped from page 2's frame (the library's
    own crops from the file as one page: IndexError)."""
    import unstructured.partition.pdf_image.pdf_image_utils as image_utils
    from PIL import Image
    from unstructured.documents.coordinates import PixelSpace
    from unstructured.documents.elements import CoordinatesMetadata, ElementMetadata
    from unstructured.documents.elements import Image as ImageElement

    path = tmp_path / "two.tiff"
    Image.new("L", (200, 100), 255).save(
        path, save_all=True, append_images=[Image.new("L", (80, 80))]
    )
    box = ((10, 10), (10, 50), (50, 50), (50, 10))
    elements = [
        ImageElement(
            "figure",
            metadata=ElementMetadata(
                page_number=page,
                coordinates=CoordinatesMetadata(box, PixelSpace(100, 100)),
            ),
        )
        for page in (3, 4)  # the file's pages 1 and 2, numbered from 3
    ]
    kwargs: dict[str, Any] = {"filename": str(path), "is_image": True}
    kwargs["extract_image_block_to_payload"] = True
    with pytest.raises(IndexError, match="list index out of range"):
        image_utils.save_elements(elements, 3, "Image", 200, **kwargs)
    with hires.hooks(path, True, False, ["eng"]):
        image_utils.save_elements(elements, 3, "Image", 200, **kwargs)
    crops = [
        Image.open(io.BytesIO(base64.b64decode(e.metadata.image_base64))).convert("L")
        for e in elements
    ]
    assert [crop.getextrema() for crop in crops] == [(255, 255), (0, 0)]  # white, then black
    assert_shape_change_found("save_elements")


def test_process_file_with_pdfminer(tmp_path: Path):
    """A page shown upside down by /Rotate 180, which the library turns back, has its text
    layer read as stored: with the spaces between its words, its boxes where they were."""
    import unstructured.partition.pdf_image.pdfminer_processing as processing

    from tests.stages.test_orientation import gapped_pdf

    path = gapped_pdf(tmp_path / "turned.pdf", ["Tide tables for the northern harbour"], 180)

    def read() -> tuple[list[str], Any]:
        (layout,), _ = processing.process_file_with_pdfminer(
            filename=str(path), dpi=72, rotation_corrections=[180]
        )
        return [t for t in layout.texts if t.strip()], layout.element_coords

    texts, boxes = read()
    assert "Tide tables for the northern harbour" not in " ".join(texts)  # the library's
    with hires.hooks(path, False, False, ["eng"]):
        upright, upright_boxes = read()
    assert " ".join(upright).strip() == "Tide tables for the northern harbour"
    assert abs(upright_boxes[0][0] - boxes[:, 0].min()) < 5  # same place on the page
    assert abs(upright_boxes[0][1] - boxes[:, 1].min()) < 5
    assert_shape_change_found("process_file_with_pdfminer")


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


def test_is_possible_narrative_text():
    """While a text's paragraphs are prefetched, the library's narrative check answers at once
    for those found narrative by an early verb, and asks the library for the others."""
    from unstructured.partition import text

    texts = ["The keeper lit the lamp at dusk.", "THE HARBOUR", "Lamps, ships and keepers"]
    with text_narrative.prefetched(texts):
        assert text.is_possible_narrative_text(texts[0])
        assert not text.is_possible_narrative_text(texts[1])  # the library's answer
        assert not text.is_possible_narrative_text(texts[2])  # no verb: the library's answer
    assert text.is_possible_narrative_text(texts[0])  # the library's again
    assert_shape_change_found("is_possible_narrative_text")


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


def _compiled(name: str) -> Any:
    """The library's function behind patch `name`, compiled by numba as the library compiles it
    (the XY-cut module is imported without numba: `patches.unstructured.xycut_without_numba`)."""
    import numba

    original = patches.library_value(patches.PATCHES[name])
    return original if hasattr(original, "py_func") else numba.njit(original)


def test_xycut_projection():
    """The replacement gives the compiled function's projection, array for array, and the
    library's XY-cut the same reading order."""
    import numpy as np
    from unstructured.partition.utils import xycut

    xy_cut.install()
    compiled = _compiled("xycut_projection")
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
    compiled = _compiled("xycut_split")
    projection = _compiled("xycut_projection")
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


def _in_a_fresh_process(script: str) -> str:
    """What `script` prints, run by a fresh interpreter (this process may hold the real
    modules); fails with its error when it fails."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


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


@pytest.mark.slow
def test_the_layout_package_draws_with_matplotlib_loaded_only_when_it_draws() -> None:
    # a fresh process (this one may hold the real module): matplotlib's pyplot (~0.5 s) is left
    # out until the library's drawing aid is called, and then it draws as before
    out = _in_a_fresh_process(_DRAWING_IN_A_FRESH_PROCESS)
    assert "matplotlib before drawing: False" in out
    assert "drawn: (40, 40) True" in out
    assert "matplotlib after drawing: True" in out


@pytest.mark.parametrize("module", sorted(patches.LAZY))
def test_each_stand_in_covers_every_name_the_library_imports_from_its_module(module: str) -> None:
    import re
    import sys

    site = Path(inspect.getfile(importlib.import_module("unstructured_inference"))).parent
    imported: set[str] = set()
    pattern = rf"from {re.escape(module)} import (\([^)]*\)|[^\n]+)"
    for root in (site, site.parent / "unstructured"):
        for source in root.rglob("*.py"):
            for names in re.findall(pattern, source.read_text(encoding="utf-8")):
                imported |= {n.strip() for n in names.strip("()").split(",") if n.strip()}
    assert imported == set(patches.LAZY[module])  # spaCy: only `import spacy`, `spacy.load`
    stand_in = sys.modules.get(module)
    real = importlib.import_module(module)  # the real one from here on
    for name in patches.LAZY[module]:
        assert callable(getattr(real, name)), name
    assert stand_in is None or stand_in is real or set(patches.LAZY[module]) <= set(vars(stand_in))


_LAZY_IN_A_FRESH_PROCESS = """
import sys
from ingestflow.patches import unstructured as patches
from ingestflow.stages.partition import configure_unstructured


def stand_ins():
    return sorted(
        name
        for name in patches.LAZY
        if (getattr(sys.modules.get(name), "__doc__", None) or "").startswith("imported at first")
    )


configure_unstructured()
import unstructured.partition.pdf, unstructured_inference.inference.layout  # what High Res reads
from unstructured.nlp.tokenize import _get_nlp
print("stand-ins:", stand_ins(), "numba:", "numba" in sys.modules)
import spacy.tokens  # a submodule: the real package first
print("after a submodule:", stand_ins(), spacy.tokens.Doc.__name__)
print("tokens:", [t.text for t in _get_nlp()("Two words.")])
from unstructured.partition.utils import xycut
import numba  # the real package, imported later
original = patches.library_value(patches.PATCHES["xycut_projection"])
print("xycut:", hasattr(original, "py_func"), numba.njit(original).py_func is original)
"""


@pytest.mark.slow
def test_the_lazy_modules_stand_in_until_used_then_the_real_ones_answer() -> None:
    # a fresh process (this one has imported them): after the reading modules are imported,
    # spaCy, the analysis drawings and the drawing aid are stand-ins and numba is absent; a
    # submodule's import brings the real spaCy, which the library's tokenizer then uses; the
    # XY-cut functions are the library's Python, and a later `import numba` is the real one
    out = _in_a_fresh_process(_LAZY_IN_A_FRESH_PROCESS)
    assert f"stand-ins: {sorted(patches.LAZY)} numba: False" in out
    left = sorted(set(patches.LAZY) - {patches.SPACY})
    assert f"after a submodule: {left} Doc" in out
    assert "tokens: ['Two', 'words', '.']" in out
    assert "xycut: False True" in out


def test_a_stand_in_imports_its_module_once_at_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import threading

    (tmp_path / "lazy_probe.py").write_text(
        "import time\nfrom pathlib import Path\n"
        "_count = Path(__file__).with_name('count')\n"
        "_count.write_text(str(int(_count.read_text()) + 1) if _count.exists() else '1')\n"
        "time.sleep(0.2)  # a slow import: two threads meet in it\n"
        "def twice(x):\n    return 2 * x\n"
        "VALUE = 7\n"
    )
    package = tmp_path / "lazy_package"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("READY = True\n")
    (package / "inner" / "__init__.py").write_text("from lazy_package import READY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("lazy_probe", "lazy_package", "lazy_package.inner"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    imports.stand_in("lazy_probe", ("twice",))
    from lazy_probe import twice  # bound up front: nothing imported yet

    assert not (tmp_path / "count").exists()
    answers: list[int] = []
    threads = [threading.Thread(target=lambda: answers.append(twice(21))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [42, 42]
    assert (tmp_path / "count").read_text() == "1"  # imported once, by the first use
    assert sys.modules["lazy_probe"].VALUE == 7  # the real module now
    imports.stand_in("lazy_package")
    assert (sys.modules["lazy_package"].__doc__ or "").startswith("imported at first use")
    import lazy_package.inner  # a submodule: the package's own code runs first

    assert lazy_package.inner.READY and sys.modules["lazy_package"].READY
    imports.stand_in("lazy_probe_absent", ())  # not installed: left to the import that needs it
    assert "lazy_probe_absent" not in sys.modules


def test_xycut_order():
    """Under High Res's hooks the library's XY-cut reads columns whole (tests/stages/
    test_page_reading.py shows the orders); the checker sees a changed signature."""
    assert_shape_change_found("xycut_order")
