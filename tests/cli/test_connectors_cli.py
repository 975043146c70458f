"""`ingestflow connectors create/list/show/update/delete/check`: records never show secrets, a
stored secret never follows a connector to another endpoint, and a check creates nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.service import Service
from tests.fakes.confluence import FakeConfluence

runner = CliRunner()
BODY: dict[str, Any] = {
    "name": "lite",
    "type": "milvus",
    "config": {
        "user": "root",
        "uri": "./m.db",
        "db_name": "default",
        "password": "milvus-pa55-s3cret",
        "collection_name": "c",
    },
}


def test_connector_lifecycle(tmp_path: Path) -> None:
    ws = ["--workspace", str(tmp_path / "ws")]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(BODY))
    created = runner.invoke(app, ["connectors", "create", str(path), *ws])
    assert created.exit_code == 0, created.output
    record = json.loads(created.stdout)
    assert record["type"] == "vectordb" and record["config"]["password"] == "********"
    again = runner.invoke(app, ["connectors", "create", str(path), *ws])
    assert again.exit_code == 2 and "already exists" in again.output
    listed = runner.invoke(app, ["connectors", "list", "--json", "--role", "destination", *ws])
    assert [c["id"] for c in json.loads(listed.stdout)] == [record["id"]]
    shown = runner.invoke(app, ["connectors", "show", "lite", *ws])
    assert json.loads(shown.stdout)["id"] == record["id"]
    for output in (created.output, listed.output, shown.output):
        assert "milvus-pa55-s3cret" not in output
    assert runner.invoke(app, ["connectors", "delete", record["id"][:8], *ws]).exit_code == 0
    missing = runner.invoke(app, ["connectors", "show", "lite", *ws])
    assert missing.exit_code == 2 and "not found" in missing.output


def test_invalid_connector_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**BODY, "config": {**BODY["config"], "uri": ""}}))
    result = runner.invoke(
        app, ["connectors", "create", str(path), "--workspace", str(tmp_path / "ws")]
    )
    assert result.exit_code == 2 and "config.uri" in result.output


def test_workspace_database_is_private_even_when_a_run_made_it(tmp_path: Path) -> None:
    from ingestflow.store.jobs import Workspace

    ws = tmp_path / "ws"
    Workspace(ws).close()  # what `run` or `jobs list` does first
    (ws / "ingestflow.db").chmod(0o644)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(BODY))
    assert (
        runner.invoke(app, ["connectors", "create", str(path), "--workspace", str(ws)]).exit_code
        == 0
    )
    assert (ws / "ingestflow.db").stat().st_mode & 0o777 == 0o600


def test_wildcards_are_not_prefixes(tmp_path: Path) -> None:
    ws = ["--workspace", str(tmp_path / "ws")]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(BODY))
    runner.invoke(app, ["connectors", "create", str(path), *ws])
    for ref in ("%", "_", ""):
        result = runner.invoke(app, ["connectors", "delete", ref, *ws])
        assert result.exit_code == 2, ref
    assert len(json.loads(runner.invoke(app, ["connectors", "list", "--json", *ws]).stdout)) == 1
    bad_role = runner.invoke(app, ["connectors", "list", "--role", "bogus", *ws])
    assert bad_role.exit_code == 2 and "unknown role" in bad_role.output


# --- a stored secret stays with its endpoint; no credentials in URLs; checks create nothing

WIKI_USER, WIKI_TOKEN, URL_PASSWORD = "ada@example.com", "wiki-cli-t0ken-s3cr3t", "url-pw-s3cr3t"


def _wiki_body(url: str, **config: Any) -> dict[str, Any]:
    return {
        "name": "team wiki",
        "type": "wiki",
        "config": {"url": url, "username": WIKI_USER, "token": WIKI_TOKEN, **config},
    }


def test_an_update_that_moves_a_connector_needs_its_secrets_again(tmp_path: Path) -> None:
    ws = ["--workspace", str(tmp_path / "ws")]
    path = tmp_path / "c.json"
    with (
        FakeConfluence(basic={(WIKI_USER, WIKI_TOKEN)}) as wiki,
        FakeConfluence(basic=set()) as other,
    ):
        wiki.add_space("DEV", "Development")
        path.write_text(json.dumps(_wiki_body(wiki.url, spaces=["DEV"])))
        created = runner.invoke(app, ["sources", "create", str(path), *ws])
        assert created.exit_code == 0, created.output
        record = json.loads(created.stdout)
        for change, named in (({"url": other.url}, "`url`"), ({"username": "eve"}, "`username`")):
            path.write_text(json.dumps({"config": {**record["config"], **change}}))
            moved = runner.invoke(app, ["sources", "update", "team wiki", str(path), *ws])
            assert moved.exit_code == 2, moved.output
            assert "config.token" in moved.output and f"{named} changed" in moved.output
        checked = runner.invoke(app, ["sources", "check", "team wiki", *ws])
        assert checked.exit_code == 0 and json.loads(checked.stdout)["status"] == "SUCCESS"
        assert other.requests == []  # the stored token never went to the other host
        for output in (created.output, moved.output, checked.output):
            assert WIKI_TOKEN not in output

    # a destination: `uri` and `user` are its endpoint and identity; `db_name` is not
    path.write_text(json.dumps(BODY))
    assert runner.invoke(app, ["destinations", "create", str(path), *ws]).exit_code == 0
    masked = json.loads(runner.invoke(app, ["destinations", "get", "lite", *ws]).stdout)["config"]
    for change, code in (({"uri": "./n.db"}, 2), ({"user": "eve"}, 2), ({"db_name": "x"}, 0)):
        path.write_text(json.dumps({"config": {**masked, **change}}))
        result = runner.invoke(app, ["destinations", "update", "lite", str(path), *ws])
        assert result.exit_code == code, result.output
    with Service(tmp_path / "ws") as service:
        stored = service.connectors.body("lite")["config"]
    assert stored["password"] == BODY["config"]["password"] and stored["uri"] == "./m.db"


def test_a_password_in_a_url_is_refused_and_never_shown(tmp_path: Path) -> None:
    ws = ["--workspace", str(tmp_path / "ws")]
    inside = f"https://ada:{URL_PASSWORD}@wiki.example.com/wiki"
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_wiki_body(inside)))
    refused = runner.invoke(app, ["sources", "create", str(path), *ws])
    assert refused.exit_code == 2 and "config.url" in refused.output
    assert "`username`" in refused.output and URL_PASSWORD not in refused.output
    path.write_text(json.dumps({**BODY, "config": {**BODY["config"], "uri": inside}}))
    refused_too = runner.invoke(app, ["destinations", "create", str(path), *ws])
    assert refused_too.exit_code == 2 and "config.uri" in refused_too.output
    assert URL_PASSWORD not in refused_too.output
    with Service(tmp_path / "ws") as service:  # a row stored before the rule existed
        service.ws.connectors.insert(
            name="old", type="wiki", role="source", config=_wiki_body(inside)["config"]
        )
    outputs = [
        runner.invoke(app, ["sources", "list", *ws]).output,
        runner.invoke(app, ["sources", "list", "--json", *ws]).output,
        runner.invoke(app, ["sources", "get", "old", *ws]).output,
    ]
    checked = runner.invoke(app, ["sources", "check", "old", *ws])
    assert checked.exit_code == 2 and "holds credentials" in checked.output
    for output in [*outputs, checked.output]:
        assert URL_PASSWORD not in output and WIKI_TOKEN not in output
    assert "https://ada:********@wiki.example.com/wiki" in outputs[2]


def test_a_check_of_a_missing_lite_database_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the CLI's relative Lite paths resolve here, as always
    ws = ["--workspace", str(tmp_path / "ws")]
    far = tmp_path / "elsewhere"
    far.mkdir()
    for uri in ("./missing.db", str(far / "missing.db")):
        path = tmp_path / "d.json"
        path.write_text(json.dumps({**BODY, "config": {**BODY["config"], "uri": uri}}))
        result = runner.invoke(app, ["destinations", "check", str(path), *ws])
        assert result.exit_code == 3, result.output
        reason = json.loads(result.stdout)["reason"]
        assert f"{uri} does not exist (nothing was created)" in reason
        assert "create-collection" in reason
    assert not (tmp_path / "missing.db").exists() and list(far.iterdir()) == []
    # any folder is the CLI user's to choose: a database made there checks fine
    made = runner.invoke(
        app, ["vectordb", "create-collection", "--uri", str(far / "m.db"), "--collection", "c"]
    )
    assert made.exit_code == 0, made.output
    path = tmp_path / "d.json"
    path.write_text(json.dumps({**BODY, "config": {**BODY["config"], "uri": str(far / "m.db")}}))
    result = runner.invoke(app, ["destinations", "check", str(path), *ws])
    assert result.exit_code == 0 and json.loads(result.stdout)["status"] == "SUCCESS"
