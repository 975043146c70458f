"""NER results reach the vectordb: a run with an NER node (against the fake model server on
loopback), the chunker SPEC.md requires after it and an embedder, into Milvus Lite with the
recommended schema, fills `entities_items` / `entities_relationships`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.fakes.models import FakeModelServer, Request

pytestmark = pytest.mark.slow
runner = CliRunner()
ADA = {"entity": "Ada Lovelace", "type": "PERSON"}
BABBAGE = {"entity": "Charles Babbage", "type": "PERSON"}
WORKED = {"from": "Ada Lovelace", "relationship": "works_with", "to": "Charles Babbage"}
WORKFLOW = {
    "name": "entities to milvus",
    "workflow_type": "custom",
    "workflow_nodes": [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {"strategy": "hi_res", "unique_element_ids": False},
        },
        {"name": "Entities", "type": "prompter", "subtype": "anthropic_ner", "settings": {}},
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_title",
            "settings": {"max_characters": 800},
        },
        {
            "name": "Embedder",
            "type": "embed",
            "subtype": "ibm",
            "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
        },
    ],
}


def answer(request: Request) -> str:
    text = request.text.split("[START OF TEXT]")[1]
    items = [e for e in (ADA, BABBAGE) if e["entity"].split()[0] in text]
    relationships = [WORKED] if len(items) == 2 else []
    return json.dumps({"items": items, "relationships": relationships})


def test_ner_entities_fill_the_vectordb_entity_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pymilvus import MilvusClient

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text(
        "Ada Lovelace wrote the first program.\n\n"
        "Ada Lovelace and Charles Babbage worked on the Analytical Engine.\n"
    )
    db = tmp_path / "milvus.db"
    created = runner.invoke(
        app,
        [
            *("vectordb", "create-collection", "--uri", str(db)),
            *("--collection", "elements", "--schema", "recommended"),
        ],
    )
    assert created.exit_code == 0, created.output
    conn = tmp_path / "milvus.json"
    config = {"user": "", "uri": str(db), "db_name": "", "password": ""}
    conn.write_text(
        json.dumps(
            {
                "name": "milvus lite",
                "type": "vectordb",
                "config": {**config, "collection_name": "elements"},
            }
        )
    )
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(WORKFLOW))
    with FakeModelServer() as server:
        server.reply(answer)
        monkeypatch.setenv("INGESTFLOW_ANTHROPIC_BASE_URL", server.anthropic_url)
        result = runner.invoke(
            app,
            [
                *("run", str(wf), "-i", str(docs), "--destination", str(conn)),
                *("--workspace", str(tmp_path / "ws"), "--workers", "1", "--json"),
            ],
        )
    assert result.exit_code == 0, result.output
    client = MilvusClient(str(db))
    try:
        client.load_collection("elements")
        rows = client.query(
            "elements",
            filter="",
            limit=10,
            output_fields=["text", "entities_items", "entities_relationships"],
        )
    finally:
        client.close()
    (row,) = rows  # both paragraphs fit one chunk
    assert row["entities_items"] == [ADA, BABBAGE]
    assert row["entities_relationships"] == [WORKED]
