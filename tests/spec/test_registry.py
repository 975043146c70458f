"""The node-kind registry: every registered kind resolves to a stage class, each (type, subtype)
is registered once, subtype lists and what the runner needs to know come from it, and a new
chunker (tests/spec/element_chunker.py) works through the same paths once one line registers it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingestflow.service import Service
from ingestflow.service.requests import ExecutionOptions, RunRequest
from ingestflow.spec import registry
from ingestflow.spec.settings import ChunkSettings, PartitionSettings
from ingestflow.spec.validate import validate_workflow
from ingestflow.stages.base import RunContext, Stage
from tests.spec import element_chunker as element_chunker_mod
from tests.spec.element_chunker import ElementChunkSettings, ElementChunkStage

KINDS = sorted(registry._REGISTRY.values(), key=lambda k: (k.type, k.subtype))


@pytest.mark.parametrize("kind", KINDS, ids=[f"{k.type}/{k.subtype}" for k in KINDS])
def test_every_registered_kind_resolves_to_a_stage_class(kind: registry.NodeKind) -> None:
    cls = registry.stage_class(kind)
    assert isinstance(cls, type) and issubclass(cls, Stage)
    fields = kind.settings.model_fields
    required = {name for name, f in fields.items() if f.is_required()}
    sample = {"strategy": "fast", "is_dynamic": True, "allow_fast": True, "model_name": "m"}
    settings = kind.settings.model_validate({k: sample[k] for k in required})
    stage = cls("Node", kind.subtype, settings, RunContext())  # the constructor stays cheap
    assert stage.name == "Node" and stage.subtype == kind.subtype


def test_every_node_type_has_kinds() -> None:
    assert {k.type for k in KINDS} == set(registry.NODE_TYPES)
    assert len([k for k in KINDS if k.type == "prompter"]) == 12


@pytest.fixture
def element_chunker(monkeypatch: pytest.MonkeyPatch) -> Iterator[registry.NodeKind]:
    """`chunk/chunk_by_element` registered for one test; the registry as it was afterwards."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    yield registry.register(  # the one line that adds a chunker subtype
        "chunk",
        "chunk_by_element",
        ElementChunkSettings,
        f"{element_chunker_mod.__name__}:ElementChunkStage",
    )


def _workflow(**chunk_settings: object) -> dict[str, object]:
    return {
        "name": "element chunks",
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "unstructured_api",
                "settings": {"strategy": "fast"},
            },
            {
                "name": "Chunker",
                "type": "chunk",
                "subtype": "chunk_by_element",
                "settings": chunk_settings,
            },
        ],
    }


def test_a_kind_registered_twice_or_of_an_unknown_type_is_refused() -> None:
    before = dict(registry._REGISTRY)
    with pytest.raises(ValueError, match=r"chunk/chunk_by_title is already registered \(stage "):
        registry.register("chunk", "chunk_by_title", ChunkSettings, "x:Y")
    with pytest.raises(ValueError, match=r"unknown node type 'chunker'; node types are partition"):
        registry.register("chunker", "chunk_by_word", ChunkSettings, "x:Y")
    assert before == registry._REGISTRY


def test_subtype_lists_are_the_registry() -> None:
    assert registry.subtypes("partition") == ["vlm", "unstructured_api"]
    assert registry.subtypes("chunk") == [
        "chunk_by_character",
        "chunk_by_title",
        "chunk_by_page",
        "chunk_by_similarity",
    ]
    assert registry.subtypes("embed") == [
        "azure_openai",
        "bedrock",
        "ibm",
        "togetherai",
        "voyageai",
    ]
    unknown = validate_workflow(_workflow())
    assert [(p.path, p.allowed) for p in unknown.problems] == [
        ("workflow_nodes[1].subtype", registry.subtypes("chunk"))
    ]


def test_a_new_chunker_validates_plans_and_runs(
    element_chunker: registry.NodeKind, tmp_path: Path
) -> None:
    assert "chunk_by_element" in registry.subtypes("chunk")
    bad = validate_workflow(_workflow(min_chars=-1, max_characters=10, new_after_n_chars=20))
    assert sorted(p.path for p in bad.problems) == [
        "workflow_nodes[1].settings.min_chars",
        "workflow_nodes[1].settings.new_after_n_chars",  # the rules of every chunker hold
    ]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Hi.\n\nA paragraph long enough.\n\nAnother one, also long.\n")
    out = tmp_path / "out"
    with Service(tmp_path / "ws") as service:
        prepared = service.runs.prepare(
            RunRequest(
                _workflow(min_chars=5),
                inputs=(docs,),
                output=out,
                execution=ExecutionOptions(workers=1),
            )
        )
        assert isinstance(prepared.plan.stages()[1], ElementChunkStage)
        job = service.runs.start(prepared)
    assert job["status"] == "COMPLETED", job
    chunks = json.loads((out / "a.txt.json").read_text(encoding="utf-8"))
    assert [(c["type"], c["text"]) for c in chunks] == [
        ("CompositeElement", "A paragraph long enough."),
        ("CompositeElement", "Another one, also long."),
    ]


@pytest.mark.parametrize(
    ("settings", "strategy", "loads", "torch"),
    [
        ({"strategy": "fast"}, "fast", "the partitioner", False),
        ({"strategy": "hi_res"}, "hi_res", "the layout and OCR models", False),
        ({"is_dynamic": True, "allow_fast": True}, "auto", "the layout and OCR models", False),
        ({"is_dynamic": False}, "vlm", "the partitioner", True),
    ],
)
def test_the_partitioners_strategy_load_and_torch_come_from_one_place(
    settings: dict[str, object], strategy: str, loads: str, torch: bool
) -> None:
    subtype = "unstructured_api" if "strategy" in settings else "vlm"
    kind = registry.lookup("partition", subtype)
    assert kind is not None
    parsed = kind.parse(kind.settings.model_validate(settings))
    assert isinstance(parsed, PartitionSettings)
    assert type(parsed).STRATEGY is parsed.partition_strategy  # the strategy's own class
    assert parsed.partition_strategy.name == strategy
    assert (kind.loading(parsed), kind.needs_torch(parsed)) == (loads, torch)
