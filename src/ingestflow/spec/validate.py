"""Validate a workflow body: parse everything, run every rule, collect all problems.

Connector bodies are validated by `ingestflow.connectors.registry`, which knows their types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any
from urllib.parse import urlsplit

from ingestflow.spec import registry
from ingestflow.spec.models import MASK, SECRET_FIELDS, WorkflowCreate
from ingestflow.spec.parsed_node import ParsedNode, RuleContext
from ingestflow.spec.parsing import parse_model, shape_problems
from ingestflow.spec.problems import Problem
from ingestflow.spec.record import mask_url_credentials, url_credentials
from ingestflow.spec.rules import RULES, warnings


@dataclass
class CheckedWorkflow:
    """The outcome of validating a workflow: the parsed workflow and nodes, and every problem."""

    workflow: WorkflowCreate | None
    nodes: list[ParsedNode] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    #: What was checked, for messages: "workflow", or "template workflow" (its template's
    #: nodes, expanded).
    what: str = "workflow"
    #: The type the body named (a template workflow is checked as the custom one it expands to).
    named_type: str = ""

    @property
    def valid(self) -> bool:
        """True when no rule is broken."""
        return not self.problems


def validate_workflow(data: Any, today: date | None = None) -> CheckedWorkflow:
    """Check a workflow create body against every rule; `today` decides model retirement."""
    shape = shape_problems(data)  # bodies from an API arrive without load_json_text's checks
    if shape:
        return CheckedWorkflow(None, [], shape)
    workflow, problems = parse_model(WorkflowCreate, data, what="workflow")
    if workflow is None:
        # Still judge the nodes, so one run reports everything it can.
        raw_nodes = data.get("workflow_nodes") if isinstance(data, dict) else None
        return CheckedWorkflow(None, _parse_nodes_raw(raw_nodes, problems), problems)
    nodes: list[ParsedNode] = []
    for index, node in enumerate(workflow.workflow_nodes or []):
        kind = registry.lookup(node.type, node.subtype)
        path = f"workflow_nodes[{index}]"
        if kind is None:
            problems.append(_unknown_kind(path, node.type, node.subtype))
            nodes.append(ParsedNode(index, node, None, None))
            continue
        parsed, node_problems = parse_model(
            kind.settings,
            node.settings,
            prefix=("workflow_nodes", index, "settings"),
            what=f"{node.type}/{node.subtype} settings",
        )
        problems.extend(node_problems)
        if parsed is None:
            parsed = _salvage(kind.settings, node.settings, node_problems, index)
        nodes.append(ParsedNode(index, node, kind, kind.parse(parsed) if parsed else parsed))
    ctx = RuleContext(today=today or date.today())
    for rule in RULES:
        problems.extend(rule(workflow, nodes, ctx))
    return CheckedWorkflow(workflow, nodes, problems, warnings(nodes))


def check_runnable(data: Any, today: date | None = None) -> CheckedWorkflow:
    """A workflow body checked as it will run: every rule, and a template workflow's built-in
    template expanded into its nodes and those checked too. What a run's plan is built from:
    each front end checks a body once, and the plan takes the result."""
    from ingestflow.spec.templates import expand_template, template_problem

    checked = validate_workflow(data, today=today)
    workflow = checked.workflow
    if workflow is not None:
        checked.named_type = workflow.workflow_type
    if not checked.valid or workflow is None or workflow.workflow_type != "template":
        return checked
    problem = template_problem(str(workflow.template_id))
    if problem is not None:
        return CheckedWorkflow(workflow, checked.nodes, [problem], checked.warnings)
    expanded = validate_workflow(expand_template(data), today=today)
    expanded.what, expanded.named_type = "template workflow", "template"
    return expanded


def _salvage(model: type, data: Any, problems: list[Problem], index: int) -> Any:
    """Settings without their broken fields, so cross-node rules still judge the rest."""
    if not isinstance(data, dict):
        return None
    prefix = f"workflow_nodes[{index}].settings."
    broken = {p.path.removeprefix(prefix).split(".")[0].split("[")[0] for p in problems}
    parsed, _ = parse_model(model, {k: v for k, v in data.items() if k not in broken})
    return parsed


def _parse_nodes_raw(raw: Any, problems: list[Problem]) -> list[ParsedNode]:
    """Parse node settings of a workflow whose top level failed, for a complete report."""
    from ingestflow.spec.models import WorkflowNode

    out: list[ParsedNode] = []
    if not isinstance(raw, list):
        return out
    for index, item in enumerate(raw):
        node, _ = parse_model(WorkflowNode, item)  # its own errors are already in `problems`
        if node is None:
            continue
        kind = registry.lookup(node.type, node.subtype)
        if kind is None:
            continue
        parsed, node_problems = parse_model(
            kind.settings,
            node.settings,
            prefix=("workflow_nodes", index, "settings"),
            what=f"{node.type}/{node.subtype} settings",
        )
        problems.extend(node_problems)
        out.append(ParsedNode(index, node, kind, kind.parse(parsed) if parsed else parsed))
    return out


def _unknown_kind(path: str, type_: str, subtype: str) -> Problem:
    if type_ not in registry.NODE_TYPES:
        return Problem(
            f"{path}.type", "unknown node type", found=type_, allowed=list(registry.NODE_TYPES)
        )
    return Problem(
        f"{path}.subtype",
        f"unknown subtype for a `{type_}` node",
        found=subtype,
        allowed=registry.subtypes(type_),
        hint="vendor spellings (e.g. `anthropic_ner`) are accepted too",
    )


def url_credential_problems(config: Any) -> list[Problem]:
    """Credentials written into a connector's `url` or `uri` (`https://user:pw@host`): refused,
    since records show the URL and its password would travel with it; they have fields of their
    own."""
    fields = type(config).model_fields
    user = next((f for f in ("username", "user") if f in fields), "username")
    secrets = " or ".join(f"`{f}`" for f in fields if f in SECRET_FIELDS)
    out = []
    for name in ("url", "uri"):
        value = getattr(config, name, None)
        if not isinstance(value, str):
            continue
        try:
            parts = urlsplit(value.strip())
        except ValueError:
            continue  # not a URL (its own rules say so)
        if "@" not in parts.netloc and not url_credentials(value):
            continue
        host = parts.netloc.rpartition("@")[2]
        found = parts._replace(netloc=f"{MASK}@{host}").geturl()
        if "@" not in parts.netloc:  # a password holding / ? or #: urlsplit cut it short
            found = mask_url_credentials(value.strip())
        out.append(
            Problem(
                f"config.{name}",
                f"`{name}` holds credentials (user info before the host): records show the "
                f"{name}, so a user name or password does not belong in it",
                found=found,
                hint=f"remove `...@` from the {name}; put the user name in `{user}` and the "
                f"secret in {secrets}",
            )
        )
    return out


def looks_like_connector(data: Any) -> bool:
    """True for a connector body (name, type, config) rather than a workflow."""
    return isinstance(data, dict) and "config" in data and "workflow_type" not in data
