"""A region read as a table, with the figures that judge whether it is one (`finding`) and
that `promotion` keeps."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingestflow.stages.partition.hires.tables.parts import Cell, Word


@dataclass
class Reading:
    """A region read as a table: its cells, its HTML and the figures `plausible` judges."""

    cells: list[Cell]
    html: str
    rows: int
    cols: int
    score: float
    filled: float
    multi_rows: float
    words_in: float
    gapped: float
    box: tuple[float, float, float, float]  # the cells' extent, in crop pixels
    #: The region's words when they read as running text (no table then), in page pixels.
    running_text: list[Word] = field(default_factory=list)

    def features(self) -> dict[str, float]:
        """The figures, rounded (for the benchmark's report)."""
        return {
            "rows": self.rows,
            "cols": self.cols,
            "score": round(self.score, 3),
            "filled": round(self.filled, 3),
            "multi_rows": round(self.multi_rows, 3),
            "words_in": round(self.words_in, 3),
            "gapped": round(self.gapped, 3),
        }
