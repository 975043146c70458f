"""What the enrichment nodes of a job acted on: a node that found nothing to act on in any
document says so in the job's message, never a silent no-op."""

from __future__ import annotations

from collections.abc import Iterable

from ingestflow.elements import Document
from ingestflow.stages.base import ACTED_ON, Stage


class EnrichmentTally:
    """Per enrichment node, the documents it finished and the elements it acted on in them,
    summed from each document's `stats` (set by the node, in whatever worker ran it)."""

    def __init__(self, stages: Iterable[Stage]) -> None:
        self._key = ACTED_ON
        self._nodes = {s.name: s for s in stages if s.tallies_acted_on}
        self.documents = dict.fromkeys(self._nodes, 0)
        self.acted_on = dict.fromkeys(self._nodes, 0)

    def add(self, doc: Document) -> None:
        """Count a document that went through the whole workflow."""
        for name, count in (doc.stats.get(self._key) or {}).items():
            if name in self._nodes:
                self.documents[name] += 1
                self.acted_on[name] += int(count)

    def notes(self) -> list[str]:
        """One line per enrichment node that received documents and acted on none of their
        elements (so sent no request and changed nothing)."""
        out = []
        for name, stage in self._nodes.items():
            documents = self.documents[name]
            if documents and not self.acted_on[name]:
                task = stage.what_it_does()
                out.append(
                    f"enrichment node {name!r} ({task}) found nothing to act on: no "
                    f"{stage.what_it_reads()} in the {documents} document(s) it received, so it "
                    "changed nothing"
                )
        return out
