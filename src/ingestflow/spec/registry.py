"""The one registry of node kinds: (type, subtype) -> settings model, stage, and what the runner
needs to know about the stage.

Subtype lists (validation's "allowed" hints, listings) are read from here, never written again.
Stages are named by import path so that parsing and validating a workflow never imports a heavy
library; the runner resolves them with `stage_class()`. Adding a node subtype is a stage module
and one `register` line below (plus a settings model in `settings.py` when it takes settings of
its own).
"""

from __future__ import annotations

import builtins
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from ingestflow.spec import settings as s
from ingestflow.spec import strategies
from ingestflow.spec.catalog import (
    EMBED_SUBTYPES,
    ENRICHMENT_CROPS,
    ENRICHMENT_NEEDS,
    ENRICHMENT_SUBTYPES,
    LOCAL_EMBED_MODEL,
)

NODE_TYPES = ("partition", "prompter", "chunk", "embed")


def _nothing(settings: s.Settings) -> None:
    return None


def _no_torch(settings: s.Settings) -> bool:
    return False


@dataclass(frozen=True)
class NodeKind:
    """One registered node kind, and what it declares."""

    type: str
    subtype: str
    settings: builtins.type[s.Settings]
    stage: str  # "module:Class"; a partitioner's strategy names its own (`stage_for`)
    #: Element types whose image crop the node needs from the partitioner (enrichments).
    crops: tuple[str, ...] = ()
    #: What the workers load for this node before the first document, in words (progress), or
    #: None when it loads nothing worth saying.
    loading: Callable[[s.Settings], str | None] = _nothing
    #: Whether the node may need torch with these settings. The local embedding model (embedder,
    #: similarity chunker) is not counted: it runs on ONNX Runtime where its export exists, which
    #: the runner checks.
    needs_torch: Callable[[s.Settings], bool] = _no_torch
    #: What the node needs from the partitioner upstream (`spec.strategies.NEEDS`).
    needs: tuple[str, ...] = ()
    #: A partitioner's strategies: subclasses of `settings`, one per value of its
    #: discriminating field, each with its `STRATEGY`.
    variants: tuple[builtins.type[s.PartitionSettings], ...] = ()

    def parse(self, settings: s.Settings) -> s.Settings:
        """Validated wire settings as the class of the strategy they name (the same values and
        the same fields set); other kinds' settings as they are."""
        for variant in self.variants:
            if isinstance(settings, variant):
                return settings
            field = variant.DISCRIMINATOR
            wanted = variant.model_fields[field].annotation.__args__[0]  # type: ignore[union-attr]
            if getattr(settings, field) == wanted:
                values = {name: getattr(settings, name) for name in type(settings).model_fields}
                return variant.model_construct(settings.model_fields_set, **values)
        return settings

    def stage_for(self, settings: s.Settings) -> str:
        """The stage that runs this node with these settings ("module:Class")."""
        if isinstance(settings, s.PartitionSettings) and self.variants:
            return settings.partition_strategy.stage
        return self.stage


_REGISTRY: dict[tuple[str, str], NodeKind] = {}


def register(
    type_: str,
    subtype: str,
    settings: builtins.type[s.Settings],
    stage: str = "",
    crops: tuple[str, ...] = (),
    loading: Callable[[s.Settings], str | None] = _nothing,
    needs_torch: Callable[[s.Settings], bool] = _no_torch,
    needs: tuple[str, ...] = (),
    variants: tuple[builtins.type[s.PartitionSettings], ...] = (),
) -> NodeKind:
    """Register a node kind, checked first: the error names the kind and what is wrong (an
    unknown node type, a kind registered twice, a stage that is not "module:Class", a need no
    strategy can meet, a strategy variant that is not its settings' subclass or names no
    registered strategy)."""
    key = (type_, subtype)
    where = f"cannot register node kind {type_}/{subtype}"
    if type_ not in NODE_TYPES:
        raise ValueError(
            f"{where}: unknown node type {type_!r}; node types are {', '.join(NODE_TYPES)}"
        )
    if key in _REGISTRY:
        raise ValueError(
            f"node kind {type_}/{subtype} is already registered (stage "
            f"{_REGISTRY[key].stage}); give the new kind a subtype of its own"
        )
    for variant in variants:
        if not issubclass(variant, settings) or variant.STRATEGY is None:
            raise ValueError(
                f"{where}: strategy {variant.__name__} must be a subclass of "
                f"{settings.__name__} carrying its STRATEGY"
            )
        field = variant.DISCRIMINATOR
        value = variant.model_fields[field].annotation.__args__[0]  # type: ignore[union-attr]
        known = strategies.strategy_of(subtype, {field: value})
        if known is None:  # a new strategy: registered with its kind
            strategies.register_strategy(subtype, field, value, variant.STRATEGY)
        elif known is not variant.STRATEGY:
            raise ValueError(
                f"{where}: strategy {variant.__name__} ({field}={value!r}) is the "
                f"{known.name!r} strategy already"
            )
    own = getattr(settings, "STRATEGY", None)  # a partitioner that runs one strategy
    if own is not None and not variants and strategies.strategy_of(subtype, {}) is None:
        strategies.register_strategy(subtype, "", None, own)
    stage = stage or (own.stage if own is not None else "")
    stage = stage or (variants[0].STRATEGY.stage if variants and variants[0].STRATEGY else "")
    if ":" not in stage:
        raise ValueError(f"{where}: its stage must be 'module:Class', found {stage!r}")
    unknown = set(needs) - set(strategies.NEEDS)
    if unknown:
        raise ValueError(
            f"{where}: it needs what no partitioner provides: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(strategies.NEEDS)})"
        )
    kind = NodeKind(
        type_, subtype, settings, stage, crops, loading, needs_torch, needs, tuple(variants)
    )
    _REGISTRY[key] = kind
    return kind


def lookup(type_: str, subtype: str) -> NodeKind | None:
    """The node kind registered for (type, subtype), or None."""
    return _REGISTRY.get((type_, subtype))


def subtypes(type_: str) -> list[str]:
    """The registered subtypes of a node type, in registration order."""
    return [kind.subtype for kind in _REGISTRY.values() if kind.type == type_]


def stage_class(kind: NodeKind, settings: s.Settings | None = None) -> type:
    """Import and return the stage class of a node kind, for these settings (a partitioner's
    strategy names its own); this is where heavy imports may start."""
    path = kind.stage if settings is None else kind.stage_for(settings)
    module_name, _, class_name = path.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def _partitioner_loads(settings: s.Settings) -> str:
    assert isinstance(settings, s.PartitionSettings)
    return settings.partition_strategy.loading


def _partitioner_torch(settings: s.Settings) -> bool:
    # Fast needs no model; High Res and Auto run theirs on ONNX Runtime and tesseract (the
    # library's torch table model is replaced); VLM is left alone
    assert isinstance(settings, s.PartitionSettings)
    return settings.partition_strategy.needs_torch


def _embedder_loads(settings: s.Settings) -> str | None:
    assert isinstance(settings, s.EmbedSettings)
    local = settings.model_name.lower() == LOCAL_EMBED_MODEL
    return "the embedding model" if local else None


register(
    "partition",
    "vlm",
    s.VLMPartitionSettings,
    loading=_partitioner_loads,
    needs_torch=_partitioner_torch,
    variants=(s.AutoSettings, s.VLMSettings),
)
register(
    "partition",
    "unstructured_api",
    s.UnstructuredPartitionSettings,
    loading=_partitioner_loads,
    needs_torch=_partitioner_torch,
    variants=(s.FastSettings, s.HiResSettings),
)

_PROMPTER_SETTINGS: dict[str, type[s.Settings]] = {"ner": s.NERSettings}
for _subtype, _task in ENRICHMENT_SUBTYPES.items():
    register(
        "prompter",
        _subtype,
        _PROMPTER_SETTINGS.get(_task, s.EmptySettings),
        "ingestflow.stages.prompter:PrompterStage",
        ENRICHMENT_CROPS.get(_task, ()),
        needs=ENRICHMENT_NEEDS.get(_task, ()),
    )

_CHUNKER = "ingestflow.stages.chunk:ChunkStage"
register("chunk", "chunk_by_character", s.ChunkByCharacterSettings, _CHUNKER)
register("chunk", "chunk_by_title", s.ChunkByTitleSettings, _CHUNKER)
register("chunk", "chunk_by_page", s.ChunkByPageSettings, _CHUNKER)
register("chunk", "chunk_by_similarity", s.ChunkBySimilaritySettings, _CHUNKER)

for _subtype in EMBED_SUBTYPES:  # one per provider of the embedding model table
    register(
        "embed",
        _subtype,
        s.EmbedSettings,
        "ingestflow.stages.embed:EmbedStage",
        loading=_embedder_loads,
    )
