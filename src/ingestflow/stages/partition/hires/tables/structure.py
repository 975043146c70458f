"""A table-structure model's reading of one crop: cells on a grid, with spans and boxes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ModelCell:
    """One cell the model read: grid position, spans, header or not, box in crop pixels."""

    row: int
    col: int
    rowspan: int
    colspan: int
    header: bool
    box: tuple[float, float, float, float] | None  # None: the model gave no geometry


@dataclass
class Structure:
    """The model's reading of one table crop."""

    cells: list[ModelCell]
    score: float  # mean probability of the tokens kept

    @property
    def rows(self) -> int:
        return max((c.row + c.rowspan for c in self.cells), default=0)

    @property
    def cols(self) -> int:
        return max((c.col + c.colspan for c in self.cells), default=0)
