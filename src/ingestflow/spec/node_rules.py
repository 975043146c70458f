"""SPEC.md's rules on the settings of a workflow's nodes (partitioner, enrichments, chunker,
embedder): each a small function that returns problems (never raises)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ingestflow.spec import settings as s
from ingestflow.spec.catalog import LIBRARY_MAX_CHARACTERS, catalog
from ingestflow.spec.models import WorkflowCreate
from ingestflow.spec.parsed_node import ParsedNode, RuleContext, first_node
from ingestflow.spec.problems import Problem
from ingestflow.spec.strategies import NEEDS, providers_of

NER_MARKERS = ("[START OF TEXT]", "{{text}}", "[END OF TEXT]")


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


def upstream_needs(
    wf: WorkflowCreate, nodes: Sequence[ParsedNode], ctx: RuleContext
) -> Iterable[Problem]:
    """What a node needs from the partitioner upstream (its kind's declared `needs`) is what
    that partitioner's strategy provides with its settings; a problem says so by the kinds'
    names (SPEC.md: when enrichments take effect)."""
    part = first_node(nodes, "partition")
    if part is None or not isinstance(part.settings, s.PartitionSettings):
        return
    st = part.settings
    strategy = st.partition_strategy
    provided = st.provides()
    for node in nodes:
        for need in node.kind.needs if node.kind is not None else ():
            if need in provided:
                continue
            what = NEEDS[need].what
            by_setting = strategy.provided_by_setting.get(need)
            if by_setting is not None:  # the strategy gives it with a setting left empty
                setting, hint = by_setting
                yield Problem(
                    f"{part.path}.settings.{setting}",
                    f"`{node.subtype}` needs {what}, which the {strategy.label} partitioner "
                    f"makes only for the types its {setting} lists, and none are listed",
                    found=getattr(st, setting, None),
                    hint=hint,
                )
                continue
            providers = providers_of(need)
            yield Problem(
                f"{node.path}.subtype",
                f"`{node.subtype}` needs {what} from the partitioner, and the "
                f"{strategy.label} strategy {strategy.why_not(need)}",
                found=node.subtype,
                allowed=[f"{label} partitioner" for label in providers],
                hint=f"use a {' or '.join(providers)} partitioner, or remove this node",
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
    chunker = first_node(nodes, "chunk")
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
