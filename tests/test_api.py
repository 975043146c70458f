"""The Python API, as the README's notebook snippet uses it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ingestflow

WORKFLOW = json.loads(Path("fixtures/workflows/valid/02-fast-by-title-embed.json").read_text())


def _docs(tmp: Path) -> Path:
    folder = tmp / "docs"
    folder.mkdir()
    for name in ("notes.txt", "guide.md", "page.html"):
        (folder / name).write_bytes(Path("fixtures/docs", name).read_bytes())
    return folder


def test_import_is_light_and_lists_the_api() -> None:
    probe = (
        "import sys, ingestflow; print(sorted(ingestflow.__all__)); "
        "print(any(m.startswith(('unstructured', 'torch', 'pandas')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    names, heavy = out.stdout.splitlines()
    assert "run" in names and "run_node" in names and "elements_frame" in names
    assert heavy == "False"


def test_one_list_of_public_names() -> None:
    from ingestflow import api, errors

    assert ingestflow.__all__ is api.__all__  # re-exported, not kept in step by hand
    assert {name: getattr(ingestflow, name) for name in api.__all__} == {
        name: getattr(api, name) for name in api.__all__
    }
    assert ingestflow.IngestflowError is errors.IngestflowError
    assert "IngestflowError" in api.__all__


def test_load_and_validate() -> None:
    wf = ingestflow.load_workflow("fixtures/workflows/valid/02-fast-by-title-embed.json")
    assert wf.nodes == ["Partitioner", "Chunker", "Embedder"]
    bad = {**WORKFLOW, "workflow_type": "basic"}
    problems = ingestflow.validate(bad)
    assert [p.path for p in problems] == ["workflow_type"]
    with pytest.raises(ingestflow.WorkflowInvalid, match="workflow is invalid"):
        ingestflow.load_workflow(bad)


TEMPLATE = {
    "name": "t",
    "workflow_type": "template",
    "template_id": "hi_res_partition",
    "source_id": "wiki",  # stored connectors' ids: resolved when the workflow is stored or run
    "destination_id": "lake",
}
SAME_INPUTS = {
    "zero": 0,
    "a-list": [WORKFLOW],
    "neither-path-nor-json": "not a path, {nor JSON",
    "unknown-template": {**TEMPLATE, "template_id": "no_such_template"},
    "a-valid-template": TEMPLATE,
    "a-valid-workflow": WORKFLOW,
    "a-connector-lacking-fields": {"name": "lake", "type": "milvus", "config": {"uri": "./l.db"}},
}


@pytest.mark.parametrize("name", list(SAME_INPUTS))
def test_validate_agrees_with_the_cli_and_never_raises(tmp_path: Path, name: str) -> None:
    """`ingestflow.validate(x)` returns the problems `ingestflow validate` prints for the same
    input: a string is a path for both; any other value is what the CLI's file holds."""
    from typer.testing import CliRunner

    from ingestflow.cli import app

    value = SAME_INPUTS[name]
    if isinstance(value, str):
        path = value
    else:
        path = str(tmp_path / "input.json")
        Path(path).write_text(json.dumps(value))
    problems = [p.as_dict() for p in ingestflow.validate(value)]
    assert problems == [p.as_dict() for p in ingestflow.validate(path)]
    result = CliRunner().invoke(app, ["validate", "--json", path])
    assert json.loads(result.stdout)["problems"] == problems
    assert result.exit_code == (2 if problems else 0)
    assert bool(problems) == (name not in ("a-valid-template", "a-valid-workflow"))
    if name == "unknown-template":
        assert [p["path"] for p in problems] == ["template_id"]
    if problems:
        with pytest.raises(ingestflow.WorkflowInvalid, match="is invalid"):
            ingestflow.load_workflow(value)


def test_the_readme_snippet_runs(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    wf = ingestflow.load_workflow(WORKFLOW)
    result = ingestflow.run(wf, [docs], workspace=tmp_path / "ws", workers=1)
    assert result.ok, result.job["failed_files"]
    assert set(result.elements) == {"notes.txt", "guide.md", "page.html"}
    assert all(len(e["embeddings"]) == 384 for els in result.elements.values() for e in els)
    parts = result.after("Partitioner")
    assert parts["notes.txt"] and all(e["type"] != "CompositeElement" for e in parts["notes.txt"])
    chunks = ingestflow.run_node(wf, "Chunker", parts["notes.txt"])
    assert [c["text"] for c in chunks] == [c["text"] for c in result.after("Chunker")["notes.txt"]]
    vectors = ingestflow.run_node(wf, "Embedder", chunks)
    assert len(vectors[0]["embeddings"]) == 384
    partitioned = ingestflow.run_node(wf, "Partitioner", path=docs / "guide.md")
    assert [e["text"] for e in partitioned] == [e["text"] for e in parts["guide.md"]]
    frame = ingestflow.elements_frame(result.elements)
    assert len(frame) == sum(len(v) for v in result.elements.values())
    assert {"file", "type", "text", "text_length"} <= set(frame.columns)
    assert (frame.text_length == frame.text.str.len()).all()
    with pytest.raises(ingestflow.WorkflowInvalid, match="no node is called 'Nope'"):
        ingestflow.run_node(wf, "Nope", chunks)
    with pytest.raises(ingestflow.WorkflowInvalid, match="runs on a file"):
        ingestflow.run_node(wf, "Partitioner", chunks)


def test_a_wrong_argument_is_named_not_a_type_error(tmp_path: Path) -> None:
    """The README promises WorkflowInvalid naming a wrong argument of `run` (issue 37, 21)."""
    wf = ingestflow.load_workflow(WORKFLOW)
    with pytest.raises(ingestflow.WorkflowInvalid, match="takes no argument `worker`") as caught:
        ingestflow.run(wf, [tmp_path], workspace=tmp_path / "ws", worker=2)
    assert "did you mean `workers`?" in str(caught.value)
    assert not (tmp_path / "ws").exists()  # refused before anything was made


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"workers": "x"}, "workers"),
        ({"workers": 1.5}, "workers"),
        ({"workers": -1}, "workers"),
        ({"doc_timeout": -5}, "doc_timeout"),
        ({"doc_timeout": "abc"}, "doc_timeout"),
        ({"trace": "no"}, "trace"),
        ({"cache": 1}, "cache"),
    ],
)
def test_a_wrong_argument_value_is_named_not_a_type_error(
    tmp_path: Path, arguments: dict[str, Any], named: str
) -> None:
    """Values the CLI's flags would refuse are refused here too, by the argument's name (they
    raised TypeError deep in the run, or ran)."""
    wf = ingestflow.load_workflow(WORKFLOW)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("A note.\n")
    with pytest.raises(ingestflow.WorkflowInvalid, match=rf"`?{named}`?: ") as caught:
        ingestflow.run(wf, [folder], workspace=tmp_path / "ws", **arguments)
    assert len(caught.value.problems) == 1


def test_one_path_given_as_a_string_is_one_input(tmp_path: Path) -> None:
    """Not its characters, each a missing file."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("A note.\n")
    result = ingestflow.run(WORKFLOW, str(folder), workspace=tmp_path / "ws", workers=1)
    assert result.job["status"] == "COMPLETED"
    assert list(result.elements) == ["a.txt"]


def test_a_runs_documents_as_markdown(tmp_path: Path) -> None:
    """`RunResult.markdown()`: each file's output (chunks written as the elements they kept)
    as Markdown; after a kept node too; `to_markdown` on any elements."""
    wf = ingestflow.load_workflow(WORKFLOW)
    result = ingestflow.run(wf, [_docs(tmp_path)], workspace=tmp_path / "ws", workers=1)
    assert result.ok, result.job["failed_files"]
    pages = result.markdown()
    assert set(pages) == {"notes.txt", "guide.md", "page.html"}
    assert pages["guide.md"].startswith(
        "# Getting Started with Ingestion\n\nThis guide explains how documents become elements"
    )
    assert "\n\n## Steps\n\n- Partition each document into elements.\n- Chunk" in pages["guide.md"]
    assert pages == result.markdown("Partitioner")  # the chunks read as the partitioner's output
    assert ingestflow.to_markdown(result.elements["page.html"]) == pages["page.html"]
    assert "\n<table><tr><th>Station</th>" in pages["page.html"]
    with pytest.raises(ingestflow.NotFound, match="node 'Nope' is not in job"):
        result.markdown("Nope")
