"""The DAG built with networkx, and the allowed orderings."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import networkx as nx

from ingestflow.spec.graph import DESTINATION, SOURCE, build_dag, execution_order, ordering_problems


@dataclass
class Node:
    index: int
    type: str

    @property
    def path(self) -> str:
        return f"workflow_nodes[{self.index}]"


def chain(*types: str) -> list[Node]:
    return [Node(i, t) for i, t in enumerate(types)]


def test_dag_runs_source_to_destination() -> None:
    nodes = chain("partition", "chunk", "embed")
    graph = build_dag(nodes)
    assert nx.is_directed_acyclic_graph(graph)
    assert next(iter(nx.topological_sort(graph))) == SOURCE
    assert list(nx.topological_sort(graph))[-1] == DESTINATION
    assert execution_order(graph) == [n.path for n in nodes]


def test_exactly_the_allowed_orderings_pass() -> None:
    # Partitioner; P → Chunker; P → C → Embedder; P → Enrichment(s) → C; P → E(s) → C → Embedder
    allowed = re.compile(r"^P(R*CE?)?$")
    letters = {"partition": "P", "prompter": "R", "chunk": "C", "embed": "E"}
    types = tuple(letters)
    for length in range(1, 6):
        for combo in itertools.product(types, repeat=length):
            ok = not ordering_problems(chain(*combo))
            assert ok == bool(allowed.match("".join(letters[t] for t in combo))), combo
