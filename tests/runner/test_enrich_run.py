"""A workflow with enrichment nodes, run end to end against a model server on loopback: High
Res crops go to the model, answers land in the output, a bad answer fails its document alone,
and the API key reaches no record, output or message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.providers import client as client_module
from tests.fakes.models import FakeModelServer, Request

pytestmark = pytest.mark.slow
KEY = "sk-run-secret-9876"
WORKFLOW = {
    "name": "enriched",
    "workflow_type": "custom",
    "workflow_nodes": [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {
                "strategy": "hi_res",
                "unique_element_ids": False,
                "infer_table_structure": True,
                "extract_image_block_types": ["Table"],
            },
        },
        {
            "name": "Tables",
            "type": "prompter",
            "subtype": "openai_table_description",
            "settings": {},
        },
        {"name": "Entities", "type": "prompter", "subtype": "anthropic_ner", "settings": {}},
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_title",
            "settings": {"max_characters": 1500, "include_orig_elements": True},
        },
    ],
}


def answer(request: Request) -> str:
    if request.images:  # the table description
        return "Containers and bulk cargo per port."
    text = request.text.split("[START OF TEXT]")[1]
    if "POISON" in text:
        return "no entities here, sorry"  # not the JSON asked for
    entities = [{"entity": "Ada Lovelace", "type": "PERSON"}] if "Ada" in text else []
    return json.dumps({"items": entities, "relationships": []})


def test_enrichments_run_end_to_end_and_a_bad_answer_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.stages.test_hires import draw_page

    monkeypatch.setattr(client_module, "BACKOFF", 0.01)
    folder = tmp_path / "in"
    folder.mkdir()
    draw_page().save(folder / "scan.pdf", resolution=200.0)
    (folder / "notes.txt").write_text("Ada Lovelace wrote the first program.\n")
    (folder / "poison.txt").write_text("POISON in this one.\n")
    workflow = tmp_path / "wf.json"
    workflow.write_text(json.dumps(WORKFLOW))
    with FakeModelServer(key=KEY) as server:
        server.reply(answer)
        for name, url in (("OPENAI", server.openai_url), ("ANTHROPIC", server.anthropic_url)):
            monkeypatch.setenv(f"INGESTFLOW_{name}_BASE_URL", url)
            monkeypatch.setenv(f"INGESTFLOW_{name}_API_KEY", KEY)
        result = CliRunner().invoke(
            app,
            [
                "run",
                str(workflow),
                "-i",
                str(folder),
                "-o",
                str(tmp_path / "out"),
                "--workspace",
                str(tmp_path / "ws"),
                "--workers",
                "1",
                "--json",
                "--trace",
            ],
        )
    record: dict[str, Any] = json.loads(result.stdout)
    assert result.exit_code == 1, result.output  # one document failed
    (failed,) = record["failed_files"]
    assert failed["document"] == "poison.txt"
    assert "Entities: poison.txt: provider_a answered something unusable for ner" in failed["error"]
    stats = {n["node_name"]: (n["success"], n["failure"]) for n in record["node_stats"]}
    assert stats == {"Partitioner": (3, 0), "Tables": (3, 0), "Entities": (2, 1), "Chunker": (2, 0)}

    described = [r for r in server.requests if r.images]
    assert described and all(r.path == "/v1/chat/completions" for r in described)
    chunks = json.loads((tmp_path / "out" / "scan.pdf.json").read_text())
    assert any("Containers and bulk cargo per port." in c["text"] for c in chunks)
    notes = json.loads((tmp_path / "out" / "notes.txt.json").read_text())
    from unstructured.staging.base import elements_from_base64_gzipped_json

    (original,) = elements_from_base64_gzipped_json(notes[0]["metadata"]["orig_elements"])
    assert original.metadata.to_dict()["entities"] == {
        "items": [{"entity": "Ada Lovelace", "type": "PERSON"}],
        "relationships": [],
    }
    # the key is in no output, record or stored file
    for path in [*(tmp_path / "out").rglob("*"), *(tmp_path / "ws").rglob("*")]:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in result.output
