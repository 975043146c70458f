"""The one registry of node kinds: (type, subtype) -> settings model and stage implementation.

Stages are named by import path so that parsing and validating a workflow never imports a heavy
library; the runner resolves them with `stage_class()`.
"""

from __future__ import annotations

import builtins
import importlib
from dataclasses import dataclass

from ingestflow.spec import settings as s
from ingestflow.spec.catalog import (
    CHUNK_SUBTYPES,
    EMBED_SUBTYPES,
    ENRICHMENT_CROPS,
    ENRICHMENT_SUBTYPES,
)

NODE_TYPES = ("partition", "prompter", "chunk", "embed")


@dataclass(frozen=True)
class NodeKind:
    """One registered node kind."""

    type: str
    subtype: str
    settings: builtins.type[s.Settings]
    stage: str  # "module:Class"
    #: Element types whose image crop the node needs from the partitioner (enrichments).
    crops: tuple[str, ...] = ()


_REGISTRY: dict[tuple[str, str], NodeKind] = {}


def register(
    type_: str,
    subtype: str,
    settings: builtins.type[s.Settings],
    stage: str,
    crops: tuple[str, ...] = (),
) -> None:
    """Register a node kind; registering the same (type, subtype) twice is an error."""
    key = (type_, subtype)
    if key in _REGISTRY:
        raise ValueError(f"node kind {type_}/{subtype} is already registered")
    _REGISTRY[key] = NodeKind(type_, subtype, settings, stage, crops)


def lookup(type_: str, subtype: str) -> NodeKind | None:
    """The node kind registered for (type, subtype), or None."""
    return _REGISTRY.get((type_, subtype))


def stage_class(kind: NodeKind) -> type:
    """Import and return the stage class of a node kind (this is where heavy imports may start)."""
    module_name, _, class_name = kind.stage.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


register(
    "partition",
    "unstructured_api",
    s.UnstructuredPartitionSettings,
    "ingestflow.stages.partition:UnstructuredPartitionStage",
)
register("partition", "vlm", s.VLMPartitionSettings, "ingestflow.stages.auto:VLMPartitionStage")

_PROMPTER_SETTINGS: dict[str, type[s.Settings]] = {"ner": s.NERSettings}
for _subtype, _task in ENRICHMENT_SUBTYPES.items():
    register(
        "prompter",
        _subtype,
        _PROMPTER_SETTINGS.get(_task, s.EmptySettings),
        "ingestflow.stages.prompter:PrompterStage",
        ENRICHMENT_CROPS.get(_task, ()),
    )

_CHUNK_SETTINGS: dict[str, type[s.Settings]] = {
    "chunk_by_character": s.ChunkByCharacterSettings,
    "chunk_by_title": s.ChunkByTitleSettings,
    "chunk_by_page": s.ChunkByPageSettings,
    "chunk_by_similarity": s.ChunkBySimilaritySettings,
}
for _subtype in CHUNK_SUBTYPES:
    register("chunk", _subtype, _CHUNK_SETTINGS[_subtype], "ingestflow.stages.chunk:ChunkStage")

for _subtype in EMBED_SUBTYPES:
    register("embed", _subtype, s.EmbedSettings, "ingestflow.stages.embed:EmbedStage")
