"""`ingestflow sources|destinations|workflows|templates|keys`: the service through the CLI."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from tests.fakes.confluence import FakeConfluence

runner = CliRunner()
USER, TOKEN = "ada@example.com", "wiki-t0ken-s3cret"
FAST = {"name": "Partitioner", "type": "partition", "subtype": "unstructured_api"}
LOCAL_WORKFLOW = {
    "name": "local fast",
    "workflow_type": "custom",
    "workflow_nodes": [
        {**FAST, "settings": {"strategy": "fast"}},
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_character",
            "settings": {"max_characters": 300},
        },
    ],
}


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    with FakeConfluence(basic={(USER, TOKEN)}, base_path="/wiki") as server:
        server.add_space("DEV")
        server.add_page("DEV", "Plan", "<p>Ship the beta in March.</p>", page_id="11")
        yield server


def cli(tmp: Path, *args: str) -> Any:
    return runner.invoke(app, [*args, "--workspace", str(tmp / "ws")])


def write(tmp: Path, name: str, body: Any) -> str:
    path = tmp / name
    path.write_text(json.dumps(body))
    return str(path)


def wiki_body(server: FakeConfluence, **config: Any) -> dict[str, Any]:
    return {
        "name": "team wiki",
        "type": "confluence",
        "config": {
            "url": server.url,
            "username": USER,
            "token": TOKEN,
            "spaces": ["DEV"],
            **config,
        },
    }


def test_sources_lifecycle_masks_secrets_and_keeps_them_on_a_masked_update(
    tmp_path: Path, wiki: FakeConfluence
) -> None:
    created = cli(tmp_path, "sources", "create", write(tmp_path, "s.json", wiki_body(wiki)))
    assert created.exit_code == 0, created.output
    record = json.loads(created.stdout)
    assert record["type"] == "wiki" and record["config"]["token"] == "********"
    # a destination command does not see a source
    missing = cli(tmp_path, "destinations", "get", record["id"])
    assert missing.exit_code == 2 and "not found" in missing.output
    # the record sent back as an update (token masked) keeps the stored token: the check passes
    update = {"config": {**record["config"], "max_num_of_spaces": 3}}
    updated = cli(tmp_path, "sources", "update", "team wiki", write(tmp_path, "u.json", update))
    assert updated.exit_code == 0, updated.output
    assert json.loads(updated.stdout)["config"]["max_num_of_spaces"] == 3
    checked = cli(tmp_path, "sources", "check", "team wiki")
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["status"] == "SUCCESS"
    listed = json.loads(cli(tmp_path, "sources", "list", "--json").stdout)
    assert [c["name"] for c in listed] == ["team wiki"]
    for result in (created, updated, checked):
        assert TOKEN not in result.output
    # a wrong token fails the check with exit 3, and says so without the token
    bad = {"config": {**record["config"], "token": "wrong-t0ken"}}
    cli(tmp_path, "sources", "update", record["id"][:8], write(tmp_path, "b.json", bad))
    failed = cli(tmp_path, "sources", "check", record["id"])
    assert failed.exit_code == 3 and "wrong-t0ken" not in failed.output
    assert json.loads(failed.stdout)["status"] == "FAILURE"


def test_a_connector_in_use_cannot_be_deleted(tmp_path: Path, wiki: FakeConfluence) -> None:
    source = json.loads(
        cli(tmp_path, "sources", "create", write(tmp_path, "s.json", wiki_body(wiki))).stdout
    )
    body = {**LOCAL_WORKFLOW, "name": "from wiki", "source_id": source["id"]}
    created = cli(tmp_path, "workflows", "create", write(tmp_path, "w.json", body))
    assert created.exit_code == 0, created.output
    refused = cli(tmp_path, "sources", "delete", source["id"])
    assert refused.exit_code == 2 and "used by workflow(s) from wiki" in refused.output
    assert cli(tmp_path, "workflows", "delete", "from wiki").exit_code == 0
    assert cli(tmp_path, "sources", "delete", source["id"]).exit_code == 0


def test_workflows_create_list_update_run_delete(tmp_path: Path) -> None:
    created = cli(tmp_path, "workflows", "create", write(tmp_path, "w.json", LOCAL_WORKFLOW))
    assert created.exit_code == 0, created.output
    record = json.loads(created.stdout)
    assert record["sources"] == [] and record["destinations"] == []
    assert all(n["id"] for n in record["workflow_nodes"])
    again = cli(tmp_path, "workflows", "create", write(tmp_path, "w.json", LOCAL_WORKFLOW))
    assert again.exit_code == 2 and "already exists" in again.output
    listed = cli(tmp_path, "workflows", "list")
    assert "local fast" in listed.stdout and "Partitioner → Chunker" in listed.stdout
    # an update is checked whole: a schedule on a local source is refused
    bad = cli(
        tmp_path,
        "workflows",
        "update",
        "local fast",
        write(tmp_path, "u.json", {"schedule": "daily"}),
    )
    assert bad.exit_code == 2 and "local source cannot have a schedule" in bad.output
    nodes = record["workflow_nodes"]
    nodes[1]["settings"] = {"max_characters": 120}
    changed = cli(
        tmp_path,
        "workflows",
        "update",
        record["id"],
        write(tmp_path, "u.json", {"workflow_nodes": nodes}),
    )
    assert changed.exit_code == 0, changed.output
    new = json.loads(changed.stdout)
    assert [n["id"] for n in new["workflow_nodes"]] == [n["id"] for n in nodes]
    assert new["workflow_nodes"][1]["settings"]["max_characters"] == 120 and new["updated_at"]
    doc = tmp_path / "doc.txt"
    doc.write_text("A first paragraph about ingestion. " * 12 + "\n\nA second one.")
    ran = runner.invoke(
        app,
        [
            "workflows",
            "run",
            "local fast",
            "-i",
            str(doc),
            "-o",
            str(tmp_path / "out"),
            "--json",
            "--workers",
            "1",
            "--workspace",
            str(tmp_path / "ws"),
        ],
    )
    assert ran.exit_code == 0, ran.output
    job = json.loads(ran.stdout)
    assert job["workflow_id"] == record["id"] and job["job_type"] == "persistent"
    chunks = json.loads(next((tmp_path / "out").rglob("*.json")).read_text())
    assert len(chunks) > 1 and all(len(c["text"]) <= 120 for c in chunks)
    jobs = json.loads(cli(tmp_path, "jobs", "list", "--json", "--workflow", record["id"]).stdout)
    assert [j["id"] for j in jobs] == [job["id"]]
    assert cli(tmp_path, "workflows", "delete", record["id"]).exit_code == 0
    gone = cli(tmp_path, "workflows", "get", record["id"])
    assert gone.exit_code == 2 and "not found" in gone.output


def test_a_workflow_naming_a_missing_connector_is_refused(tmp_path: Path) -> None:
    body = {**LOCAL_WORKFLOW, "destination_id": "no-such-id"}
    result = cli(tmp_path, "workflows", "create", write(tmp_path, "w.json", body))
    assert result.exit_code == 2
    assert "destination_id" in result.output and "no stored destination" in result.output


def test_templates_list_and_get() -> None:
    listed = runner.invoke(app, ["templates", "list", "--json"])
    ids = [t["id"] for t in json.loads(listed.stdout)]
    assert {"hi_res_partition", "hi_res_and_enrichment", "fast_chunk_embed"} <= set(ids)
    detail = json.loads(runner.invoke(app, ["templates", "get", "fast_chunk_embed"]).stdout)
    assert [n["type"] for n in detail["nodes"]] == ["partition", "chunk", "embed"]
    assert all(n["id"] for n in detail["nodes"])
    missing = runner.invoke(app, ["templates", "get", "nope"])
    assert missing.exit_code == 2 and "fast_partition" in missing.output


def test_keys_are_shown_once_and_stored_as_digests(tmp_path: Path) -> None:
    made = cli(tmp_path, "keys", "create", "--name", "laptop")
    assert made.exit_code == 0, made.output
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("ifk_") and len(key) > 40
    db = sqlite3.connect(tmp_path / "ws" / "ingestflow.db")
    stored = " ".join(str(v) for row in db.execute("SELECT * FROM api_keys") for v in row)
    db.close()
    assert key not in stored and key[4:] not in stored
    listed = cli(tmp_path, "keys", "list", "--json")
    (record,) = json.loads(listed.stdout)
    assert record["name"] == "laptop" and record["ends_with"] == key[-4:]
    assert key not in listed.output
    assert cli(tmp_path, "keys", "revoke", record["id"][:8]).exit_code == 0
    assert json.loads(cli(tmp_path, "keys", "list", "--json").stdout)[0]["revoked_at"]
    from ingestflow.service import Service

    with Service(tmp_path / "ws") as service:
        assert not service.keys.verify(key)
