"""Stored connectors through the REST API over real loopback HTTP: a stored secret never follows
a connector to another endpoint."""

from __future__ import annotations

import base64
import time
from typing import Any

import httpx

from ingestflow.service import Service
from tests.fakes.confluence import FakeConfluence
from tests.server.conftest import (
    API,
    WIKI_TOKEN,
    WRONG_TOKEN,
    Server,
    wiki_source,
)

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
