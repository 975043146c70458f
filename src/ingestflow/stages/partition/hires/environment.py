"""What High Res needs on the machine (the layout and orientation models, tesseract and its
languages, the table model), checked before a run and loaded once per process."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

from ingestflow.errors import EnvironmentProblem
from ingestflow.stages.partition.hires import layout_model, ocr, orientation
from ingestflow.stages.partition.hires.tables import model as table_model

#: Languages whose tesseract data the set-up script installs (docs/hi_res.md).
INSTALLED_BY_SETUP = ("eng", "kor")


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
    codes = tesseract_codes(languages)  # each a language tesseract knows (spec.settings)
    try:
        engines = {ocr.engine_for(codes, use) for use in ocr.USES}
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(f"partition node {node!r}: High Res: {exc}") from None
    problem = ocr.available() if ocr.RAPIDOCR in engines else None
    if problem:
        raise EnvironmentProblem(f"partition node {node!r}: High Res: {problem}")
    installed = tesseract_languages()
    missing = [code for code in codes if code not in installed] if ocr.TESSERACT in engines else []
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


def load_ocr(languages: list[str]) -> None:
    """Load the OCR model these languages read whole pages with now (once per process), not on
    the first page. PP-OCRv6 for table cells alone is loaded by the first table that needs OCR
    (`ocr.get_engine`): a worker that reads only text-layer PDFs never needs it (~0.2 CPU s and
    ~0.2 s before its first page; benchmarks/RESULTS.md, "High Res speed")."""
    ocr.load(tesseract_codes(languages), tables=False)


def load_table_model() -> None:
    """Load the table-structure model now (once per process) when the builder uses it."""
    if table_model.structure_mode() != "rules":
        table_model.get_model()
