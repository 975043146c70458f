"""A Plan: a validated workflow turned into ordered, instantiable stages."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any

from ingestflow.errors import WorkflowInvalid
from ingestflow.spec import settings as s
from ingestflow.spec.catalog import ENRICHMENT_SUBTYPES, catalog
from ingestflow.spec.models import WorkflowCreate
from ingestflow.spec.problems import Problem
from ingestflow.spec.registry import NodeKind, stage_class
from ingestflow.spec.rules import node_key
from ingestflow.spec.validate import CheckedWorkflow, check_runnable
from ingestflow.stages.base import NodeInputs, RunContext, RuntimeOptions, Stage

if TYPE_CHECKING:
    from ingestflow.providers.config import Endpoint


@dataclass(frozen=True)
class PlannedNode:
    """One node of the plan, in execution order."""

    id: str
    name: str
    type: str
    subtype: str
    settings: s.Settings
    kind: NodeKind
    #: What flows into it from the other nodes (worked out by `plan_from_checked`).
    inputs: NodeInputs = field(default_factory=NodeInputs)


@dataclass(frozen=True)
class Plan:
    """What a run executes: the workflow, its nodes in order, and the run context."""

    workflow: WorkflowCreate
    nodes: tuple[PlannedNode, ...]
    context: RunContext
    warnings: tuple[str, ...] = ()

    @property
    def embed_dimension(self) -> int | None:
        """The embedder's vector dimension, or None without an embedder."""
        for node in self.nodes:
            if isinstance(node.settings, s.EmbedSettings):
                model = catalog().embed_model(node.subtype, node.settings.model_name)
                return model.dimension if model else None
        return None

    def settings_hash(self, destination: str = "") -> str:
        """A fingerprint of every node's settings and the destination: a change re-processes."""
        payload = [(n.type, n.subtype, n.settings.model_dump(mode="json")) for n in self.nodes]
        blob = json.dumps([payload, destination], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def stages(self) -> list[Stage]:
        """Instantiate every stage (cheap: nothing heavy is loaded until `open()`)."""
        return [
            stage_class(n.kind, n.settings)(n.name, n.subtype, n.settings, self.context, n.inputs)
            for n in self.nodes
        ]


def build_plan(
    data: Any,
    today: date | None = None,
    endpoints: dict[str, Endpoint] | None = None,
    options: RuntimeOptions | None = None,
) -> Plan:
    """Check a workflow body (`spec.validate.check_runnable`: a template expanded) and build its
    Plan; WorkflowInvalid if not. A front end that has checked the body already builds the plan
    from that (`plan_from_checked`) instead of checking it again."""
    checked = check_runnable(data, today=today)
    if not checked.valid:
        raise WorkflowInvalid(checked.problems, what=checked.what)
    if endpoints is None:
        from ingestflow.providers.config import endpoints_from_env

        endpoints = endpoints_from_env()
    return plan_from_checked(checked, endpoints, options)


def plan_from_checked(
    checked: CheckedWorkflow,
    endpoints: dict[str, Endpoint] | None = None,
    options: RuntimeOptions | None = None,
) -> Plan:
    """The Plan of an already validated workflow."""
    assert checked.workflow is not None and checked.valid
    nodes: list[PlannedNode] = []
    for parsed in checked.nodes:
        assert parsed.kind is not None and parsed.settings is not None
        node_id = node_key(parsed.node)
        nodes.append(
            PlannedNode(
                node_id, parsed.node.name, parsed.type, parsed.subtype, parsed.settings, parsed.kind
            )
        )
    if not nodes:
        raise WorkflowInvalid([Problem("workflow_nodes", "the workflow has no nodes to run")])
    from ingestflow.providers.config import context_provider, endpoints_from_env

    first = nodes[0].settings
    context = RunContext(
        unique_element_ids=getattr(first, "unique_element_ids", True),
        endpoints=dict(endpoints_from_env() if endpoints is None else endpoints),
        options=options or RuntimeOptions(),
        context_provider=context_provider() if _contextual(nodes) else "provider_a",
    )
    nodes = with_inputs(nodes)
    return Plan(
        checked.workflow, tuple(nodes), context, tuple(w.one_line() for w in checked.warnings)
    )


def with_inputs(nodes: list[PlannedNode]) -> list[PlannedNode]:
    """The nodes, each with what flows into it from the others (`NodeInputs`), from what each
    kind declares: the crops the enrichments need (the partitioner makes them), the element
    types the partitioner keeps crops of and the languages it reads (the enrichments read
    them), the workflow's enrichment tasks, and where crops made for the enrichments alone
    leave the documents."""
    first = nodes[0].settings
    blocks: tuple[str, ...] = ()
    languages: tuple[str, ...] = ("eng",)
    if isinstance(first, s.PartitionSettings):
        blocks = first.image_blocks()
        languages = tuple(getattr(first, "ocr_languages", None) or languages)
    tasks = tuple(
        ENRICHMENT_SUBTYPES.get(n.subtype, n.subtype) for n in nodes if n.type == "prompter"
    )
    needed = tuple(dict.fromkeys(t for n in nodes for t in n.kind.crops))
    drops = crops_to_drop(nodes, blocks)
    out: list[PlannedNode] = []
    for index, node in enumerate(nodes):
        inputs = NodeInputs(
            crops_for_later=needed if index == 0 and node.type == "partition" else (),
            image_types=blocks if node.type == "prompter" else (),
            languages=languages,
            tasks=tasks if node.type in ("prompter", "partition") else (),
            drop_crops=drops.get(node.name, ()),
        )
        out.append(replace(node, inputs=inputs))
    return out


def crops_to_drop(nodes: list[PlannedNode], kept: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Node name -> the element types whose crops go from that node's output on: each type some
    node needs (`NodeKind.crops`) and `kept` (the partitioner's `extract_image_block_types`)
    does not list, dropped after the last node that needs it."""
    listed = {t.lower() for t in kept}
    last: dict[str, str] = {}
    for node in nodes:
        for kind in node.kind.crops:
            if kind.lower() not in listed:
                last[kind] = node.name
    drops: dict[str, tuple[str, ...]] = {}
    for kind, name in last.items():
        drops[name] = (*drops.get(name, ()), kind)
    return drops


def _contextual(nodes: list[PlannedNode]) -> bool:
    """True when a chunker asks for contextual chunking (only then is its provider resolved)."""
    return any(getattr(n.settings, "contextual_chunking_strategy", None) for n in nodes)
