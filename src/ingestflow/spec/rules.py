"""SPEC.md's workflow rules: each a small function that returns problems (never raises). The
workflow's own rules are here, those on the settings of its nodes in `node_rules`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ingestflow.spec import node_rules
from ingestflow.spec import settings as s
from ingestflow.spec.catalog import SCHEDULES
from ingestflow.spec.graph import ordering_problems
from ingestflow.spec.models import WorkflowCreate, WorkflowNode
from ingestflow.spec.names import name_problem
from ingestflow.spec.parsed_node import ParsedNode, Rule, RuleContext
from ingestflow.spec.problems import Problem

OPERATIONAL_TYPES = ("custom", "template")
NODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
RETIRED_TYPES = ("advanced", "basic", "platinum")


def node_key(node: WorkflowNode) -> str:
    """The node's id in job records and node-output folders: its id, or a slug of its name."""
    return node.id or re.sub(r"[^a-z0-9]+", "-", node.name.lower()).strip("-") or "node"


def names(wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext) -> Iterable[Problem]:
    """The workflow and each node have a non-empty name of printable characters; node names are
    unique in a workflow."""
    if not wf.name.strip():
        yield Problem(
            "name",
            "the workflow name must not be empty",
            found=wf.name,
            hint="give the workflow a unique name",
        )
    for problem in (
        name_problem("name", wf.name, "workflow"),
        *(name_problem(f"{n.path}.name", n.node.name, "node") for n in nodes),
    ):
        if problem is not None:
            yield problem
    keys: dict[str, ParsedNode] = {}
    for node in nodes:
        given = node.node.id
        if given is not None and not NODE_ID.fullmatch(given):
            yield Problem(
                f"{node.path}.id",
                "a node id may hold only letters, digits, `_`, `-` and `.`, and must start "
                "with a letter or digit",
                found=given,
                hint="node ids name folders of kept node outputs",
            )
            continue
        key = node_key(node.node)
        earlier = keys.setdefault(key, node)
        # the same name twice is reported once, by the name rule below
        if earlier is not node and (given or earlier.node.name != node.node.name):
            yield Problem(
                f"{node.path}.{'id' if given else 'name'}",
                f"node id `{key}` is already used by {earlier.path}",
                found=given or node.node.name,
                hint="node ids (given, or made from the name) must be unique",
            )
    seen: dict[str, str] = {}
    for node in nodes:
        name = node.node.name
        if not name.strip():
            yield Problem(
                f"{node.path}.name",
                "a node name must not be empty",
                found=name,
                hint="name the node, e.g. after what it does",
            )
        elif name in seen:
            yield Problem(
                f"{node.path}.name",
                f"node name is already used by {seen[name]}",
                found=name,
                hint="node names identify nodes in job records: make them unique",
            )
        else:
            seen[name] = node.path


def workflow_type(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """custom needs nodes; template needs template_id and no nodes; other types do not run."""
    kind = wf.workflow_type
    allowed = list(OPERATIONAL_TYPES)
    if kind in RETIRED_TYPES:
        yield Problem(
            "workflow_type",
            f"workflow type `{kind}` is non-operational and slated for removal",
            found=kind,
            allowed=allowed,
            hint="use `custom` with workflow_nodes, or `template` with a template_id",
        )
    elif kind in ("auto", "automatic"):
        yield Problem(
            "workflow_type",
            "an automatic workflow type is not available yet",
            found=kind,
            allowed=allowed,
            hint="use `custom` or `template`",
        )
    elif kind not in OPERATIONAL_TYPES:
        yield Problem("workflow_type", "unknown workflow type", found=kind, allowed=allowed)
    elif kind == "custom":
        if not wf.workflow_nodes:
            yield Problem(
                "workflow_nodes",
                "a `custom` workflow needs workflow_nodes",
                found=wf.workflow_nodes,
                hint="list at least a partition node",
            )
        if wf.template_id is not None:
            yield Problem(
                "template_id",
                "template_id belongs to `template` workflows only",
                found=wf.template_id,
                hint="remove template_id, or use workflow_type `template` without workflow_nodes",
            )
    else:
        if not wf.template_id:
            yield Problem(
                "template_id",
                "a `template` workflow needs a template_id",
                found=wf.template_id,
                hint="e.g. `hi_res_partition`; `ingestflow templates list` shows them",
            )
        if wf.workflow_nodes is not None:
            yield Problem(
                "workflow_nodes",
                "a `template` workflow takes its nodes from the template: omit workflow_nodes",
                found=len(wf.workflow_nodes),
                hint="remove workflow_nodes, or use workflow_type `custom`",
            )


def connectors(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """Local source/destination rules (SPEC.md workflow rules 1-3)."""
    for field in ("source_id", "destination_id"):
        value = getattr(wf, field)
        if value is not None and not value.strip():
            yield Problem(
                field,
                f"{field} is empty",
                found=value,
                hint=f"omit {field} for local files, or give a connector id",
            )
    if wf.workflow_type in OPERATIONAL_TYPES and wf.workflow_type != "custom":
        for side, local in (("source", wf.local_source), ("destination", wf.local_destination)):
            if local:
                yield Problem(
                    "workflow_type",
                    f"a workflow with a local {side} must be `custom`",
                    found=wf.workflow_type,
                    allowed=["custom"],
                    hint=f"use workflow_type `custom`, or give a {side}_id",
                )
    if wf.local_source and wf.schedule is not None:
        yield Problem(
            "schedule",
            "a workflow with a local source cannot have a schedule",
            found=wf.schedule,
            hint="remove the schedule and run it with local files, or give a source_id",
        )


def schedule(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """The schedule is one of SPEC.md's phrases."""
    if wf.schedule is not None and wf.schedule not in SCHEDULES:
        yield Problem(
            "schedule",
            "unknown schedule phrase",
            found=wf.schedule,
            allowed=list(SCHEDULES),
            hint="use one of the phrases; each stands for a cron expression",
        )


def ordering(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """Nodes sit in one of the service's allowed orderings (chunker after every enrichment ...)."""
    if all(n.kind is not None for n in nodes):
        yield from ordering_problems(nodes)


RULES: tuple[Rule, ...] = (
    names,
    workflow_type,
    connectors,
    schedule,
    ordering,
    node_rules.partitioner,
    node_rules.upstream_needs,
    node_rules.ner_prompt,
    node_rules.chunk_sizes,
    node_rules.embedder,
)


def warnings(nodes: Sequence[ParsedNode]) -> list[Problem]:
    """Settings that are valid but have no effect where they are (said, never silently ignored)."""
    out: list[Problem] = []
    for node in nodes:
        st = node.settings
        if isinstance(st, s.UnstructuredPartitionSettings):
            strategy = st.partition_strategy
            if strategy.lays_out_pages:
                continue  # tables are read where pages are laid out
            for field in ("pdf_infer_table_structure", "infer_table_structure"):
                if getattr(st, field):
                    out.append(
                        Problem(
                            f"{node.path}.settings.{field}",
                            f"{field} has no effect with the {strategy.label} strategy",
                            found=True,
                            hint="use strategy `hi_res` for table structure",
                        )
                    )
            if st.extract_image_block_types:
                out.append(
                    Problem(
                        f"{node.path}.settings.extract_image_block_types",
                        "with the Fast strategy only images whose data is inside the document "
                        "(HTML data URIs, e.g. wiki pages with extract_images) are stored",
                        found=st.extract_image_block_types,
                        hint="use strategy `hi_res` to crop image blocks from PDFs and images",
                    )
                )
    return out
