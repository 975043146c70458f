"""The workflow DAG (Source -> nodes -> Destination) and the service's allowed node orderings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ingestflow.spec.problems import Problem

if TYPE_CHECKING:
    import networkx as nx

SOURCE = "Source"
DESTINATION = "Destination"
ALLOWED_ORDERINGS = (
    "Partitioner",
    "Partitioner → Chunker",
    "Partitioner → Chunker → Embedder",
    "Partitioner → Enrichment(s) → Chunker",
    "Partitioner → Enrichment(s) → Chunker → Embedder",
)
_LABEL = {
    "partition": "Partitioner",
    "prompter": "Enrichment",
    "chunk": "Chunker",
    "embed": "Embedder",
}


class NodeLike(Protocol):
    """What the graph needs of a node: its position, path and type."""

    index: int

    @property
    def path(self) -> str: ...

    @property
    def type(self) -> str: ...


def build_dag(nodes: Sequence[NodeLike]) -> nx.DiGraph:
    """The DAG of a workflow: SPEC.md rule 6, the order of workflow_nodes is the DAG order."""
    import networkx as nx  # here: a run's workers, which import this module, never build one

    graph = nx.DiGraph()
    chain = [SOURCE, *(node.path for node in nodes), DESTINATION]
    graph.add_node(SOURCE, type="source")
    graph.add_node(DESTINATION, type="destination")
    for node in nodes:
        graph.add_node(node.path, type=node.type, index=node.index)
    nx.add_path(graph, chain)
    return graph


def execution_order(graph: nx.DiGraph) -> list[str]:
    """The workflow nodes in the order they run (Source and Destination left out)."""
    import networkx as nx

    return [n for n in nx.topological_sort(graph) if n not in (SOURCE, DESTINATION)]


def ordering_problems(nodes: Sequence[NodeLike]) -> list[Problem]:
    """Problems with where the nodes sit, against the service's allowed orderings."""
    if not nodes:
        return []
    graph = build_dag(nodes)
    by_path = {node.path: node for node in nodes}
    ordered = [by_path[p] for p in execution_order(graph)]
    problems: list[Problem] = []
    allowed = list(ALLOWED_ORDERINGS)
    found = " → ".join(_LABEL.get(n.type, n.type) for n in ordered)

    def add(node: NodeLike, message: str, hint: str) -> None:
        problems.append(
            Problem(f"{node.path}.type", message, found=found, allowed=allowed, hint=hint)
        )

    if ordered[0].type != "partition":
        add(
            ordered[0],
            "the first node must be a partitioner",
            "put a `partition` node first: it turns documents into elements",
        )
    seen: dict[str, NodeLike] = {}
    for node in ordered:
        earlier = seen.get(node.type)
        if earlier is not None and node.type != "prompter":
            add(
                node,
                f"a workflow has at most one {_LABEL[node.type].lower()} node "
                f"(another is at {earlier.path})",
                "remove one of them",
            )
        if node.type == "prompter" and "chunk" in seen:
            add(
                node,
                "enrichment after a chunker: chunker nodes belong after all enrichment "
                'nodes, or their results may be incomplete or absent (README, "Workflow rules")',
                "move the chunker after the last enrichment",
            )
        if node.type == "prompter" and "embed" in seen:
            add(node, "enrichment after the embedder", "enrichments come before the chunker")
        if node.type == "partition" and node is not ordered[0] and earlier is None:
            add(node, "the partitioner must be the first node", "move it to the front")
        if node.type == "chunk" and "embed" in seen:
            add(node, "a chunker after the embedder", "the embedder comes last")
        if node.type == "embed" and "chunk" not in seen:
            add(node, "an embedder must follow a chunker", "add a `chunk` node before the embedder")
        seen.setdefault(node.type, node)
    last_prompter = next((n for n in reversed(ordered) if n.type == "prompter"), None)
    if last_prompter is not None and "chunk" not in seen:
        add(
            last_prompter,
            "enrichment nodes must be followed by a chunker (chunker after every enrichment)",
            "add a `chunk` node after the last enrichment",
        )
    return problems
