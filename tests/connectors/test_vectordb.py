"""The vectordb destination on a real Milvus Lite database (one per module)."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from ingestflow.connectors import vectordb_destination as vectordb
from ingestflow.connectors import vectordb_queries
from ingestflow.connectors.check import check_connector
from ingestflow.connectors.vectordb import VectorDBConfig
from ingestflow.connectors.vectordb_destination import (
    VectorDBDestination,
    check_connection,
    create_collection,
    search,
)
from ingestflow.connectors.vectordb_rows import RowBuilder, flatten_metadata
from ingestflow.connectors.vectordb_schema import FieldSpec, SchemaInfo, check_schema
from ingestflow.connectors.vectordb_values import cut_utf8
from ingestflow.elements import Document
from ingestflow.errors import ConnectorError, DocumentError

DIM = 4
SECRET = "s3cr3t-Pa55word"


# --- helpers ------------------------------------------------------------------------------------


def vector(i: int) -> list[float]:
    return [1.0, float(i % 7) / 7, float(i % 3) / 3, 0.5]


def element(eid: str, text: str = "hello", *, embeddings: Any = "auto", **metadata: Any):
    out: dict[str, Any] = {
        "type": "NarrativeText",
        "element_id": eid,
        "text": text,
        "metadata": metadata,
    }
    if embeddings == "auto":
        out["embeddings"] = vector(len(eid))
    elif embeddings is not None:
        out["embeddings"] = embeddings
    return out


def document(record_id: str, elements: list[dict[str, Any]], filename: str = "a.txt"):
    return Document(id=record_id, record_id=record_id, filename=filename, elements=elements)


def full_metadata() -> dict[str, Any]:
    """Every metadata field SPEC.md names, as `unstructured`'s `to_dict()` writes them."""
    return {
        "is_extracted": "true",
        "coordinates": {
            "points": [[0.0, 0.0], [0.0, 10.5], [20.0, 10.5], [20.0, 0.0]],
            "system": "PixelSpace",
            "layout_width": 1700,
            "layout_height": 2200,
        },
        "filetype": "application/pdf",
        "languages": ["eng", "deu"],
        "page_number": 3,
        "image_mime_type": "image/png",
        "image_base64": "aGVsbG8=",
        "filename": "report.pdf",
        "text_as_html": "<table><tr><td>1</td></tr></table>",
        "data_source": {
            "url": "file:///data/report.pdf",
            "record_locator": {"protocol": "file", "remote_file_path": "/data/report.pdf"},
            "permissions_data": [{"read": {"users": ["u1"], "groups": []}}],
        },
        "entities": {
            "items": [{"entity": "Ada", "type": "PERSON"}],
            "relationships": [{"from": "Ada", "relationship": "works_for", "to": "ACME"}],
        },
    }


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("milvus") / "test.db")


@pytest.fixture(scope="module")
def client(db: str) -> Iterator[Any]:
    from pymilvus import MilvusClient

    vectordb.quiet_pymilvus_logs()
    c = MilvusClient(db)
    yield c
    c.close()


@pytest.fixture(scope="module")
def recommended(db: str, client: Any) -> str:
    """A collection with SPEC.md's recommended schema, shared by tests (distinct record ids)."""
    create_collection(db, "recommended", dim=DIM, schema="recommended")
    return "recommended"


def config(uri: str, collection: str, password: str = SECRET) -> VectorDBConfig:
    return VectorDBConfig(
        user="alice",
        uri=uri,
        db_name="",
        password=SecretStr(password),
        collection_name=collection,
    )


def destination(db: str, collection: str, **options: Any) -> VectorDBDestination:
    dest = VectorDBDestination(config(db, collection), **options)
    dest.precheck(DIM)
    return dest


def stored(client: Any, collection: str, record_id: str) -> dict[str, dict[str, Any]]:
    expr = f"record_id == {vectordb_queries.literal(record_id)}"
    rows = client.query(collection, filter=expr, output_fields=["*"])
    return {row["element_id"]: row for row in rows}


def custom_collection(
    client: Any, name: str, extra: list[tuple], metric: str = "COSINE", **options: Any
) -> str:
    """The minimal schema plus `extra` fields (name, DataType name, kwargs), COSINE-indexed."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, **options)
    for fname, type_name, kwargs in vectordb.MINIMAL_FIELDS + extra:
        kwargs = dict(kwargs)
        if "element_type" in kwargs:
            kwargs["element_type"] = DataType[kwargs["element_type"]]
        if type_name == "FLOAT_VECTOR":
            kwargs.setdefault("dim", DIM)
        schema.add_field(fname, DataType[type_name], **kwargs)
    index = client.prepare_index_params()
    index.add_index("embeddings", index_type="AUTOINDEX", metric_type=metric)
    client.create_collection(name, schema=schema)
    client.create_index(name, index, sync=False)  # Lite indexes at once; no polling
    client.load_collection(name)
    return name


# --- precheck -----------------------------------------------------------------------------------


def test_precheck_missing_collection_shows_the_command(db: str, client: Any) -> None:
    dest = VectorDBDestination(config(db, "nowhere"))
    with pytest.raises(ConnectorError, match="collection 'nowhere' does not exist") as info:
        dest.precheck(DIM)
    assert f"ingestflow vectordb create-collection --uri {db} --collection nowhere --dim 4" in str(
        info.value
    )


def test_precheck_collection_without_the_minimal_schema(db: str, client: Any) -> None:
    client.create_collection("quick", dimension=DIM)  # id INT64 + vector: not SPEC.md's schema
    dest = VectorDBDestination(config(db, "quick"))
    with pytest.raises(ConnectorError, match=r"does not fit the workflow \(6 problem") as info:
        dest.precheck(DIM)
    message = str(info.value)
    for name, want in [
        ("element_id", "VARCHAR(max_length=200), primary key"),
        ("embeddings", "FLOAT_VECTOR"),
        ("record_id", "VARCHAR(max_length=200)"),
        ("text", "VARCHAR(max_length=65535)"),
    ]:
        assert f"field '{name}' is missing; it should be {want}" in message
    assert "field 'id' is the primary key; the primary key must be 'element_id'" in message
    assert "field 'vector' is FLOAT_VECTOR(dim=4), a type the writer cannot fill" in message
    assert "create-collection" in message


def test_precheck_wrong_types_name_field_found_and_wanted(db: str, client: Any) -> None:
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False)
    schema.add_field("element_id", DataType.VARCHAR, max_length=200, is_primary=True)
    schema.add_field("embeddings", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("record_id", DataType.INT64)
    schema.add_field("text", DataType.VARCHAR, max_length=65535)
    schema.add_field("type", DataType.INT32, nullable=True)
    schema.add_field("page_number", DataType.ARRAY, element_type=DataType.INT64, max_capacity=4)
    schema.add_field("languages", DataType.INT32, nullable=True)
    schema.add_field("coordinates_points", DataType.VARCHAR, max_length=100, nullable=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    index = client.prepare_index_params()
    index.add_index("embeddings", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection("wrongtypes", schema=schema)
    client.create_index("wrongtypes", index, sync=False)
    dest = VectorDBDestination(config(db, "wrongtypes"))
    with pytest.raises(ConnectorError, match=r"\(5 problem\(s\)\)") as info:
        dest.precheck(DIM)
    message = str(info.value)
    assert "field 'record_id' is INT64; it should be VARCHAR" in message
    assert "field 'type' is INT32, nullable; it should be VARCHAR" in message
    assert (
        "field 'page_number' is ARRAY<INT64>(max_capacity=4), but metadata.page_number is an "
        "integer; it should be INT8 or INT16 or INT32 or INT64" in message
    )
    assert "field 'languages' is INT32, nullable, but metadata.languages is an array" in message
    assert "field 'sparse' is SPARSE_FLOAT_VECTOR, a type the writer cannot fill" in message
    assert "coordinates_points" not in message  # a VARCHAR takes the points as JSON text


def test_precheck_dimension_and_missing_embedder(db: str, recommended: str) -> None:
    dest = VectorDBDestination(config(db, recommended))
    with pytest.raises(ConnectorError, match="has dimension 4, but the workflow's embedder makes"):
        dest.precheck(384)
    with pytest.raises(ConnectorError, match="the workflow has no embedder"):
        dest.precheck(None)
    with pytest.raises(ConnectorError, match="precheck\\(\\) must succeed before write"):
        dest.write(document("r-never", [element("x1")]))


def test_precheck_metric_other_than_cosine(db: str, client: Any) -> None:
    custom_collection(client, "l2", [], metric="L2")
    with pytest.raises(ConnectorError, match=r"indexed with metric L2; the metric must be COSINE"):
        VectorDBDestination(config(db, "l2")).precheck(DIM)


def test_precheck_policies_that_cannot_be_honoured(db: str, recommended: str) -> None:
    dest = VectorDBDestination(
        config(db, recommended),
        varchar_policy={
            "text": "drop",
            "element_id": "truncate",
            "no_such_field": "drop",
            "filename": "chop",
            "entities_items": "truncate",
            "page_number": "drop",
        },
    )
    with pytest.raises(ConnectorError, match=r"\(6 problem\(s\)\)") as info:
        dest.precheck(DIM)
    message = str(info.value)
    assert "'text' is not nullable, so its value cannot be dropped" in message
    assert "'element_id' identifies the row" in message
    assert "'no_such_field': the collection has no such field" in message
    assert "varchar_policy for 'filename' is 'chop'" in message
    assert "a JSON value cannot be truncated" in message
    assert "field 'page_number' is INT32, which has no size limit" in message


def test_lite_database_held_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import sys
                from pymilvus import MilvusClient
                client = MilvusClient({str(path)!r})
                print("ready", flush=True)
                sys.stdin.read()
            """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        dest = VectorDBDestination(config(str(path), "c"))
        with pytest.raises(ConnectorError, match="is in use by another process") as info:
            dest.precheck(DIM)
        assert "DataDirLockedError" in str(info.value)
        assert "Traceback" not in str(info.value)
    finally:
        holder.communicate("", timeout=30)


def test_bad_lite_paths(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match=r"a Milvus Lite path must end in .db"):
        VectorDBDestination(config(str(tmp_path / "milvus.sqlite"), "c")).precheck(DIM)
    with pytest.raises(ConnectorError, match=r"folder .*nowhere does not exist"):
        VectorDBDestination(config(str(tmp_path / "nowhere" / "m.db"), "c")).precheck(DIM)
    (tmp_path / "sqlite.db").write_bytes(b"SQLite format 3\x00")
    with pytest.raises(ConnectorError, match=r"sqlite\.db is a file; a Milvus Lite database"):
        VectorDBDestination(config(str(tmp_path / "sqlite.db"), "c")).precheck(DIM)


def test_secrets_never_appear(db: str) -> None:
    uri = f"http://alice:{SECRET}@127.0.0.1:1"
    dest = VectorDBDestination(config(uri, "c"), timeout=2)
    assert SECRET not in repr(dest) and SECRET not in str(dest.milvus)
    with pytest.raises(ConnectorError, match=r"cannot open Milvus at http://alice:\*+@") as info:
        dest.precheck(DIM)
    assert SECRET not in str(info.value)
    checked = check_connection(config("http://127.0.0.1:1", "c"))
    assert not checked.ok and SECRET not in str(checked.reason)
    assert vectordb.mask_uri(uri) == "http://alice:********@127.0.0.1:1"


def test_check_connection(db: str, recommended: str) -> None:
    assert check_connection(config(db, recommended)).ok
    missing = check_connector("vectordb", config(db, "absent"))
    assert not missing.ok and "create-collection" in str(missing.reason)


# --- rows -----------------------------------------------------------------------------------


def test_every_spec_metadata_field_is_flattened_and_stored(
    db: str, client: Any, recommended: str
) -> None:
    assert flatten_metadata(full_metadata())["data_source_record_locator_protocol"] == "file"
    dest = destination(db, recommended)
    assert dest.write(document("r-full", [element("full-1", "a table", **full_metadata())])) == []
    row = stored(client, recommended, "r-full")["full-1"]
    assert row["type"] == "NarrativeText" and row["text"] == "a table"
    assert row["record_id"] == "r-full"
    assert row["is_extracted"] == "true"
    assert row["coordinates_points"] == [[0.0, 0.0], [0.0, 10.5], [20.0, 10.5], [20.0, 0.0]]
    assert row["coordinates_system"] == "PixelSpace"
    assert (row["coordinates_layout_width"], row["coordinates_layout_height"]) == (1700, 2200)
    assert row["filetype"] == "application/pdf"
    assert row["languages"] == ["eng", "deu"]
    assert row["page_number"] == 3
    assert row["image_mime_type"] == "image/png"
    assert row["filename"] == "report.pdf"
    assert row["data_source_url"] == "file:///data/report.pdf"
    assert row["data_source_record_locator_protocol"] == "file"
    assert row["data_source_record_locator_remote_file_path"] == "/data/report.pdf"
    assert row["entities_items"] == [{"entity": "Ada", "type": "PERSON"}]
    assert row["entities_relationships"] == [
        {"from": "Ada", "relationship": "works_for", "to": "ACME"}
    ]
    assert "image_base64" not in row  # not a field of the collection: not written
    dest.close()


def test_missing_nullable_metadata_is_null(db: str, client: Any, recommended: str) -> None:
    dest = destination(db, recommended)
    dest.write(document("r-bare", [element("bare-1")]))
    row = stored(client, recommended, "r-bare")["bare-1"]
    assert row["page_number"] is None and row["languages"] is None and row["filename"] is None
    dest.close()


@pytest.mark.parametrize("row_index", [True, False], ids=["row-index", "queries"])
def test_rerun_replaces_the_documents_rows(
    db: str, client: Any, recommended: str, row_index: bool
) -> None:
    rid = f'r-"re\\run"-{row_index}'  # quotes and a backslash survive the filter expressions
    dest = destination(db, recommended, row_index=row_index, batch_size=2)
    first = [element(f"{rid}-{i}", f"v1 {i}", page_number=i) for i in range(5)]
    dest.write(document(rid, first))
    dest.write(document(rid, first))
    assert sorted(stored(client, recommended, rid)) == sorted(e["element_id"] for e in first)
    fewer = [element(f"{rid}-{i}", f"v2 {i}") for i in range(2)]
    dest.write(document(rid, fewer))
    rows = stored(client, recommended, rid)
    assert sorted(rows) == [f"{rid}-0", f"{rid}-1"]
    assert {r["text"] for r in rows.values()} == {"v2 0", "v2 1"}
    assert all(r["page_number"] is None for r in rows.values())  # nothing kept from v1
    fresh = [element(str(uuid.uuid4()), "v3") for _ in range(3)]  # unique_element_ids: new ids
    dest.write(document(rid, fresh))
    assert sorted(stored(client, recommended, rid)) == sorted(e["element_id"] for e in fresh)
    dest.write(document(rid, []))
    assert stored(client, recommended, rid) == {}
    dest.close()


def test_rows_of_an_earlier_run_are_found_by_a_new_destination(
    db: str, client: Any, recommended: str
) -> None:
    first = destination(db, recommended)
    first.write(document("r-two-runs", [element(f"two-{i}") for i in range(4)]))
    first.close()
    second = destination(db, recommended)  # reads the stored rows afresh
    second.write(document("r-two-runs", [element("two-0")]))
    assert sorted(stored(client, recommended, "r-two-runs")) == ["two-0"]
    second.close()


def test_record_larger_than_one_query_window(
    db: str, client: Any, recommended: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectordb_queries, "QUERY_WINDOW", 3)
    dest = destination(db, recommended, row_index=False)
    dest.write(document("r-window", [element(f"win-{i}") for i in range(7)]))
    dest.write(document("r-window", [element("win-0")]))
    assert sorted(stored(client, recommended, "r-window")) == ["win-0"]
    dest.close()


class Failing:
    """Wraps a client method; the `fail_on`-th call raises, like a server that drops mid-write."""

    def __init__(self, method: Any, fail_on: int) -> None:
        self.method, self.fail_on, self.calls = method, fail_on, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == self.fail_on:
            from pymilvus.exceptions import MilvusException

            raise MilvusException(code=65535, message="injected: connection reset")
        return self.method(*args, **kwargs)


@pytest.mark.parametrize("row_index", [True, False], ids=["row-index", "queries"])
@pytest.mark.parametrize(
    ("new_ids", "method", "fail_on"),
    [(True, "insert", 2), (False, "insert", 2), (True, "delete", 1)],
    ids=["new-ids-insert-fails", "same-ids-replace-fails", "stale-delete-fails"],
)
def test_failure_midway_keeps_the_earlier_rows(
    db: str,
    client: Any,
    recommended: str,
    row_index: bool,
    new_ids: bool,
    method: str,
    fail_on: int,
) -> None:
    rid = f"r-fail-{new_ids}-{method}-{row_index}"
    dest = destination(db, recommended, row_index=row_index, batch_size=2)
    old = [element(f"{rid}-{i}", f"old {i}", page_number=i) for i in range(5)]
    dest.write(document(rid, old))
    before = stored(client, recommended, rid)
    prefix = f"{rid}-new" if new_ids else rid
    new = [element(f"{prefix}-{i}", f"new {i}") for i in range(4)]
    assert dest._client is not None
    setattr(dest._client, method, Failing(getattr(dest._client, method), fail_on))
    with pytest.raises(DocumentError, match=r"injected: connection reset.*earlier rows were kept"):
        dest.write(document(rid, new))
    delattr(dest._client, method)
    after = stored(client, recommended, rid)
    assert sorted(after) == sorted(before)
    for eid, row in before.items():
        assert after[eid]["text"] == row["text"]
        assert after[eid]["page_number"] == row["page_number"]
        assert after[eid]["embeddings"] == pytest.approx(row["embeddings"])
    dest.write(document(rid, new))  # the next write succeeds and leaves exactly the new rows
    assert sorted(stored(client, recommended, rid)) == sorted(e["element_id"] for e in new)
    dest.close()


def test_element_id_of_another_record_fails_with_nothing_changed(
    db: str, client: Any, recommended: str
) -> None:
    dest = destination(db, recommended)
    dest.write(document("r-owner", [element("shared-id", "mine")]))
    with pytest.raises(DocumentError, match=r"already stored for another record.*r-owner"):
        dest.write(document("r-thief", [element("shared-id", "theirs"), element("thief-2")]))
    assert stored(client, recommended, "r-owner")["shared-id"]["text"] == "mine"
    assert stored(client, recommended, "r-thief") == {}
    with pytest.raises(DocumentError, match="element_id dup appears 2 times"):
        dest.write(document("r-dup", [element("dup"), element("dup")]))
    dest.close()


def test_varchar_limit_is_counted_in_utf8_bytes(db: str, client: Any, recommended: str) -> None:
    dest = destination(db, recommended)
    name = "é" * 2100  # 2,100 characters (under 4,096) but 4,200 bytes (over it)
    with pytest.raises(DocumentError, match=r"field 'filename' is 4,200 bytes \(UTF-8\), over its"):
        dest.write(document("r-bytes", [element("bytes-1", filename=name)]))
    assert stored(client, recommended, "r-bytes") == {}
    dest.write(document("r-bytes", [element("bytes-1", filename="é" * 2048)]))  # 4,096 bytes
    assert stored(client, recommended, "r-bytes")["bytes-1"]["filename"] == "é" * 2048
    dest.close()


@pytest.fixture(scope="module")
def wide(client: Any) -> str:
    """Minimal schema plus an image_base64 VARCHAR(65535) and the recommended languages array."""
    return custom_collection(
        client,
        "wide",
        [
            ("image_base64", "VARCHAR", {"max_length": 65535, "nullable": True}),
            ("orig_elements", "VARCHAR", {"max_length": 65535, "nullable": True}),
            (
                "languages",
                "ARRAY",
                {"element_type": "VARCHAR", "max_capacity": 10, "max_length": 8, "nullable": True},
            ),
        ],
    )


def test_oversized_varchar_fails_by_default_naming_field_element_and_size(
    db: str, client: Any, wide: str
) -> None:
    dest = destination(db, wide)
    big = "A" * 70_000
    with pytest.raises(
        DocumentError,
        match=r"element big-1: field 'image_base64' is 70,000 bytes \(UTF-8\), over its limit",
    ) as info:
        dest.write(document("r-big", [element("big-1", image_base64=big, orig_elements=big)]))
    assert "field 'orig_elements' is 70,000 bytes" in str(info.value)
    assert "nothing was changed" in str(info.value)
    assert stored(client, wide, "r-big") == {}


def test_varchar_policies_drop_and_truncate_are_reported(db: str, client: Any, wide: str) -> None:
    dest = destination(
        db, wide, varchar_policy={"image_base64": "drop", "orig_elements": "truncate"}
    )
    big = "é" * 40_000  # 80,000 bytes
    warnings = dest.write(
        document("r-policy", [element("pol-1", image_base64=big, orig_elements=big)])
    )
    row = stored(client, wide, "r-policy")["pol-1"]
    assert row["image_base64"] is None
    assert row["orig_elements"] == "é" * 32_767  # 65,534 bytes: cut at a character boundary
    assert any("'image_base64' dropped in 1 value(s)" in w for w in warnings)
    assert any("'orig_elements' truncated to 65,535 bytes" in w for w in warnings)
    assert cut_utf8("aé", 2) == "a"


def test_array_capacity_policies(db: str, client: Any, wide: str) -> None:
    langs = [f"l{i}" for i in range(11)]
    with pytest.raises(DocumentError, match="field 'languages' has 11 items, over max_capacity 10"):
        destination(db, wide).write(document("r-arr", [element("arr-1", languages=langs)]))
    cut = destination(db, wide, varchar_policy={"languages": "truncate"})
    warnings = cut.write(document("r-arr", [element("arr-1", languages=langs)]))
    assert stored(client, wide, "r-arr")["arr-1"]["languages"] == langs[:10]
    assert any("'languages' cut to 10 items" in w for w in warnings)
    drop = destination(db, wide, varchar_policy={"languages": "drop"})
    warnings = drop.write(document("r-arr", [element("arr-1", languages=langs)]))
    assert stored(client, wide, "r-arr")["arr-1"]["languages"] is None
    assert any("'languages' dropped (too many items)" in w for w in warnings)


def server_schema(**extra: FieldSpec) -> SchemaInfo:
    """A schema as a Milvus server describes it (Lite forgets an ARRAY's item max_length)."""
    fields = {
        "element_id": FieldSpec("element_id", "VARCHAR", max_length=200, is_primary=True),
        "embeddings": FieldSpec("embeddings", "FLOAT_VECTOR", dim=2),
        "record_id": FieldSpec("record_id", "VARCHAR", max_length=200),
        "text": FieldSpec("text", "VARCHAR", max_length=65535),
        **extra,
    }
    return SchemaInfo(fields)


def test_array_item_max_length_in_bytes() -> None:
    info = server_schema(
        languages=FieldSpec(
            "languages", "ARRAY", True, element_type="VARCHAR", max_capacity=4, max_length=3
        )
    )
    doc = document("r", [element("e", embeddings=[1.0, 0.0], languages=["eng", "ü00"])])
    with pytest.raises(DocumentError, match="an item of field 'languages' is 4 bytes"):
        RowBuilder(info, {}).build(doc)
    rows, _, notes = RowBuilder(info, {"languages": "truncate"}).build(doc)
    assert rows[0]["languages"] == ["eng", "ü0"]
    assert notes.warnings("r")


def test_schema_without_fields_and_filter_literals() -> None:
    assert check_schema(SchemaInfo({}), DIM, {}) == [
        "the collection has no schema (no fields); it needs at least the minimal one"
    ]
    assert check_schema(server_schema(), 2, {}) == []
    assert vectordb_queries.literal('a"b\\c\n') == '"a\\"b\\\\c\\n"'
    assert vectordb.is_lite("./milvus.db") and not vectordb.is_lite("HTTPS://host:19530")


def test_type_conversions(db: str, client: Any) -> None:
    name = custom_collection(
        client,
        "conversions",
        [
            ("page_number", "VARCHAR", {"max_length": 20, "nullable": True}),
            ("languages", "JSON", {"nullable": True}),
            ("is_extracted", "BOOL", {"nullable": True}),
            ("category_depth", "INT64", {"nullable": True}),
            ("coordinates_layout_width", "DOUBLE", {"nullable": True}),
            ("coordinates_layout_height", "INT8", {"nullable": True}),
            ("data_source", "JSON", {"nullable": True}),
            ("links", "ARRAY", {"element_type": "INT32", "max_capacity": 5, "nullable": True}),
        ],
    )
    dest = destination(db, name)
    metadata: dict[str, Any] = {
        "page_number": 7,
        "languages": ["eng"],
        "is_extracted": "false",
        "category_depth": "2",
        "coordinates": {"layout_width": 10, "layout_height": 100.0},
        "data_source": {"url": "u", "record_locator": {"protocol": "file"}},
        "links": [1, "2", 3.0],
    }
    dest.write(document("r-conv", [element("conv-1", **metadata)]))
    row = stored(client, name, "r-conv")["conv-1"]
    assert row["page_number"] == "7"  # VARCHAR from a number, as JSON text
    assert row["languages"] == ["eng"] and row["is_extracted"] is False
    assert row["category_depth"] == 2 and row["coordinates_layout_width"] == 10.0
    assert row["coordinates_layout_height"] == 100
    assert row["data_source"] == {"url": "u", "record_locator": {"protocol": "file"}}
    assert row["links"] == [1, 2, 3]
    bad: dict[str, Any] = {
        "coordinates": {"layout_height": 300},
        "languages": "eng",
        "links": [True],
    }
    with pytest.raises(DocumentError, match=r"300 is out of INT8's range \[-128, 127\]") as info:
        dest.write(document("r-conv2", [element("conv-2", **bad)]))
    message = str(info.value)
    assert "a JSON field takes an object or an array, and the value is a string" in message
    assert "INT32 takes an integer, and the value is a boolean" in message
    dest.close()


def test_non_nullable_metadata_field_missing(db: str, client: Any) -> None:
    name = custom_collection(client, "strict", [("filename", "VARCHAR", {"max_length": 100})])
    dest = destination(db, name)
    with pytest.raises(DocumentError, match="no value for field 'filename', which is not nullable"):
        dest.write(document("r-strict", [element("strict-1")]))
    dest.write(document("r-strict", [element("strict-1", filename="f.txt")]))
    assert stored(client, name, "r-strict")["strict-1"]["filename"] == "f.txt"


def test_dynamic_collection_takes_every_metadata_leaf(db: str, client: Any) -> None:
    name = custom_collection(client, "dynamic", [], enable_dynamic_field=True)
    dest = destination(db, name, varchar_policy={"image_base64": "drop"})
    metadata = {**full_metadata(), "image_base64": "B" * 70_000, "custom": {"score": 0.5}}
    warnings = dest.write(document("r-dyn", [element("dyn-1", **metadata)]))
    row = stored(client, name, "r-dyn")["dyn-1"]
    assert row["filename"] == "report.pdf" and row["page_number"] == 3
    assert row["data_source_record_locator_remote_file_path"] == "/data/report.pdf"
    assert row["data_source_permissions_data"] == [{"read": {"users": ["u1"], "groups": []}}]
    assert row["custom_score"] == 0.5 and "image_base64" not in row
    assert any("'image_base64' dropped (dynamic field)" in w for w in warnings)
    with pytest.raises(DocumentError, match=r"dynamic fields take 70,0.. bytes of JSON"):
        destination(db, name).write(document("r-dyn2", [element("dyn-2", blob="C" * 70_000)]))


def test_elements_without_embeddings(db: str, client: Any, recommended: str) -> None:
    dest = destination(db, recommended)
    warnings = dest.write(
        document("r-emb", [element("emb-1"), element("emb-2", "  ", embeddings=None)])
    )
    assert sorted(stored(client, recommended, "r-emb")) == ["emb-1"]
    assert any("1 element(s) with empty text and no embeddings" in w for w in warnings)
    with pytest.raises(DocumentError, match="element emb-3: has text but no embeddings"):
        dest.write(document("r-emb", [element("emb-3", "words", embeddings=None)]))
    with pytest.raises(DocumentError, match=r"embeddings has 3 dimensions; .* has 4"):
        dest.write(document("r-emb", [element("emb-4", embeddings=[0.1, 0.2, 0.3])]))
    assert sorted(stored(client, recommended, "r-emb")) == ["emb-1"]
    dest.close()


def test_milvus_failure_is_reported_once_without_pymilvus_tracebacks(
    db: str, client: Any, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    name = custom_collection(client, "vanishing", [])
    dest = destination(db, name)
    dest.write(document("r-gone", [element("gone-0")]))  # reads the stored rows
    client.drop_collection(name)  # gone after that: the insert fails inside Milvus
    capfd.readouterr()
    caplog.clear()
    with caplog.at_level(logging.ERROR), pytest.raises(DocumentError, match="the write failed"):
        dest.write(document("r-gone", [element("gone-1")]))
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert "RPC error" not in captured.err and not caplog.records
    dest.close()


def test_create_collection_minimal_and_search(db: str, client: Any) -> None:
    fields = create_collection(db, "searchable", dim=DIM)
    assert fields == [
        "element_id: VARCHAR(max_length=200), primary key",
        "embeddings: FLOAT_VECTOR(dim=4)",
        "record_id: VARCHAR(max_length=200)",
        "text: VARCHAR(max_length=65535)",
        "type: VARCHAR(max_length=200), nullable",
    ]
    assert client.describe_index("searchable", "embeddings")["metric_type"] == "COSINE"
    assert "record_id" in client.list_indexes("searchable")
    with pytest.raises(ConnectorError, match="collection 'searchable' already exists"):
        create_collection(db, "searchable", dim=DIM)
    with pytest.raises(ValueError, match="collection name 'bad-name' is invalid"):
        create_collection(db, "bad-name")
    with pytest.raises(ValueError, match="dim must be between 1 and 32768"):
        create_collection(db, "zero", dim=0)
    dest = destination(db, "searchable")
    dest.write(document("r-s1", [element("s-1", "north", embeddings=[1.0, 0.0, 0.0, 0.0])]))
    dest.write(document("r-s2", [element("s-2", "east", embeddings=[0.0, 1.0, 0.0, 0.0])]))
    hits = search(db, "searchable", [0.9, 0.1, 0.0, 0.0], k=2)
    assert [h.element_id for h in hits] == ["s-1", "s-2"]
    assert hits[0].record_id == "r-s1" and hits[0].text == "north" and hits[0].filename is None
    assert hits[0].score > hits[1].score
    with pytest.raises(ConnectorError, match="holds 4-dimensional embeddings; the query vector"):
        search(db, "searchable", [1.0, 0.0], k=1)
    dest.close()
