"""What a table is built from and of: the words of its region, each with its box, and the cells
of its grid."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Word:
    """One word and its box, in pixels of the table's own image (origin top left)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


@dataclass
class Cell:
    """A cell of the grid: its row, first column, span and text."""

    row: int
    col: int
    rowspan: int = 1
    colspan: int = 1
    text: str = ""
