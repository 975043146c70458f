"""Where a page's ink is: the inked area the orientation model sees when the middle of the page
leaves it unsure (`orientation.classify`)."""

from __future__ import annotations

from typing import Any

#: Grey level (0-255) under which a pixel is ink.
INK_LEVEL = 128
#: Margin kept around the inked area, a share of the page's longer side.
INK_MARGIN = 0.02


def inked_square(image: Any) -> Any:
    """The page's inked area (with a small margin) centred on a white square, 224×224 BGR, at
    about the scale of a whole page; None for a page without ink."""
    import cv2
    import numpy as np

    gray = np.asarray(image.convert("L"))
    ys, xs = np.nonzero(gray < INK_LEVEL)
    if len(xs) == 0:
        return None
    margin = round(INK_MARGIN * max(gray.shape))
    x0, x1 = max(0, xs.min() - margin), min(gray.shape[1], xs.max() + margin + 1)
    y0, y1 = max(0, ys.min() - margin), min(gray.shape[0], ys.max() + margin + 1)
    bgr = np.asarray(image.convert("RGB"))[y0:y1, x0:x1, ::-1]
    side = max(bgr.shape[:2])
    square = np.full((side, side, 3), 255, np.uint8)
    top, left = (side - bgr.shape[0]) // 2, (side - bgr.shape[1]) // 2
    square[top : top + bgr.shape[0], left : left + bgr.shape[1]] = bgr
    return cv2.resize(square, (224, 224), interpolation=cv2.INTER_AREA)
