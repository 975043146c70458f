"""The connector registry: one entry per type, each name registered once, every entry pointing at
real code, and a new type (tests/connectors/notes_connector.py) working through the same paths
as the built-in ones once one `register` line adds it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import get_type_hints

import pytest
from pydantic import SecretStr

from ingestflow.connectors import registry
from ingestflow.connectors.base import Destination, Source
from ingestflow.connectors.check import check_connector
from ingestflow.connectors.entry import ConnectorType, _load
from ingestflow.connectors.local import LocalConfig
from ingestflow.connectors.vectordb import VectorDBConfig
from ingestflow.connectors.wiki import WikiConfig
from ingestflow.service import Service
from ingestflow.service.requests import ExecutionOptions, RunRequest
from ingestflow.spec.models import MASK, SECRET_FIELDS
from tests.connectors import notes_connector
from tests.connectors.notes_connector import ACCESS_CODE

WORKFLOW = json.loads(Path("examples/partition-only.json").read_text(encoding="utf-8"))
NOTES = {"alpha": "Alpha note.\n\nIt has two paragraphs.", "beta": "Beta note."}


@pytest.fixture
def notes_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The notes type registered for one test; the registry as it was afterwards."""
    monkeypatch.setattr(registry, "CONNECTOR_TYPES", dict(registry.CONNECTOR_TYPES))
    monkeypatch.setattr(registry, "_ALIASES", dict(registry._ALIASES))
    secrets = set(SECRET_FIELDS)
    registry.register(notes_connector.ENTRY)  # the one line that adds a connector type
    yield
    SECRET_FIELDS.intersection_update(secrets)


def _body(**config: object) -> dict[str, object]:
    return {
        "name": "my notes",
        "type": "memo",
        "config": {"notes": NOTES, "access_code": ACCESS_CODE, **config},
    }


def test_a_taken_type_name_or_alias_is_refused_and_nothing_is_registered() -> None:
    before = dict(registry.CONNECTOR_TYPES)
    twin = ConnectorType("wiki", WikiConfig, str, source="x:y")
    with pytest.raises(ValueError, match=r"'wiki' already names type 'wiki'"):
        registry.register(twin)
    clash = ConnectorType("lake", VectorDBConfig, str, destination="x:y", aliases=("milvus",))
    with pytest.raises(ValueError, match=r"'milvus' already names type 'vectordb'.*of its own"):
        registry.register(clash)
    assert before == registry.CONNECTOR_TYPES
    assert registry.connector_type("lake") is None


def test_a_type_without_source_or_destination_is_refused() -> None:
    idle = ConnectorType("idle", WikiConfig, str)
    with pytest.raises(ValueError, match=r"needs a source or a destination \(it has neither\)"):
        registry.register(idle)
    assert registry.connector_type("idle") is None


@pytest.mark.parametrize("entry", list(registry.CONNECTOR_TYPES.values()), ids=lambda e: e.type)
def test_every_registered_type_resolves_to_real_code(entry: ConnectorType) -> None:
    for role, base in (("source", Source), ("destination", Destination)):
        dotted = getattr(entry, role)
        if dotted is None:
            continue
        made = _load(dotted)
        built = made if isinstance(made, type) else get_type_hints(made)["return"]
        assert issubclass(built, base), dotted
    if entry.checker is not None:
        assert callable(_load(entry.checker))
    assert set(entry.secret_fields) <= SECRET_FIELDS


def test_built_in_entries_declare_their_secrets_and_keep_their_identities(tmp_path: Path) -> None:
    wiki = registry.connector_type("confluence")
    vectordb = registry.connector_type("milvus")
    local = registry.connector_type("local")
    assert wiki is not None and vectordb is not None and local is not None
    assert wiki.secret_fields == ("token", "password")
    assert vectordb.secret_fields == ("password",)
    assert (wiki.roles, vectordb.roles, local.roles) == (
        ("source",),
        ("destination",),
        ("source", "destination"),
    )
    # identities key processed documents in existing workspaces: they must not change
    page = WikiConfig(url="https://w.example/wiki/", spaces=["B", "A"], token=SecretStr(MASK))
    assert wiki.identity(page) == "wiki:https://w.example/wiki"
    assert wiki.source_key(page) == 'wiki:https://w.example/wiki:["A", "B"]'
    milvus = VectorDBConfig(
        user="u", uri="m.db", db_name="d", password=SecretStr("p"), collection_name="c"
    )
    assert vectordb.identity(milvus) == "vectordb:m.db:d:c"
    root = tmp_path.resolve()
    files = LocalConfig(inputs=[root / "b", root / "a", root / "a"])
    assert local.source_key(files) == "local:" + json.dumps([str(root / "a"), str(root / "b")])
    assert local.source_key(LocalConfig(inputs=[root], identity="upload:w")) is None  # uploads
    assert local.identity(LocalConfig(output=root / "out")) == f"local:{root / 'out'}"


def test_local_files_are_no_stored_connector_type() -> None:
    checked = registry.validate_connector({"name": "l", "type": "local", "config": {}})
    assert [(p.path, p.message, p.allowed) for p in checked.problems] == [
        ("type", "unknown connector type", ["wiki", "vectordb"])
    ]
    result = check_connector("local", {})
    assert not result.ok
    assert result.reason == (
        "no connection check for connector type 'local'; known types: vectordb, wiki"
    )


def test_a_new_type_validates_by_its_own_model_and_rules(notes_registered: None) -> None:
    checked = registry.validate_connector(_body())
    assert checked.valid, checked.problems
    assert checked.connector is not None and checked.connector.type == "notes"  # alias resolved
    assert checked.role == "source" and "access_code" in SECRET_FIELDS
    empty = registry.validate_connector(_body(notes={}))
    assert [p.one_line() for p in empty.problems] == [
        "config.notes: a notes source needs at least one note; found {}"
    ]
    placeholder = registry.validate_connector(_body(access_code="<ACCESS_CODE>"))
    assert [p.path for p in placeholder.problems] == ["config.access_code"]
    wrong_role = registry.validate_connector(_body(), role="destination")
    assert [(p.message, p.allowed) for p in wrong_role.problems] == [
        ("unknown connector type for a destination", ["vectordb"])
    ]


def test_a_new_type_is_stored_masked_checked_and_run(
    notes_registered: None, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with Service(tmp_path / "ws") as service:
        record = service.connectors.create(_body(), "source")
        assert record.type == "notes"
        assert record.config["access_code"] == MASK
        assert service.connectors.check_now(record.id, "source")["ok"] is True
        locked = service.connectors.create(
            {**_body(access_code="wrong"), "name": "locked"}, "source"
        )
        refused = service.connectors.check_now(locked.id, "source")
        assert refused == {
            "ok": False,
            "status": "FAILURE",
            "reason": "the access code was refused",
        }
        prepared = service.runs.prepare(
            RunRequest(
                WORKFLOW, output=out, source=record.id, execution=ExecutionOptions(workers=1)
            )
        )
        job = service.runs.start(prepared)
    assert job["status"] == "COMPLETED", job
    assert sorted(p.name for p in out.glob("*.json")) == ["alpha.txt.json", "beta.txt.json"]
    alpha = json.loads((out / "alpha.txt.json").read_text(encoding="utf-8"))
    assert [e["text"] for e in alpha] == ["Alpha note.", "It has two paragraphs."]
    assert alpha[0]["metadata"]["data_source"]["url"] == "notes:alpha"
    assert ACCESS_CODE not in json.dumps(job)


def test_a_type_is_built_only_in_a_role_it_has(tmp_path: Path) -> None:
    wiki = registry.connector_type("wiki")
    assert wiki is not None
    page = WikiConfig(url="https://w.example/wiki", token=SecretStr(MASK))
    with pytest.raises(
        ValueError, match=r"a wiki connector cannot be a destination: it is a source"
    ):
        wiki.build(page, "destination")
    local = registry.local_files("destination", output=tmp_path / "out")
    assert type(local.entry.build(local.config, local.role)).__name__ == "LocalDestination"


def test_a_type_declares_the_local_file_it_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the API server confines to its folders is what a type declares (`local_file`), not
    a test of the vectordb config (`service.lite_paths`)."""
    from ingestflow.service.lite_paths import LitePaths

    lite = VectorDBConfig.model_validate(
        {"user": "u", "uri": "m.db", "db_name": "d", "password": "p", "collection_name": "c"}
    )
    server = lite.model_copy(update={"uri": "http://host:19530"})
    assert registry.local_file(lite) == "m.db" and registry.local_file(server) is None
    monkeypatch.setattr(registry, "CONNECTOR_TYPES", dict(registry.CONNECTOR_TYPES))
    monkeypatch.setattr(registry, "_ALIASES", dict(registry._ALIASES))
    declaring = notes_connector.ENTRY.__class__(
        **{**vars(notes_connector.ENTRY), "type": "notebook", "local_file": lambda c: "/x/n.db"}
    )
    registry.register(declaring)
    notes = notes_connector.NotesConfig.model_validate(
        {"notes": {"a": "A."}, "access_code": ACCESS_CODE}
    )
    problem = LitePaths.served(Path("/nowhere")).problem(notes)
    assert problem is not None and problem.found == "/x/n.db"
