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
from ingestflow.spec.catalog import (
    EMBED_SUBTYPES,
    ENRICHMENT_CROPS,
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
    """One registered node kind."""

    type: str
    subtype: str
    settings: builtins.type[s.Settings]
    stage: str  # "module:Class"
    #: Element types whose image crop the node needs from the partitioner (enrichments).
    crops: tuple[str, ...] = ()
    #: What the workers load for this node before the first document, in words (progress), or
    #: None when it loads nothing worth saying.
    loading: Callable[[s.Settings], str | None] = _nothing
    #: Whether the node may need torch with these settings. The local embedding model (embedder,
    #: similarity chunker) is not counted: it runs on ONNX Runtime where its export exists, which
    #: the runner checks.
    needs_torch: Callable[[s.Settings], bool] = _no_torch


_REGISTRY: dict[tuple[str, str], NodeKind] = {}


def register(
    type_: str,
    subtype: str,
    settings: builtins.type[s.Settings],
    stage: str,
    crops: tuple[str, ...] = (),
    loading: Callable[[s.Settings], str | None] = _nothing,
    needs_torch: Callable[[s.Settings], bool] = _no_torch,
) -> NodeKind:
    """Register a node kind; registering the same (type, subtype) twice is an error."""
    key = (type_, subtype)
    if type_ not in NODE_TYPES:
        raise ValueError(
            f"cannot register node kind {type_}/{subtype}: unknown node type {type_!r}; "
            f"node types are {', '.join(NODE_TYPES)}"
        )
    if key in _REGISTRY:
        raise ValueError(
            f"node kind {type_}/{subtype} is already registered (stage "
            f"{_REGISTRY[key].stage}); give the new kind a subtype of its own"
        )
    kind = NodeKind(type_, subtype, settings, stage, crops, loading, needs_torch)
    _REGISTRY[key] = kind
    return kind


def lookup(type_: str, subtype: str) -> NodeKind | None:
    """The node kind registered for (type, subtype), or None."""
    return _REGISTRY.get((type_, subtype))


def subtypes(type_: str) -> list[str]:
    """The registered subtypes of a node type, in registration order."""
    return [kind.subtype for kind in _REGISTRY.values() if kind.type == type_]


def stage_class(kind: NodeKind) -> type:
    """Import and return the stage class of a node kind (this is where heavy imports may start)."""
    module_name, _, class_name = kind.stage.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def _partitioner_loads(settings: s.Settings) -> str:
    assert isinstance(settings, s.PartitionSettings)
    if settings.run_strategy in ("hi_res", "auto"):
        return "the layout and OCR models"
    return "the partitioner"


def _partitioner_torch(settings: s.Settings) -> bool:
    # Fast needs no model; High Res and Auto run theirs on ONNX Runtime and tesseract (the
    # library's torch table model is replaced); VLM is left alone
    assert isinstance(settings, s.PartitionSettings)
    return settings.run_strategy == "vlm"


def _embedder_loads(settings: s.Settings) -> str | None:
    assert isinstance(settings, s.EmbedSettings)
    local = settings.model_name.lower() == LOCAL_EMBED_MODEL
    return "the embedding model" if local else None


register(
    "partition",
    "vlm",
    s.VLMPartitionSettings,
    "ingestflow.stages.partition.auto:VLMPartitionStage",
    loading=_partitioner_loads,
    needs_torch=_partitioner_torch,
)
register(
    "partition",
    "unstructured_api",
    s.UnstructuredPartitionSettings,
    "ingestflow.stages.partition:UnstructuredPartitionStage",
    loading=_partitioner_loads,
    needs_torch=_partitioner_torch,
)

_PROMPTER_SETTINGS: dict[str, type[s.Settings]] = {"ner": s.NERSettings}
for _subtype, _task in ENRICHMENT_SUBTYPES.items():
    register(
        "prompter",
        _subtype,
        _PROMPTER_SETTINGS.get(_task, s.EmptySettings),
        "ingestflow.stages.prompter:PrompterStage",
        ENRICHMENT_CROPS.get(_task, ()),
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
