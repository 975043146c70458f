"""Local files → Milvus Lite through `ingestflow run --destination`, then `vectordb search`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app

pytestmark = pytest.mark.slow
runner = CliRunner()
WORKFLOW = {
    "name": "files to milvus",
    "workflow_type": "custom",
    "destination_id": "milvus lite",
    "workflow_nodes": [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": {"strategy": "fast", "unique_element_ids": False},
        },
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_title",
            "settings": {"max_characters": 300},
        },
        {
            "name": "Embedder",
            "type": "embed",
            "subtype": "ibm",
            "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
        },
    ],
}


def setup(tmp: Path, collection: str = "elements", dim: int = 384) -> tuple[Path, Path, Path]:
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "finance.txt").write_text(
        "Interest rates\n\nThe central bank raised interest rates to curb inflation. "
        "Monetary policy tightened across the economy.\n"
    )
    (docs / "garden.md").write_text(
        "# Tomatoes\n\nWater tomato plants deeply twice a week and stake them early.\n"
    )
    db = tmp / "milvus.db"
    created = runner.invoke(
        app,
        [
            "vectordb",
            "create-collection",
            "--uri",
            str(db),
            "--collection",
            collection,
            "--dim",
            str(dim),
            "--schema",
            "recommended",
        ],
    )
    assert created.exit_code == 0, created.output
    conn = tmp / "milvus.json"
    conn.write_text(
        json.dumps(
            {
                "name": "milvus lite",
                "type": "milvus",
                "config": {
                    "user": "",
                    "uri": str(db),
                    "db_name": "",
                    "password": "",
                    "collection_name": "elements",
                },
            }
        )
    )
    wf = tmp / "wf.json"
    wf.write_text(json.dumps(WORKFLOW))
    return docs, conn, wf


def run(tmp: Path, wf: Path, docs: Path, conn: Path, *extra: str) -> tuple[int, Any]:
    result = runner.invoke(
        app,
        [
            "run",
            str(wf),
            "-i",
            str(docs),
            "--destination",
            str(conn),
            "--workspace",
            str(tmp / "ws"),
            "--workers",
            "1",
            "--json",
            *extra,
        ],
    )
    out = result.stdout
    return result.exit_code, json.loads(out) if out.startswith("{") else result.output


def test_files_to_milvus_lite_and_search(tmp_path: Path) -> None:
    docs, conn, wf = setup(tmp_path)
    code, record = run(tmp_path, wf, docs, conn)
    assert code == 0, record
    assert record["processing_status"] == "SUCCESS"
    found = runner.invoke(
        app,
        [
            "vectordb",
            "search",
            "--uri",
            str(tmp_path / "milvus.db"),
            "--collection",
            "elements",
            "monetary policy",
            "-k",
            "2",
        ],
    )
    assert found.exit_code == 0, found.output
    first = found.stdout.strip().splitlines()[0:6]
    assert "finance.txt" in "\n".join(first)
    # a re-run replaces the documents' rows: same count, no duplicates
    count_before = _count(tmp_path / "milvus.db")
    code, _ = run(tmp_path, wf, docs, conn)
    assert code == 0 and _count(tmp_path / "milvus.db") == count_before


def test_dimension_mismatch_fails_before_processing(tmp_path: Path) -> None:
    docs, conn, wf = setup(tmp_path, dim=768)
    code, output = run(tmp_path, wf, docs, conn)
    assert code == 3
    assert "768" in output and "384" in output
    listed = runner.invoke(app, ["jobs", "list", "--json", "--workspace", str(tmp_path / "ws")])
    (job,) = json.loads(listed.stdout)
    assert job["status"] == "FAILED" and job["input_file_ids"] == []


def test_missing_collection_names_the_command(tmp_path: Path) -> None:
    docs, conn, wf = setup(tmp_path)
    body = json.loads(conn.read_text())
    body["config"]["collection_name"] = "nope"
    conn.write_text(json.dumps(body))
    code, output = run(tmp_path, wf, docs, conn)
    assert code == 3
    assert "ingestflow vectordb create-collection" in output and "nope" in output


def _count(db: Path) -> int:
    from pymilvus import MilvusClient

    client = MilvusClient(str(db))
    try:
        client.load_collection("elements")
        rows = client.query("elements", filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"])
    finally:
        client.close()


def test_destination_id_names_a_stored_connector(tmp_path: Path) -> None:
    docs, conn, wf = setup(tmp_path)
    created = runner.invoke(
        app, ["connectors", "create", str(conn), "--workspace", str(tmp_path / "ws")]
    )
    assert created.exit_code == 0, created.output
    # no --destination: the workflow's destination_id ("milvus lite") is looked up in the store
    result = runner.invoke(
        app,
        [
            "run",
            str(wf),
            "-i",
            str(docs),
            "--workspace",
            str(tmp_path / "ws"),
            "--workers",
            "1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output_dir"] is None
    assert _count(tmp_path / "milvus.db") > 0
