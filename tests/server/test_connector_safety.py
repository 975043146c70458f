"""Stored connectors through the REST API over real loopback HTTP: a stored secret never follows
a connector to another endpoint, credentials never ride in a URL into a record, and a
destination's connection check creates nothing and opens Milvus Lite paths only inside the
workspace or the folders the server was started with."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ingestflow.service import Service
from tests.fakes.confluence import FakeConfluence
from tests.server.conftest import (
    API,
    NODES,
    WIKI_TOKEN,
    WRONG_TOKEN,
    Server,
    Servers,
    wiki_source,
)

URL_PASSWORD = "url-pa55word-s3cr3t"
MASK = "********"


def problems_at(answer: httpx.Response, *loc_tail: str) -> list[str]:
    """The messages of a 422's problems whose loc ends with `loc_tail`."""
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    found = [p["msg"] for p in detail if tuple(p["loc"][-len(loc_tail) :]) == loc_tail]
    assert found, f"no problem at {loc_tail}: {detail}"
    return found


def check(http: httpx.Client, plural: str, connector_id: str) -> dict[str, Any]:
    """Start a connection check and wait (30 s at most) for its outcome."""
    answer = http.post(f"{API}/{plural}/{connector_id}/connection-check")
    assert answer.status_code == 202, answer.text
    end = time.monotonic() + 30
    while True:
        answer = http.get(f"{API}/{plural}/{connector_id}/connection-check")
        assert answer.status_code == 200, answer.text
        if answer.json()["status"] != "SCHEDULED":
            return answer.json()
        assert time.monotonic() < end, "the check stayed SCHEDULED"
        time.sleep(0.1)


def basic_passwords(wiki: FakeConfluence) -> list[str]:
    """The passwords (tokens) of every HTTP Basic header the fake received."""
    out = []
    for request in wiki.requests:
        header = next((v for k, v in request.headers.items() if k.lower() == "authorization"), "")
        if header.lower().startswith("basic "):
            out.append(base64.b64decode(header[6:]).decode().partition(":")[2])
    return out


# --- D3: a stored secret stays with its endpoint --------------------------------------------------


def test_a_stored_token_never_follows_the_source_to_another_host(
    server: Server, wiki: FakeConfluence
) -> None:
    http = server.client()
    source = http.post(f"{API}/sources", json=wiki_source(wiki)).json()
    assert source["config"]["token"] == MASK
    with FakeConfluence(basic=set()) as other:  # accepts nothing: it records what it was sent
        moves = [
            ({"url": other.url}, "`url`"),
            ({"username": "eve@example.com"}, "`username`"),
            ({"url": other.url + "/", "username": "eve@example.com"}, "`url`, `username`"),
        ]
        for change, named in moves:
            answer = http.put(
                f"{API}/sources/{source['id']}", json={"config": {**source["config"], **change}}
            )
            (message,) = problems_at(answer, "config", "token")
            assert "`token` is sent masked" in message and f"{named} changed" in message
        # refused, the source still points at the first host, and works there
        assert http.get(f"{API}/sources/{source['id']}").json()["config"] == source["config"]
        assert check(http, "sources", source["id"])["status"] == "SUCCESS"
        assert other.requests == []

        # the same url back (a trailing slash aside) keeps the stored token
        same = {**source["config"], "url": wiki.url + "/", "spaces": ["DEV"]}
        assert http.put(f"{API}/sources/{source['id']}", json={"config": same}).status_code == 200
        assert check(http, "sources", source["id"])["status"] == "SUCCESS"

        # moved with its token sent again: the new token goes there, never the stored one
        moved = {**source["config"], "url": other.url, "token": WRONG_TOKEN}
        answer = http.put(f"{API}/sources/{source['id']}", json={"config": moved})
        assert answer.status_code == 200, answer.text
        assert check(http, "sources", source["id"])["status"] == "FAILURE"
        sent = basic_passwords(other)
        assert sent and set(sent) == {WRONG_TOKEN}
    for body in server.bodies():
        assert WIKI_TOKEN not in body and WRONG_TOKEN not in body


def test_a_masked_secret_that_was_never_stored_is_refused(server: Server) -> None:
    http = server.client()
    body = {
        "name": "lite",
        "type": "vectordb",
        "config": {
            "uri": "lite.db",
            "user": "",
            "password": "milvus-pa55word-s3cr3t",
            "db_name": "",
            "collection_name": "elements",
        },
    }
    made = http.post(f"{API}/destinations", json=body).json()
    moved = {**made["config"], "uri": "elsewhere.db"}
    (message,) = problems_at(
        http.put(f"{API}/destinations/{made['id']}", json={"config": moved}), "config", "password"
    )
    assert "`uri` changed" in message
    with Service(server.workspace) as service:
        assert service.connectors.body(made["id"])["config"]["uri"] == "lite.db"


# --- credentials inside a URL ---------------------------------------------------------------------


def test_credentials_inside_a_wiki_url_are_refused_and_never_shown(
    server: Server, wiki: FakeConfluence
) -> None:
    http = server.client()
    inside = wiki.url.replace("http://", f"http://ada%40example.com:{URL_PASSWORD}@")
    body = wiki_source(wiki)
    body["config"]["url"] = inside
    (message,) = problems_at(http.post(f"{API}/sources", json=body), "config", "url")
    assert "holds credentials" in message and "`username`" in message and "`token`" in message
    source = http.post(f"{API}/sources", json=wiki_source(wiki)).json()
    moved = {**source["config"], "url": inside}
    problems_at(http.put(f"{API}/sources/{source['id']}", json={"config": moved}), "config", "url")

    # a row stored before this rule: every record masks the password, and nothing sends it
    with Service(server.workspace) as service:
        old_id = service.ws.connectors.insert(
            name="old wiki",
            type="wiki",
            role="source",
            config={**wiki_source(wiki)["config"], "url": inside},
        )
    shown = http.get(f"{API}/sources/{old_id}").json()["config"]["url"]
    assert shown == inside.replace(URL_PASSWORD, MASK)
    listed = {s["id"]: s for s in http.get(f"{API}/sources").json()}
    assert listed[old_id]["config"]["url"] == shown
    failed = check(http, "sources", old_id)
    assert failed["status"] == "FAILURE" and "holds credentials" in failed["reason"]
    workflow = http.post(
        f"{API}/workflows",
        json={
            "name": "old",
            "workflow_type": "custom",
            "source_id": old_id,
            "workflow_nodes": NODES,
        },
    )
    assert workflow.status_code == 200, workflow.text
    job = http.post(f"{API}/workflows/{workflow.json()['id']}/run")
    assert job.status_code == 202, job.text
    finished = server.wait_job(job.json()["id"])
    assert finished["status"] == "FAILED"
    details = http.get(f"{API}/jobs/{finished['id']}/details").json()
    assert "holds credentials" in json.dumps(details) + json.dumps(finished)
    assert URL_PASSWORD not in (server.workspace / "jobs" / finished["id"] / "job.log").read_text()
    assert not [r for r in wiki.requests if URL_PASSWORD in json.dumps(r.headers)]
    for body_text in server.bodies():
        assert URL_PASSWORD not in body_text and WIKI_TOKEN not in body_text


# --- D14: Milvus Lite paths of the server's destinations ------------------------------------------


def lite_destination(uri: str, name: str = "lite") -> dict[str, Any]:
    """A create body of a vectordb destination at `uri`."""
    return {
        "name": name,
        "type": "vectordb",
        "config": {
            "uri": uri,
            "user": "",
            "password": "milvus-pa55word-s3cr3t",
            "db_name": "",
            "collection_name": "elements",
        },
    }


def test_lite_paths_stay_in_the_workspace_and_a_check_creates_nothing(
    serve: Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # where a relative path would land if it resolved as the CLI's do
    server = serve()
    http = server.client()
    outside = tmp_path / "outside"
    outside.mkdir()
    (server.workspace / "link").symlink_to(outside)
    for number, uri in enumerate(
        ("../outside/m.db", str(outside / "m.db"), "link/m.db", "~/m.db", "/m.db")
    ):
        answer = http.post(f"{API}/destinations", json=lite_destination(uri, f"d{number}"))
        (message,) = problems_at(answer, "config", "uri")
        assert "outside the folders the API server may open" in message
        assert "--allow-dir" in message
    assert http.get(f"{API}/destinations").json() == []

    # stored by the CLI (its own rule), then checked by the server: refused, nothing made
    with Service(server.workspace) as service:
        by_cli = service.connectors.create(lite_destination(str(outside / "m.db")))
    failed = check(http, "destinations", by_cli.id)
    assert failed["status"] == "FAILURE" and "outside the folders" in failed["reason"]
    assert list(outside.iterdir()) == []

    # relative: inside the workspace; a database that is not there is said so, and not made
    missing = http.post(f"{API}/destinations", json=lite_destination("lite.db", "rel")).json()
    failed = check(http, "destinations", missing["id"])
    assert failed["status"] == "FAILURE" and "does not exist" in failed["reason"]
    assert "'lite.db'" in failed["reason"] or " lite.db " in failed["reason"]
    assert not (server.workspace / "lite.db").exists() and list(cwd.iterdir()) == []
    assert str(server.workspace.resolve()) not in failed["reason"]

    from ingestflow.connectors.vectordb_admin import create_collection

    create_collection(str(server.workspace / "lite.db"), "elements", 384)
    done = check(http, "destinations", missing["id"])
    assert done["status"] == "SUCCESS" and done["reason"] is None
    assert list(cwd.iterdir()) == []


def test_serve_allow_dir_admits_lite_paths_there(serve: Servers, tmp_path: Path) -> None:
    allowed = tmp_path / "vectors"
    allowed.mkdir()
    server = serve(allow_dirs=[allowed])
    http = server.client()
    made = http.post(f"{API}/destinations", json=lite_destination(str(allowed / "m.db")))
    assert made.status_code == 200, made.text
    failed = check(http, "destinations", made.json()["id"])
    assert failed["status"] == "FAILURE" and "does not exist" in failed["reason"]
    assert list(allowed.iterdir()) == []
    refused = http.post(f"{API}/destinations", json=lite_destination(str(tmp_path / "m.db"), "x"))
    problems_at(refused, "config", "uri")


def test_a_job_process_keeps_to_the_servers_lite_rule(
    serve: Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    allowed = tmp_path / "vectors"
    allowed.mkdir()
    server = serve(allow_dirs=[allowed])
    http = server.client()
    outside = tmp_path / "outside"
    outside.mkdir()
    with Service(server.workspace) as service:  # stored by the CLI, which allows any path
        far = service.connectors.create(lite_destination(str(outside / "m.db"), "far")).wire()
    near = http.post(f"{API}/destinations", json=lite_destination("near.db", "near")).json()
    embed = {
        "name": "Embedder",
        "type": "embed",
        "subtype": "ibm",
        "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
    }
    for destination, expected in ((far, "outside the folders"), (near, "near.db does not exist")):
        workflow = http.post(
            f"{API}/workflows",
            json={
                "name": f"to {destination['name']}",
                "workflow_type": "custom",
                "destination_id": destination["id"],
                "workflow_nodes": [*NODES, embed],
            },
        )
        assert workflow.status_code == 200, workflow.text
        job = http.post(
            f"{API}/workflows/{workflow.json()['id']}/run",
            files=[("input_files", ("a.txt", b"Some text.\n", "text/plain"))],
        )
        assert job.status_code == 202, job.text
        finished = server.wait_job(job.json()["id"])
        assert finished["status"] == "FAILED"
        said = json.dumps(http.get(f"{API}/jobs/{finished['id']}/details").json())
        assert expected in said + json.dumps(finished), said
        assert str(server.workspace.resolve()) not in said  # the path as given, not the server's
    assert list(outside.iterdir()) == [] and not (server.workspace / "near.db").exists()
