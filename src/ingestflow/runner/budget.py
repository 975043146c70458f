"""A long document's time in its first node when its page ranges run on several workers: one
`--doc-timeout` for all of its ranges together, as when one worker reads it whole."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DocBudget:
    """Seconds a document split into ranges may still spend in the node (`limit` None: no
    limit). Each range is handed what the ranges finished before it left; the ranges' own
    seconds are charged as they finish."""

    limit: float | None
    what: str = ""  # the node and the document, as messages name them ("Partitioner: a.pdf")
    unit: str = "pages"  # what the ranges count
    spent: float = 0.0

    def charge(self, seconds: float) -> None:
        """Count a finished range's seconds."""
        self.spent += seconds

    def remaining(self) -> float | None:
        """Seconds left for the next range (0 once spent), or None without a limit."""
        if self.limit is None:
            return None
        return max(0.0, self.limit - self.spent)

    def exceeded(self) -> bool:
        """True when the finished ranges together took longer than the limit."""
        return self.limit is not None and self.spent > self.limit

    def over(self) -> str:
        """Why the document failed once its ranges together ran out of time ("" without a
        limit: nothing to say)."""
        if self.limit is None:
            return ""
        unit = {"pages": "page", "lines": "line"}.get(self.unit, self.unit)
        return (
            f"{self.what} took longer than {self.limit:g} s, its {unit} ranges together, and was "
            "stopped (--doc-timeout; raise it to give long documents more time)"
        )
