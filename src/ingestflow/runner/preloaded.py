"""Imported by a run's fork server before it forks the workers (see `preload`): the document
library, its spaCy model (unless the run reads only pages under High Res), the partitioners of
the run's file types, ONNX Runtime, the stages and (High Res, Auto) the High Res stack, loaded
once for all workers. What this cannot load (a broken install) is left to the workers, which
load what they need themselves and say what went wrong."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
from collections.abc import Iterable
from typing import Any

from ingestflow.patches import imports
from ingestflow.runner.preload import PRELOAD_ENV

# Ctrl-C belongs to the main process (which stops the run cleanly); the standard library makes
# the server ignore it only once this module is loaded, and the workers inherit it ignored.
signal.signal(signal.SIGINT, signal.SIG_IGN)


def load(wanted: dict[str, Any]) -> None:
    """Import what a worker of the run imports before its first document."""
    if wanted.get("threads"):
        # before numpy loads: a forked worker keeps the thread pools its server started with
        os.environ.setdefault("OMP_NUM_THREADS", str(wanted["threads"]))
    if wanted.get("block_torch"):
        # as in a worker of such a plan: spaCy's thinc imports torch when it can
        imports.block("torch")
    from ingestflow.offline import quiet_libraries
    from ingestflow.stages.partition import configure_unstructured

    quiet_libraries()
    configure_unstructured()
    from unstructured.nlp.tokenize import _get_nlp
    from unstructured.partition.auto import partition  # noqa: F401

    import ingestflow.runner.worker
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


# never stop the server: the workers load what they need themselves
with contextlib.suppress(Exception):
    load(json.loads(os.environ.get(PRELOAD_ENV) or "{}"))
# What was loaded is never collected: out of the collector's reach, a worker's collections
# neither walk it nor write to its pages (which the workers share with the server until then).
gc.freeze()
