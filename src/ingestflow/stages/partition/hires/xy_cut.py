"""The library's XY-cut reading order, without numba's compiler.

unstructured orders the regions of a High Res page (and the elements of a PDF page) by a
recursive XY-cut. Its two inner functions are numba `@njit` functions. The first call in a
process starts numba's compiler: its typing and target contexts and cffi's parser, then the
two functions are compiled or loaded from numba's cache. That costs ~0.3–0.5 CPU s in every
worker, on its first page, which is on the run's critical path (benchmarks/RESULTS.md, "High Res
speed: no compiler at the first page"). The functions themselves take microseconds.

`install()` replaces them once per process, through `patches.unstructured`, by code that
computes the same arrays:
- `projection_by_bboxes` (for each pixel of an axis, how many boxes cover it): a running sum of
  +1 at each box's start and -1 at its end, in numpy;
- `split_projection_profile`: the library's own Python (the `py_func` numba compiles), which is
  numpy calls and two short loops.
"""

from __future__ import annotations

from typing import Any

from ingestflow.patches import unstructured as unstructured_patches

#: The patched names in `patches.unstructured.PATCHES`.
PATCHED = ("xycut_projection", "xycut_split")


def install() -> None:
    """Replace the two compiled functions for the rest of the process (idempotent)."""
    unstructured_patches.installed("xycut_projection", projection_of)
    unstructured_patches.installed("xycut_split", _python)


def projection_of(original: Any) -> Any:
    """`projection_by_bboxes` as numpy, for boxes of non-negative integers (the library's own
    Python for anything else: its numba code indexes from the end for a negative one)."""
    import numpy as np

    fallback = _python(original)

    def projection_by_bboxes(boxes: Any, axis: int) -> Any:
        assert axis in [0, 1]  # as the library asserts
        starts, ends = boxes[:, axis], boxes[:, axis + 2]
        if boxes.dtype.kind not in "iu" or (starts < 0).any() or (ends < 0).any():
            return fallback(boxes, axis)
        length = int(np.max(boxes[:, axis::2]))
        steps = np.zeros(length + 1, dtype=np.int64)
        covering = ends > starts  # an empty or inverted box covers no pixel
        np.add.at(steps, starts[covering], 1)
        np.add.at(steps, ends[covering], -1)
        return np.cumsum(steps[:length], dtype=np.int64)

    return projection_by_bboxes


def _python(original: Any) -> Any:
    """The Python function a numba dispatcher compiles (the function itself otherwise)."""
    return getattr(original, "py_func", original)
