"""What a worker of a Fast, High Res or Auto run imports before its first document, imported
once by the run's fork server instead (`runner.preload`, `runner.preloaded`): the document
library, its spaCy model (unless the run reads only pages under High Res), the partitioners of
the run's file types, ONNX Runtime and the embedding stage (with an embedder), and (High Res,
Auto) the High Res stack. The strategies name `load` as what they preload
(`spec.strategies.Strategy.preload`)."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterable
from typing import Any


def load(wanted: dict[str, Any]) -> None:
    """Import what a worker of the run imports before its first document (`wanted`: the run's
    preload spec, `runner.preload.spec`)."""
    from ingestflow.stages.partition import configure_unstructured

    configure_unstructured()
    from unstructured.nlp.tokenize import _get_nlp
    from unstructured.partition.auto import partition  # noqa: F401

    import ingestflow.stages.chunk
    import ingestflow.stages.partition

    if wanted.get("nlp", True):  # not for High Res over PDFs and images alone (`preload`)
        _get_nlp()
    if wanted.get("onnx"):
        with contextlib.suppress(Exception):
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401

            import ingestflow.stages.embed
            import ingestflow.stages.minilm_onnx  # noqa: F401
    hi_res = bool(wanted.get("hi_res"))
    if hi_res:
        with contextlib.suppress(Exception):
            # rapidocr: where pages may be scans, or where it reads every page
            load_hi_res(ocr=_rapidocr_asked() or not _pdfs_alone(wanted.get("suffixes") or ()))
    # each element's `to_dict` imports the serialiser; then the run's types, each on its own (a
    # missing extra: the worker that meets the type says what is wrong)
    optional = ["unstructured.staging.base"]
    with contextlib.suppress(Exception):
        optional += partitioners(wanted.get("suffixes") or (), images=hi_res)
    for module in optional:
        with contextlib.suppress(Exception):
            importlib.import_module(module)


def load_hi_res(ocr: bool = True) -> None:
    """Import what a High Res (or Auto) worker imports before its first page: every library
    module ingestflow patches (the PDF and image partitioners, the layout inference package),
    ONNX Runtime, OpenCV, rapidocr (with `ocr`) and the stages. No model is loaded: sessions
    are each worker's own."""
    from ingestflow.patches import unstructured as unstructured_patches

    unstructured_patches.check()  # imports each patched module; checked once for all workers
    for module in (
        "onnxruntime",
        "cv2",
        "rapid_layout",
        "unstructured_inference.models.base",
        "unstructured_inference.models.unstructuredmodel",
        "unstructured_pytesseract",
        "ingestflow.stages.partition.hires",
        "ingestflow.stages.partition.hires.hooks",
        "ingestflow.stages.partition.auto",
        "ingestflow.stages.partition.hires.tables.finding",
        "ingestflow.stages.partition.hires.tables.model",
        "ingestflow.stages.partition.hires.tables.promotion",
        "ingestflow.stages.partition.hires.tables.merge",
    ):
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    # rapidocr's import reads its model catalogue (~0.5 s): only where pages are likely scans
    # (images); a worker that meets a scanned PDF's table imports it at its first use
    if ocr:
        with contextlib.suppress(Exception):
            from ingestflow.stages.partition.hires import ocr as engines

            engines.import_rapidocr()  # its pipeline (`rapidocr` alone imports it lazily)


def _rapidocr_asked() -> bool:
    """True when the OCR engine choice (`stages.ocr.mode`) is rapidocr for every page (an
    unknown choice: False here, the workers say what is wrong)."""
    from ingestflow.stages.partition.hires import ocr

    try:
        return ocr.mode() == "rapidocr"
    except Exception:
        return False


def _pdfs_alone(suffixes: Iterable[str]) -> bool:
    """True when the run's files are known to be PDFs alone."""
    found = {s.lower() for s in suffixes}
    return bool(found) and found == {".pdf"}


def partitioners(suffixes: Iterable[str], images: bool = False) -> list[str]:
    """The library's partitioner modules of the file types these extensions name (not audio,
    and images only with `images`: Fast does not read them, High Res and Auto do)."""
    from unstructured.file_utils.model import FileType

    modules = set()
    skipped = ("audio",) if images else ("image", "audio")
    for suffix in suffixes:
        file_type = FileType.from_extension(suffix.lower())
        if file_type is None or file_type.partitioner_shortname in skipped:
            continue
        if file_type.is_partitionable:
            modules.add(file_type.partitioner_module_qname)
    return sorted(modules)
