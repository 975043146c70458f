"""Whole workflows from a fake Confluence (loopback HTTP) through `ingestflow run --source`."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.fakes.confluence import FakeConfluence, Fault, restriction, space_grant

runner = CliRunner()
USER, TOKEN = "ada@example.com", "wiki-api-token-s3cr3t"
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00"
    b"\x00\x00\x00IEND\xaeB`\x82"
)
WORKFLOW = {
    "name": "wiki to json",
    "workflow_type": "custom",
    "source_id": "team wiki",
    "reprocess_all": False,
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
            "settings": {"max_characters": 400},
        },
    ],
}


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    with FakeConfluence(basic={(USER, TOKEN)}, base_path="/wiki") as server:
        server.add_space(
            "DEV",
            permissions=[
                space_grant("read", "space", users=["u-ada", "u-bob"], groups=["g-dev"]),
                space_grant("create", "page", users=["u-ada"]),
                space_grant("delete", "page", users=["u-ada"]),
            ],
        )
        server.add_page(
            "DEV",
            "Release plan",
            "<h2>Plan</h2><p>Ship the beta in March.</p>"
            '<img src="/wiki/download/attachments/11/diagram.png">'
            '<p>See <a href="/wiki/download/attachments/11/notes.txt">notes</a>.</p>',
            page_id="11",
        )
        server.add_attachment("11", "diagram.png", PNG, "image/png")
        server.add_attachment(
            "11", "notes.txt", b"Launch checklist\n\nBook the room.\n", "text/plain"
        )
        server.add_page(
            "DEV",
            "Secret roadmap",
            "<p>Only Ada may read this.</p>",
            page_id="12",
            restrictions={"read": restriction(users=["u-ada"])},
        )
        for i in range(3):
            server.add_page(
                "DEV", f"Note {i}", f"<p>Note number {i} of the team.</p>", page_id=str(20 + i)
            )
        yield server


def connector(tmp: Path, server: FakeConfluence, **config: Any) -> Path:
    body = {
        "name": "team wiki",
        "type": "confluence",
        "config": {
            "url": server.url,
            "username": USER,
            "token": TOKEN,
            "cloud": True,
            "spaces": ["DEV"],
            "extract_images": True,
            "extract_files": True,
            **config,
        },
    }
    path = tmp / "wiki.json"
    path.write_text(json.dumps(body))
    return path


def run(tmp: Path, *args: str) -> tuple[int, Any]:
    wf = tmp / "wf.json"
    wf.write_text(json.dumps(WORKFLOW))
    result = runner.invoke(
        app,
        [
            "run",
            str(wf),
            "-o",
            str(tmp / "out"),
            "--workspace",
            str(tmp / "ws"),
            "--workers",
            "1",
            "--json",
            *args,
        ],
    )
    out = result.stdout
    return result.exit_code, json.loads(out) if out.startswith("{") else result.output


def elements(tmp: Path, suffix: str) -> list[dict[str, Any]]:
    (path,) = [p for p in (tmp / "out").rglob("*.json") if p.name.endswith(suffix)]
    return json.loads(path.read_text())


def test_wiki_to_local_json(tmp_path: Path, wiki: FakeConfluence) -> None:
    code, record = run(tmp_path, "--source", str(connector(tmp_path, wiki)))
    assert code == 0, record
    names = sorted(f["filename"] for f in record["files"])
    assert names == [
        "DEV/11-release-plan.html",
        "DEV/12-secret-roadmap.html",
        "DEV/20-note-0.html",
        "DEV/21-note-1.html",
        "DEV/22-note-2.html",
        "notes.txt",
    ]
    plan = elements(tmp_path, "11-release-plan.html.json")
    assert "Ship the beta in March." in " ".join(e["text"] for e in plan)
    for element in plan:
        source = element["metadata"]["data_source"]
        assert source["record_locator"]["page_id"] == "11"
        perms = {next(iter(p)): next(iter(p.values())) for p in source["permissions_data"]}
        assert perms["read"] == {"users": ["u-ada", "u-bob"], "groups": ["g-dev"]}
        assert perms["update"]["users"] == ["u-ada"]
    secret = elements(tmp_path, "12-secret-roadmap.html.json")
    read = secret[0]["metadata"]["data_source"]["permissions_data"][0]["read"]
    assert read == {"users": ["u-ada"], "groups": []}
    notes = elements(tmp_path, "notes.txt.json")
    assert "Book the room." in " ".join(e["text"] for e in notes)
    assert notes[0]["metadata"]["data_source"]["record_locator"]["page_id"] == "11"
    assert TOKEN not in json.dumps(record)


def test_image_is_inlined_before_partitioning(tmp_path: Path, wiki: FakeConfluence) -> None:
    body = json.loads(json.dumps(WORKFLOW))
    body["workflow_nodes"][0]["settings"]["extract_image_block_types"] = ["Image"]
    (tmp_path / "wf.json").write_text(json.dumps(body))
    result = runner.invoke(
        app,
        [
            "run",
            str(tmp_path / "wf.json"),
            "-o",
            str(tmp_path / "out"),
            "--workspace",
            str(tmp_path / "ws"),
            "--workers",
            "1",
            "--json",
            "--trace",
            "--source",
            str(connector(tmp_path, wiki)),
        ],
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    files = {f["filename"]: f["file_id"] for f in record["files"]}
    download = runner.invoke(
        app,
        [
            "jobs",
            "download",
            record["id"],
            "--file",
            files["DEV/11-release-plan.html"],
            "--node",
            "Partitioner",
            "--workspace",
            str(tmp_path / "ws"),
        ],
    )
    (image,) = [e for e in json.loads(download.stdout) if e["type"] == "Image"]
    assert image["metadata"]["image_mime_type"] == "image/png"
    assert base64.b64decode(image["metadata"]["image_base64"]) == PNG
    assert len(wiki.requests_to("/download/attachments/11/diagram.png")) == 1


@pytest.mark.slow
def test_rerun_skips_unchanged_pages_and_a_failing_page_fails_alone(
    tmp_path: Path, wiki: FakeConfluence
) -> None:
    source = str(connector(tmp_path, wiki, extract_files=False, extract_images=False))
    code, first = run(tmp_path, "--source", source)
    assert code == 0 and {f["status"] for f in first["files"]} == {"SUCCESS"}
    wiki.pages["21"].version = 2
    wiki.pages["21"].body = "<p>Note one, revised.</p>"
    wiki.inject("/rest/api/content/22", Fault.server_error(times=None))
    code, second = run(tmp_path, "--source", source)
    assert code == 1
    status = {f["filename"]: f["status"] for f in second["files"]}
    assert status == {
        "DEV/11-release-plan.html": "SKIPPED",
        "DEV/12-secret-roadmap.html": "SKIPPED",
        "DEV/20-note-0.html": "SKIPPED",
        "DEV/21-note-1.html": "SUCCESS",
        "DEV/22-note-2.html": "FAILED",
    }
    (failed,) = second["failed_files"]
    assert "503" in failed["error"]


def test_stored_connector_named_by_source_id(tmp_path: Path, wiki: FakeConfluence) -> None:
    created = runner.invoke(
        app,
        [
            "connectors",
            "create",
            str(connector(tmp_path, wiki)),
            "--workspace",
            str(tmp_path / "ws"),
        ],
    )
    assert created.exit_code == 0, created.output
    record = json.loads(created.stdout)
    assert record["config"]["token"] == "********" and TOKEN not in created.stdout
    code, job = run(tmp_path)  # the workflow's source_id names the stored connector
    assert code == 0, job
    assert len(job["files"]) == 6


def test_connectors_check(tmp_path: Path, wiki: FakeConfluence) -> None:
    good = runner.invoke(app, ["connectors", "check", str(connector(tmp_path, wiki))])
    assert good.exit_code == 0 and json.loads(good.stdout)["status"] == "SUCCESS"
    bad = runner.invoke(
        app, ["connectors", "check", str(connector(tmp_path, wiki, token="wrong-token"))]
    )
    assert bad.exit_code == 3
    body = json.loads(bad.stdout)
    assert body["status"] == "FAILURE" and "401" in body["reason"]
    assert "wrong-token" not in bad.output


def test_missing_space_is_a_precheck_error(tmp_path: Path, wiki: FakeConfluence) -> None:
    code, output = run(tmp_path, "--source", str(connector(tmp_path, wiki, spaces=["NOPE"])))
    assert code == 3
    assert "NOPE" in output
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.json"))


@pytest.mark.slow
def test_wiki_to_milvus_lite_with_permissions(tmp_path: Path, wiki: FakeConfluence) -> None:
    from pymilvus import MilvusClient

    from ingestflow.connectors.vectordb_destination import create_collection

    db = tmp_path / "milvus.db"
    create_collection(str(db), "pages", dim=384, schema="recommended", enable_dynamic_field=True)
    destination = tmp_path / "milvus.json"
    destination.write_text(
        json.dumps(
            {
                "name": "lite",
                "type": "vectordb",
                "config": {
                    "user": "",
                    "uri": str(db),
                    "db_name": "",
                    "password": "",
                    "collection_name": "pages",
                },
            }
        )
    )
    body = json.loads(json.dumps(WORKFLOW))
    body["workflow_nodes"].append(
        {
            "name": "Embedder",
            "type": "embed",
            "subtype": "ibm",
            "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
        }
    )
    (tmp_path / "wf.json").write_text(json.dumps(body))
    result = runner.invoke(
        app,
        [
            "run",
            str(tmp_path / "wf.json"),
            "--workspace",
            str(tmp_path / "ws"),
            "--workers",
            "1",
            "--json",
            "--source",
            str(connector(tmp_path, wiki)),
            "--destination",
            str(destination),
        ],
    )
    assert result.exit_code == 0, result.output
    client = MilvusClient(str(db))
    try:
        client.load_collection("pages")
        rows = client.query("pages", filter="", output_fields=["*"], limit=1000)
    finally:
        client.close()
    assert rows and {len(r["embeddings"]) for r in rows} == {384}
    by_file: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_file.setdefault(row["filename"], []).append(row)
    assert set(by_file) == {
        "11-release-plan.html",
        "12-secret-roadmap.html",
        "20-note-0.html",
        "21-note-1.html",
        "22-note-2.html",
        "notes.txt",
    }
    for row in by_file["12-secret-roadmap.html"]:
        assert row["data_source_permissions_data"][0] == {
            "read": {"users": ["u-ada"], "groups": []}
        }
    for rows_of_file in by_file.values():
        for row in rows_of_file:
            assert row["data_source_permissions_data"], row["filename"]
