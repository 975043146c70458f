"""A workflow node as the rules see it (`rules`, `node_rules`), and what a rule is."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from ingestflow.spec import settings as s
from ingestflow.spec.catalog import ENRICHMENT_SUBTYPES
from ingestflow.spec.models import WorkflowCreate, WorkflowNode
from ingestflow.spec.problems import Problem
from ingestflow.spec.registry import NodeKind


@dataclass
class ParsedNode:
    """A workflow node with its registry kind and its parsed settings (None when they failed)."""

    index: int
    node: WorkflowNode
    kind: NodeKind | None
    settings: s.Settings | None

    @property
    def path(self) -> str:
        """JSON path of the node inside the workflow."""
        return f"workflow_nodes[{self.index}]"

    @property
    def type(self) -> str:
        """The node type (`partition`, `prompter`, `chunk`, `embed`)."""
        return self.node.type

    @property
    def subtype(self) -> str:
        """The canonical subtype."""
        return self.node.subtype

    @property
    def task(self) -> str | None:
        """For a prompter node, its enrichment task (`ner`, `ocr`, ...)."""
        return ENRICHMENT_SUBTYPES.get(self.subtype) if self.type == "prompter" else None


@dataclass(frozen=True)
class RuleContext:
    """Inputs a rule may depend on besides the workflow: the date decides model retirement."""

    today: date


Rule = Callable[[WorkflowCreate, Sequence[ParsedNode], RuleContext], Iterable[Problem]]


def first_node(nodes: Sequence[ParsedNode], type_: str) -> ParsedNode | None:
    """The first node of type `type_`, or None."""
    return next((n for n in nodes if n.type == type_), None)
