"""SPEC.md's workflow rules: each a small function that returns problems (never raises)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from ingestflow.spec import settings as s
from ingestflow.spec.catalog import (
    ENRICHMENT_SUBTYPES,
    LIBRARY_MAX_CHARACTERS,
    SCHEDULES,
    catalog,
)
from ingestflow.spec.graph import ordering_problems
from ingestflow.spec.models import WorkflowCreate, WorkflowNode
from ingestflow.spec.names import name_problem
from ingestflow.spec.problems import Problem
from ingestflow.spec.registry import NodeKind

OPERATIONAL_TYPES = ("custom", "template")
NODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
RETIRED_TYPES = ("advanced", "basic", "platinum")
NER_MARKERS = ("[START OF TEXT]", "{{text}}", "[END OF TEXT]")


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


def node_key(node: WorkflowNode) -> str:
    """The node's id in job records and node-output folders: its id, or a slug of its name."""
    return node.id or re.sub(r"[^a-z0-9]+", "-", node.name.lower()).strip("-") or "node"


def _first(nodes: Sequence[ParsedNode], type_: str) -> ParsedNode | None:
    return next((n for n in nodes if n.type == type_), None)


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


def partitioner(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """Auto needs allow_fast; a VLM model belongs to its provider and is not retired."""
    for node in nodes:
        st = node.settings
        if isinstance(st, s.VLMPartitionSettings):
            if st.is_dynamic and st.allow_fast is None:
                yield Problem(
                    f"{node.path}.settings.allow_fast",
                    "the Auto strategy (is_dynamic true) requires allow_fast",
                    hint="set allow_fast to true (pages may go to Fast) or false",
                )
            yield from _vlm_model(node, st, ctx)


def _vlm_model(node: ParsedNode, st: s.VLMPartitionSettings, ctx: RuleContext) -> Iterable[Problem]:
    cat = catalog()
    path = f"{node.path}.settings.model"
    providers = [st.provider] if st.provider != "auto" else list(cat.vlm_models)
    for provider in providers:
        retired = cat.retirement(provider, st.model)
        if retired is not None:
            if ctx.today >= retired.retired_on:
                yield Problem(
                    path,
                    f"model `{st.model}` was retired on {retired.retired_on} and "
                    "returns errors from that date",
                    found=st.model,
                    hint=f"use `{retired.replacement}` instead",
                )
            return
    models = [m for p in providers for m in cat.vlm_models.get(p, ())]
    if st.model not in models:
        yield Problem(
            path,
            f"model `{st.model}` is not a model of provider `{st.provider}`",
            found=st.model,
            allowed=models,
            hint="pick one of the provider's models, or "
            "add yours to the catalog (INGESTFLOW_CATALOG)",
        )


def enrichments(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """Enrichment preconditions on the partitioner (SPEC.md: when enrichments take effect)."""
    part = _first(nodes, "partition")
    if part is None or part.settings is None:
        return
    st = part.settings
    assert isinstance(st, s.PartitionSettings)
    strategy = st.run_strategy
    names_ = {"auto": "Auto", "vlm": "VLM", "hi_res": "High Res", "fast": "Fast"}
    for node in nodes:
        task = node.task
        if task is None:
            continue
        path = f"{node.path}.subtype"
        if task in ("image_description", "table_description", "table2html"):
            if strategy == "vlm":
                yield Problem(
                    path,
                    f"`{node.subtype}` is not allowed with the VLM partitioner: "
                    "VLM produces image and table descriptions itself",
                    found=node.subtype,
                    allowed=["Auto or High Res partitioner"],
                    hint="remove this node, or use an Auto or High Res partitioner",
                )
            elif strategy == "fast":
                yield Problem(
                    path,
                    f"`{node.subtype}` never takes effect with the Fast strategy",
                    found=node.subtype,
                    allowed=["Auto or High Res partitioner"],
                    hint="set the partitioner's strategy to `hi_res`",
                )
        elif task == "ocr":
            if strategy in ("fast", "vlm"):
                yield Problem(
                    path,
                    f"generative OCR needs a High Res or Auto partitioner, not {names_[strategy]}",
                    found=node.subtype,
                    allowed=["High Res partitioner with extract_image_block_types"],
                    hint="use strategy `hi_res` and list element types in "
                    "extract_image_block_types",
                )
            elif not getattr(st, "extract_image_block_types", None):
                yield Problem(
                    f"{part.path}.settings.extract_image_block_types",
                    "generative OCR processes only the element types listed in the "
                    "High Res partitioner's extract_image_block_types, and none are "
                    "listed",
                    found=getattr(st, "extract_image_block_types", None),
                    hint='list the element types to OCR, e.g. ["Table", "Image"]'
                    + (
                        " (the Auto partitioner has no such setting: use `hi_res`)"
                        if strategy == "auto"
                        else ""
                    ),
                )


def ner_prompt(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """An NER prompt override keeps [START OF TEXT], {{text}}, [END OF TEXT] in that order."""
    for node in nodes:
        if not isinstance(node.settings, s.NERSettings) or node.settings.prompt_override is None:
            continue
        prompt = node.settings.prompt_override
        path = f"{node.path}.settings.prompt_interface_overrides.prompt.user"
        lines = [line.strip() for line in prompt.splitlines()]
        missing = [m for m in NER_MARKERS if m not in prompt]
        if missing:
            yield Problem(
                path,
                "the NER prompt override lacks " + ", ".join(missing),
                found=f"{len(prompt)} characters",
                allowed=list(NER_MARKERS),
                hint="keep a line `[START OF TEXT]`, then `{{text}}`, then a line `[END OF TEXT]`",
            )
            continue
        positions = [prompt.index(m) for m in NER_MARKERS]
        if positions != sorted(positions):
            yield Problem(
                path,
                "the NER prompt override has its markers out of order",
                allowed=list(NER_MARKERS),
                hint="the input text goes between the start and end markers",
            )
        elif "[START OF TEXT]" not in lines or "[END OF TEXT]" not in lines:
            yield Problem(
                path,
                "the start and end markers must each stand on a line of their own",
                allowed=list(NER_MARKERS),
            )


def chunk_sizes(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """new_after_n_chars, combine_text_under_n_chars <= max_characters; overlap < max_characters."""
    for node in nodes:
        if isinstance(node.settings, s.ChunkSettings):
            yield from chunk_size_problems(node.settings, f"{node.path}.settings")


def chunk_size_problems(st: s.ChunkSettings, base: str) -> list[Problem]:
    """Size settings the library rejects (overlap) or silently caps (the others)."""
    maximum = st.max_characters or LIBRARY_MAX_CHARACTERS
    source = "max_characters" if st.max_characters else "the default max_characters"
    out: list[Problem] = []
    if st.new_after_n_chars is not None and st.new_after_n_chars > maximum:
        out.append(
            Problem(
                f"{base}.new_after_n_chars",
                f"new_after_n_chars must be at most {source} ({maximum})",
                found=st.new_after_n_chars,
                allowed={"le": maximum},
                hint="the soft limit cannot exceed the hard one",
            )
        )
    combine = getattr(st, "combine_text_under_n_chars", None)
    if combine is not None and combine > maximum:
        out.append(
            Problem(
                f"{base}.combine_text_under_n_chars",
                f"combine_text_under_n_chars must be at most {source} ({maximum})",
                found=combine,
                allowed={"le": maximum},
            )
        )
    if st.overlap is not None and st.overlap >= maximum:
        out.append(
            Problem(
                f"{base}.overlap",
                f"overlap must be less than {source} ({maximum})",
                found=st.overlap,
                allowed={"lt": maximum},
            )
        )
    return out


def embedder(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """The model belongs to the subtype; the chunker's max_characters fits the model (rule 8)."""
    cat = catalog()
    chunker = _first(nodes, "chunk")
    for node in nodes:
        st = node.settings
        if not isinstance(st, s.EmbedSettings):
            continue
        model = cat.embed_model(node.subtype, st.model_name)
        if model is None:
            yield Problem(
                f"{node.path}.settings.model_name",
                f"`{st.model_name}` is not a model of embedder `{node.subtype}`",
                found=st.model_name,
                allowed=cat.embed_models_of(node.subtype),
                hint="the offline default is `ibm` with `sentence-transformers/all-minilm-l6-v2`",
            )
            continue
        if chunker is None or not isinstance(chunker.settings, s.ChunkSettings):
            continue
        size = chunker.settings.max_characters or LIBRARY_MAX_CHARACTERS
        if size > model.max_chunk:
            yield Problem(
                f"{chunker.path}.settings.max_characters",
                f"max_characters exceeds the "
                f"recommended maximum chunk size of `{model.name}` ({model.max_chunk})",
                found=size,
                allowed={"le": model.max_chunk},
                hint=f"lower max_characters to {model.max_chunk} or less "
                "(README, 'Workflow rules': chunk size)",
            )


RULES: tuple[Rule, ...] = (
    names,
    workflow_type,
    connectors,
    schedule,
    ordering,
    partitioner,
    enrichments,
    ner_prompt,
    chunk_sizes,
    embedder,
)


def warnings(nodes: Sequence[ParsedNode]) -> list[Problem]:
    """Settings that are valid but have no effect where they are (said, never silently ignored)."""
    out: list[Problem] = []
    for node in nodes:
        st = node.settings
        if isinstance(st, s.UnstructuredPartitionSettings) and st.strategy == "fast":
            for field in ("pdf_infer_table_structure", "infer_table_structure"):
                if getattr(st, field):
                    out.append(
                        Problem(
                            f"{node.path}.settings.{field}",
                            f"{field} has no effect with the Fast strategy",
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
