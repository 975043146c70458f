"""A partition strategy, or an enrichment, is one module and one registration line: each kind
declares what it is, what it provides and what it needs, the registry checks it when it is
registered, and the plan, the rules and the runner use the declarations (no name of a built-in
kind is involved)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import ingestflow
from ingestflow.errors import WorkflowInvalid
from ingestflow.spec import registry, strategies
from ingestflow.spec import settings as s

#: The plug-in module: a partition strategy that makes one element per line of a text, and an
#: enrichment that writes each element's text in capitals. Nothing else of ingestflow changes.
PLUGIN = '''
from typing import ClassVar

from ingestflow.spec.settings import EmptySettings, PartitionSettings
from ingestflow.spec.strategies import Strategy
from ingestflow.stages.base import ACTED_ON, Stage


class LinesSettings(PartitionSettings):
    """One NarrativeText element per line."""

    unique_element_ids: bool = False
    STRATEGY: ClassVar[Strategy | None] = Strategy("lines", "Lines", "acme_plugin:LinesStage")


class LinesStage(Stage):
    def process(self, doc):
        text = doc.path.read_text() if doc.path else doc.data.decode()
        doc.elements = [
            {"type": "NarrativeText", "element_id": f"{doc.filename}-{n}", "text": line,
             "metadata": {"filename": doc.filename, "partition_strategy": "lines"}}
            for n, line in enumerate(text.splitlines()) if line.strip()
        ]
        return doc


class ShoutStage(Stage):
    tallies_acted_on = True

    def process(self, doc):
        doc.elements = [{**e, "text": e["text"].upper()} for e in doc.elements]
        doc.stats[ACTED_ON] = {self.name: len(doc.elements)}
        return doc
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """The plug-in module importable, and the registries restored afterwards."""
    (tmp_path / "acme_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(strategies, "_STRATEGIES", dict(strategies._STRATEGIES))
    import acme_plugin

    yield acme_plugin
    sys.modules.pop("acme_plugin", None)


def _workflow(*nodes: tuple[str, str, str]) -> dict[str, object]:
    return {
        "name": "plugged",
        "workflow_type": "custom",
        "workflow_nodes": [
            {"name": name, "type": type_, "subtype": subtype, "settings": {}}
            for name, type_, subtype in nodes
        ],
    }


def test_a_new_strategy_and_enrichment_run_from_one_registration_line_each(
    plugin: object, tmp_path: Path
) -> None:
    registry.register("partition", "acme_lines", plugin.LinesSettings)  # type: ignore[attr-defined]
    registry.register("prompter", "acme_shout", s.EmptySettings, "acme_plugin:ShoutStage")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "poem.txt").write_text("first line\n\nsecond line\n")
    wf = _workflow(
        ("Lines", "partition", "acme_lines"),
        ("Shout", "prompter", "acme_shout"),
        ("Chunker", "chunk", "chunk_by_title"),
    )
    result = ingestflow.run(wf, [folder], workspace=tmp_path / "ws", workers=1)
    assert result.job["status"] == "COMPLETED", result.job
    assert [e["text"] for e in result.after("Lines")["poem.txt"]] == ["first line", "second line"]
    assert [e["text"] for e in result.after("Shout")["poem.txt"]] == ["FIRST LINE", "SECOND LINE"]
    assert "FIRST LINE" in result.elements["poem.txt"][0]["text"]  # chunked


def test_what_a_node_needs_is_checked_against_what_the_new_strategy_provides(
    plugin: object,
) -> None:
    """An enrichment that needs crops after a strategy that makes none: the one generic rule
    says so with both kinds' names, and names the strategies that do provide them."""
    registry.register("partition", "acme_lines", plugin.LinesSettings)  # type: ignore[attr-defined]
    registry.register(
        "prompter", "acme_caption", s.EmptySettings, "acme_plugin:ShoutStage", needs=("crops",)
    )
    wf = _workflow(
        ("Lines", "partition", "acme_lines"),
        ("Caption", "prompter", "acme_caption"),
        ("Chunker", "chunk", "chunk_by_title"),
    )
    with pytest.raises(WorkflowInvalid, match=r"`acme_caption` needs the image crops") as err:
        ingestflow.load_workflow(wf)
    [problem] = err.value.problems
    assert problem.path == "workflow_nodes[1].subtype"
    assert "the Lines strategy does not make them" in problem.message
    assert problem.allowed == ["High Res partitioner", "Auto partitioner"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("partition", "vlm", s.EmptySettings, "m:C"), "is already registered"),
        (("chunker", "x", s.EmptySettings, "m:C"), "unknown node type 'chunker'"),
        (("prompter", "x", s.EmptySettings, "no_class_here"), "must be 'module:Class'"),
    ],
)
def test_the_registry_checks_each_entry_and_names_what_is_wrong(
    plugin: object, args: tuple[object, ...], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        registry.register(*args)  # type: ignore[arg-type]


def test_a_need_nothing_provides_and_a_strategy_registered_twice_are_refused(
    plugin: object,
) -> None:
    with pytest.raises(ValueError, match=r"needs what no partitioner provides: glasses"):
        registry.register("prompter", "acme_x", s.EmptySettings, "m:C", needs=("glasses",))
    with pytest.raises(ValueError, match=r"strategy 'fast' is already registered"):
        strategies.register_strategy("acme", "mode", "quick", strategies.FAST)
    assert strategies.strategy_of("unstructured_api", {"strategy": "hi_res"}) is strategies.HI_RES
