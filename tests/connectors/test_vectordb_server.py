"""The vectordb destination and `ingestflow vectordb` against a real Milvus server (http://).

One standalone server for the whole test session (`milvus_server` in conftest.py: PyPI's `milvus`
wheel, authorization on); each test uses collections of its own. The server is Milvus 2.3: it
counts VARCHAR sizes in UTF-8 bytes and keeps duplicate primary keys on insert, unlike Lite.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.cli import vectordb as cli_vectordb
from ingestflow.connectors.vectordb import VectorDBConfig
from ingestflow.connectors.vectordb_admin import check_connection
from ingestflow.connectors.vectordb_destination import (
    VectorDBDestination,
    create_collection,
    search,
)
from ingestflow.elements import Document
from ingestflow.errors import ConnectorError, DocumentError
from ingestflow.service import admin
from tests.connectors.conftest import SERVER_DB, SERVER_PASSWORD, SERVER_USER, root_client
from tests.milvus_server import MilvusServer, free_ports

# a Milvus server process, and `ingestflow` runs in processes of their own: all of it heavy
pytestmark = pytest.mark.slow

DIM = 4
MAIN = "from ingestflow.cli import main; main()"
FAST = {"strategy": "fast"}
runner = CliRunner()


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def config(server: MilvusServer, collection: str, **over: Any) -> VectorDBConfig:
    """The connector config of SERVER_USER in SERVER_DB (override any field)."""
    fields: dict[str, Any] = {
        "user": SERVER_USER,
        "uri": server.uri,
        "db_name": SERVER_DB,
        "password": SecretStr(SERVER_PASSWORD),
        "collection_name": collection,
    }
    return VectorDBConfig(**(fields | over))


def make(server: MilvusServer, schema: str = "minimal", dim: int = DIM) -> str:
    """A new collection in SERVER_DB, made by the code under test as SERVER_USER."""
    name = unique(schema)
    create_collection(
        server.uri,
        name,
        dim,
        schema,
        db_name=SERVER_DB,
        user=SERVER_USER,
        password=SERVER_PASSWORD,
    )
    return name


def doc(record_id: str, ids: list[str], text: str = "hello") -> Document:
    elements = [
        {
            "type": "NarrativeText",
            "element_id": eid,
            "text": f"{text} {eid}",
            "metadata": {"filename": f"{record_id}.txt"},
            "embeddings": [1.0, float(i + 1), 0.5, 0.25],
        }
        for i, eid in enumerate(ids)
    ]
    return Document(record_id, record_id, f"{record_id}.txt", elements=elements)


WORKFLOW = {
    "name": "to a server",
    "workflow_type": "custom",
    "workflow_nodes": [
        {"name": "P", "type": "partition", "subtype": "unstructured_api", "settings": FAST},
        {"name": "C", "type": "chunk", "subtype": "chunk_by_title", "settings": {}},
        {
            "name": "E",
            "type": "embed",
            "subtype": "ibm",
            "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
        },
    ],
}


def connector(uri: str, collection: str) -> dict[str, Any]:
    """A vectordb destination connector file's body, as SERVER_USER in SERVER_DB."""
    config = {
        "user": SERVER_USER,
        "uri": uri,
        "db_name": SERVER_DB,
        "password": SERVER_PASSWORD,
        "collection_name": collection,
    }
    return {"name": "server", "type": "vectordb", "config": config}


def rows(server: MilvusServer, collection: str, expr: str = "") -> list[dict[str, Any]]:
    """Every row, checked against `count(*)`: a query shows one row of a duplicated primary key
    (a server keeps both on insert), the count counts both."""
    client = root_client(server, SERVER_DB)
    try:
        client.load_collection(collection)
        strong = {"consistency_level": "Strong"}
        got = client.query(
            collection,
            filter=expr or 'element_id != ""',
            output_fields=["element_id", "record_id", "text"],
            limit=1000,
            **strong,
        )
        (counted,) = client.query(collection, filter=expr, output_fields=["count(*)"], **strong)
    finally:
        client.close()
    assert counted["count(*)"] == len(got), f"duplicate rows: {counted} for {len(got)} ids"
    return got


# --- connection -----------------------------------------------------------------------------


def test_user_password_and_db_name_reach_their_own_database(milvus_server: MilvusServer) -> None:
    name = make(milvus_server)
    dest = VectorDBDestination(config(milvus_server, name))
    dest.precheck(DIM)
    dest.write(doc("r1", ["r1-a", "r1-b"]))
    dest.close()
    assert sorted(r["element_id"] for r in rows(milvus_server, name)) == ["r1-a", "r1-b"]
    default_db = root_client(milvus_server)
    try:  # the collection lives in SERVER_DB only
        assert not default_db.has_collection(name)
    finally:
        default_db.close()
    assert check_connection(config(milvus_server, name)).ok
    # the same collection name in the default database does not exist
    with pytest.raises(ConnectorError, match=rf"collection '{name}' does not exist in Milvus"):
        VectorDBDestination(config(milvus_server, name, db_name="")).precheck(DIM)


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"password": SecretStr("wrong-Pa55")}, r"cannot open Milvus at http://127\.0\.0\.1:\d+"),
        ({"user": "nobody"}, r"cannot open Milvus at http://127\.0\.0\.1:\d+"),
        ({"db_name": "no_such_db"}, r"database 'no_such_db' does not exist on this server"),
    ],
    ids=["password", "user", "db_name"],
)
def test_bad_credentials_or_database_fail_in_one_line_without_the_secret(
    milvus_server: MilvusServer, over: dict[str, Any], message: str
) -> None:
    dest = VectorDBDestination(config(milvus_server, "anything", **over))
    with pytest.raises(ConnectorError, match=message) as caught:
        dest.precheck(DIM)
    text = str(caught.value)
    assert "\n" not in text and "Traceback" not in text
    assert SERVER_PASSWORD not in text and "wrong-Pa55" not in text
    assert not check_connection(config(milvus_server, "anything", **over)).ok


def test_server_down_at_precheck_is_one_line() -> None:
    (port,) = free_ports(1)  # nothing listens there
    uri = f"http://127.0.0.1:{port}"
    dest = VectorDBDestination(VectorDBConfig(**connector(uri, "c")["config"]))
    with pytest.raises(ConnectorError, match=rf"cannot open Milvus at http://127.0.0.1:{port}"):
        dest.precheck(DIM)


# --- schema ---------------------------------------------------------------------------------


def test_schema_check_on_the_server(milvus_server: MilvusServer) -> None:
    name = make(milvus_server, dim=8)
    with pytest.raises(ConnectorError, match=r"dimension 8, but the workflow's embedder makes 4"):
        VectorDBDestination(config(milvus_server, name)).precheck(DIM)
    from pymilvus import DataType

    client = root_client(milvus_server, SERVER_DB)
    bare = unique("bare")
    try:  # no record_id, and an L2 index
        schema = client.create_schema(auto_id=False)
        schema.add_field("element_id", DataType.VARCHAR, max_length=200, is_primary=True)
        schema.add_field("embeddings", DataType.FLOAT_VECTOR, dim=DIM)
        schema.add_field("text", DataType.VARCHAR, max_length=100)
        index = client.prepare_index_params()
        index.add_index("embeddings", index_type="FLAT", metric_type="L2")
        client.create_collection(bare, schema=schema, index_params=index)
    finally:
        client.close()
    with pytest.raises(ConnectorError, match=r"\(2 problem\(s\)\)") as caught:
        VectorDBDestination(config(milvus_server, bare)).precheck(DIM)
    assert "field 'record_id' is missing" in str(caught.value)
    assert "indexed with metric L2; the metric must be COSINE" in str(caught.value)


def test_create_collection_on_a_2_3_server(milvus_server: MilvusServer) -> None:
    """Milvus 2.3 has no INVERTED index (record_id gets Trie) and ignores `nullable`: the minimal
    schema is made (its `type` is always filled), the recommended one refused and not kept."""
    name = make(milvus_server)
    client = root_client(milvus_server, SERVER_DB)
    try:
        index = client.describe_index(name, client.list_indexes(name, field_name="record_id")[0])
        assert index["index_type"] == "Trie"
        recommended = unique("recommended")
        with pytest.raises(ConnectorError, match=r"does not support nullable fields.*not kept"):
            create_collection(
                milvus_server.uri,
                recommended,
                DIM,
                "recommended",
                db_name=SERVER_DB,
                user=SERVER_USER,
                password=SERVER_PASSWORD,
            )
        assert not client.has_collection(recommended)
    finally:
        client.close()


# --- sizes and replace ----------------------------------------------------------------------


def test_varchar_limits_are_utf8_bytes_as_the_server_counts_them(
    milvus_server: MilvusServer,
) -> None:
    from pymilvus import DataType, MilvusException

    client = root_client(milvus_server, SERVER_DB)
    name = unique("bytes")
    schema = client.create_schema(auto_id=False)
    schema.add_field("element_id", DataType.VARCHAR, max_length=200, is_primary=True)
    schema.add_field("embeddings", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("record_id", DataType.VARCHAR, max_length=200)
    schema.add_field("text", DataType.VARCHAR, max_length=10)
    index = client.prepare_index_params()
    index.add_index("embeddings", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index)
    six = "é" * 6  # 6 characters, 12 bytes: Lite would take it, the server does not
    row = {"element_id": "raw", "embeddings": [1.0] * DIM, "record_id": "raw", "text": six}
    try:
        with pytest.raises(MilvusException, match=r"length|exceed"):
            client.insert(name, [row])
    finally:
        client.close()
    strict = VectorDBDestination(config(milvus_server, name))
    strict.precheck(DIM)
    bad = Document("r", "r", "r.txt", elements=[{**row, "element_id": "e1", "metadata": {}}])
    with pytest.raises(DocumentError, match=r"field 'text' is 12 bytes \(UTF-8\), over its"):
        strict.write(bad)
    cutting = VectorDBDestination(config(milvus_server, name), varchar_policy={"text": "truncate"})
    cutting.precheck(DIM)
    cutting.write(bad)
    assert [r["text"] for r in rows(milvus_server, name)] == ["é" * 5]  # 10 bytes, whole chars


def test_rewrite_leaves_one_set_of_rows(milvus_server: MilvusServer) -> None:
    name = make(milvus_server)
    dest = VectorDBDestination(config(milvus_server, name), batch_size=2)
    dest.precheck(DIM)
    dest.write(doc("keep", ["k-1"]))
    ids = [f"r-{i}" for i in range(5)]
    dest.write(doc("r", ids, "v1"))
    # the same ids again: replaced, not duplicated (a server's plain insert would keep both)
    dest.write(doc("r", ids, "v2"))
    got = rows(milvus_server, name, 'record_id == "r"')
    assert sorted(r["element_id"] for r in got) == ids
    assert {r["text"] for r in got} == {f"v2 {i}" for i in ids}
    dest.write(doc("r", ["r-1", "r-new"], "v3"))  # fewer, one new: the stale ones go
    got = rows(milvus_server, name, 'record_id == "r"')
    assert sorted(r["element_id"] for r in got) == ["r-1", "r-new"]
    assert [r["element_id"] for r in rows(milvus_server, name, 'record_id == "keep"')] == ["k-1"]
    # a new destination (a later run) finds the stored rows through queries
    again = VectorDBDestination(config(milvus_server, name))
    again.precheck(DIM)
    again.write(doc("r", ["r-new"], "v4"))
    assert [r["text"] for r in rows(milvus_server, name, 'record_id == "r"')] == ["v4 r-new"]


# --- a server that goes away ----------------------------------------------------------------


@pytest.mark.timeout(900)  # a server restarted mid-run: ~60 s on a quiet machine
def test_server_restarted_mid_run(milvus_server: MilvusServer, capfd: Any) -> None:
    """Down: the document fails with one line and the writer goes on. Back (its collection
    released by the restart): the next write loads it again and succeeds; nothing is lost."""
    name = make(milvus_server)
    dest = VectorDBDestination(config(milvus_server, name))
    dest.precheck(DIM)
    dest.write(doc("before", ["b-1", "b-2"]))
    capfd.readouterr()
    milvus_server.kill()
    try:
        with pytest.raises(DocumentError, match=r"^vectordb: record during \(during.txt\): ") as e:
            dest.write(doc("during", ["d-1"]))
    finally:
        milvus_server.start()
    assert "\n" not in str(e.value) and "vectordb: vectordb:" not in str(e.value)
    assert "Traceback" not in capfd.readouterr().err  # pymilvus's own logs stay quiet
    root = root_client(milvus_server, SERVER_DB)
    try:  # released, whether or not the restarted server began to load it again
        root.release_collection(name)
    finally:
        root.close()
    dest.write(doc("during", ["d-1"]))
    dest.write(doc("after", ["a-1"]))
    dest.close()
    got = sorted(r["element_id"] for r in rows(milvus_server, name))
    assert got == ["a-1", "b-1", "b-2", "d-1"]


# --- the CLI --------------------------------------------------------------------------------


def test_cli_create_collection_and_search(
    milvus_server: MilvusServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = unique("cli")
    conn = ["--uri", milvus_server.uri, "--user", SERVER_USER, "--db-name", SERVER_DB]
    env = {cli_vectordb.PASSWORD_ENV: SERVER_PASSWORD}
    create = ["vectordb", "create-collection", *conn, "--collection", name]
    made = runner.invoke(app, create, env=env)
    assert made.exit_code == 0, made.output
    assert f"created collection '{name}' (minimal schema" in made.output
    assert "type: VARCHAR(max_length=200)" in made.output
    dest = VectorDBDestination(config(milvus_server, name))
    dest.precheck(384)
    for i, rid in enumerate(["cats", "dogs"]):
        vector = [1.0 if j == i else 0.0 for j in range(384)]
        element = {"type": "T", "element_id": rid, "text": f"about {rid}", "embeddings": vector}
        dest.write(Document(rid, rid, f"{rid}.txt", elements=[{**element, "metadata": {}}]))
    dest.close()
    monkeypatch.setattr(admin, "embed_query", lambda text: [0.0, 1.0] + [0.0] * 382)
    found = runner.invoke(
        app, ["vectordb", "search", *conn, "--collection", name, "barking", "-k", "2"], env=env
    )
    assert found.exit_code == 0, found.output
    assert found.output.splitlines()[0].startswith(" 1. 1.0000  record dogs")
    assert SERVER_PASSWORD not in made.output + found.output
    hits = search(
        milvus_server.uri,
        name,
        [1.0] + [0.0] * 383,
        k=1,
        db_name=SERVER_DB,
        user=SERVER_USER,
        password=SERVER_PASSWORD,
    )
    assert [h.record_id for h in hits] == ["cats"]
    bad = runner.invoke(
        app, ["vectordb", "search", *conn, "--collection", name, "x"], env={"X": "no password"}
    )
    assert bad.exit_code == 3 and "cannot open Milvus" in bad.output


def test_run_with_the_server_down_at_precheck_exits_3(tmp_path: Path) -> None:
    """`ingestflow run` in its own process: exit 3, one line, no traceback."""
    (port,) = free_ports(1)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("Hello there.\n")
    conn = tmp_path / "milvus.json"
    conn.write_text(json.dumps(connector(f"http://127.0.0.1:{port}", "elements")))
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps(WORKFLOW))
    args = ["run", str(wf), "-i", str(tmp_path / "in"), "--destination", str(conn)]
    ran = subprocess.run(
        [sys.executable, "-c", MAIN, *args, "--workspace", str(tmp_path / "ws")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert ran.returncode == 3, (ran.stdout, ran.stderr)
    # the error in one line, beside the progress lines (timestamped) that slow checks print
    said = [
        line
        for line in (ran.stdout + ran.stderr).splitlines()
        if line.strip() and not re.match(r"\d{4}-\d\d-\d\d \d", line)
    ]
    assert len(said) == 1, said
    assert f"cannot open Milvus at http://127.0.0.1:{port}" in said[0]
    assert "Traceback" not in ran.stderr and SERVER_PASSWORD not in ran.stderr + ran.stdout


@pytest.mark.slow
def test_run_files_into_the_server_twice_then_search(
    milvus_server: MilvusServer, tmp_path: Path
) -> None:
    """`ingestflow run` (partition, chunk, the local embedder) into the server; a re-run replaces
    every document's rows (same rows, none twice), and `vectordb search` finds the right one."""
    name = make(milvus_server, dim=384)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "finance.txt").write_text(
        "Interest rates\n\nThe central bank raised interest rates to curb inflation.\n"
    )
    (tmp_path / "in" / "garden.md").write_text("# Tomatoes\n\nWater tomato plants twice a week.\n")
    conn = tmp_path / "server.json"
    conn.write_text(json.dumps(connector(milvus_server.uri, name)))
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps({**WORKFLOW, "reprocess_all": True}))
    args = ["run", str(wf), "-i", str(tmp_path / "in"), "--destination", str(conn)]
    args += ["--workspace", str(tmp_path / "ws"), "--workers", "1"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    written = sorted((r["record_id"], r["text"]) for r in rows(milvus_server, name))
    assert len(written) >= 2 and len({r for r, _ in written}) == 2
    again = runner.invoke(app, args)  # reprocess_all (the default): every document again
    assert again.exit_code == 0, again.output
    assert sorted((r["record_id"], r["text"]) for r in rows(milvus_server, name)) == written
    conn_args = ["--uri", milvus_server.uri, "--user", SERVER_USER, "--db-name", SERVER_DB]
    found = runner.invoke(
        app,
        ["vectordb", "search", *conn_args, "--collection", name, "monetary policy", "-k", "1"],
        env={cli_vectordb.PASSWORD_ENV: SERVER_PASSWORD},
    )
    assert found.exit_code == 0, found.output
    assert "The central bank raised interest rates" in found.output  # minimal schema: no filename
