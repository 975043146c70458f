"""The fake Confluence itself: auth, shapes, paging, faults and the request record."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests

from tests.fakes.confluence import FakeConfluence, Fault, restriction, space_grant

AUTH = ("bob", "pw")


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    with FakeConfluence(basic={AUTH}, bearer={"pat"}, base_path="/wiki", max_limit=2) as server:
        server.add_space("DEV", permissions=[space_grant("read", "space", users=["u-1"])])
        for n in range(3):
            server.add_page("DEV", f"P{n}", f"<p>{n}</p>", page_id=str(n + 1))
        yield server


def get(wiki: FakeConfluence, path: str, **kwargs: object) -> requests.Response:
    kwargs.setdefault("auth", AUTH)
    return requests.get(wiki.url + path, timeout=5, **kwargs)  # type: ignore[arg-type]


def test_auth_basic_bearer_and_none(wiki: FakeConfluence) -> None:
    assert get(wiki, "/rest/api/space").status_code == 200
    bearer = get(wiki, "/rest/api/space", auth=None, headers={"Authorization": "Bearer pat"})
    assert bearer.status_code == 200
    assert get(wiki, "/rest/api/space", auth=None).status_code == 401
    assert get(wiki, "/rest/api/space", auth=("bob", "no")).status_code == 401
    assert [r.status for r in wiki.requests] == [200, 200, 401, 401]


def test_only_the_base_path_is_served(wiki: FakeConfluence) -> None:
    response = requests.get(wiki.origin + "/rest/api/space", auth=AUTH, timeout=5)
    assert response.status_code == 404


def test_content_listing_pages_with_next_relative_to_the_base(wiki: FakeConfluence) -> None:
    first = get(wiki, "/rest/api/content", params={"spaceKey": "DEV", "limit": 50}).json()
    assert [p["id"] for p in first["results"]] == ["1", "2"]
    assert first["_links"]["next"].startswith("/rest/api/content?")
    second = requests.get(wiki.url + first["_links"]["next"], auth=AUTH, timeout=5).json()
    assert [p["id"] for p in second["results"]] == ["3"] and "next" not in second["_links"]


def test_page_expand_and_restrictions_shapes(wiki: FakeConfluence) -> None:
    wiki.pages["1"].restrictions = {"read": restriction(users=["u-1"], groups=["g"])}
    page = get(wiki, "/rest/api/content/1", params={"expand": "body.view,version"}).json()
    assert page["body"]["view"]["value"] == "<p>0</p>" and page["version"]["number"] == 1
    assert "history" not in page and "body" not in get(wiki, "/rest/api/content/1").json()
    by_op = get(wiki, "/rest/api/content/1/restriction/byOperation").json()
    assert by_op["read"]["restrictions"]["user"]["results"][0]["accountId"] == "u-1"
    assert by_op["update"]["restrictions"]["group"]["results"] == []
    grants = get(wiki, "/rest/api/space/DEV/permissions").json()
    assert grants[0]["operation"] == {"operation": "read", "targetType": "space"}


def test_attachments_are_listed_and_downloadable_both_ways(wiki: FakeConfluence) -> None:
    attachment = wiki.add_attachment("1", "a b.txt", b"data", "text/plain")
    (item,) = get(wiki, "/rest/api/content/1/child/attachment").json()["results"]
    assert item["title"] == "a b.txt" and item["metadata"]["mediaType"] == "text/plain"
    assert (
        requests.get(wiki.url + item["_links"]["download"], auth=AUTH, timeout=5).content == b"data"
    )
    route = f"/rest/api/content/1/child/attachment/{attachment.id}/download"
    assert get(wiki, route).content == b"data"


def test_faults_count_down_and_match_globs(wiki: FakeConfluence) -> None:
    wiki.inject("/rest/api/content/*", Fault.server_error(503, times=2))
    codes = [get(wiki, "/rest/api/content/2").status_code for _ in range(3)]
    assert codes == [503, 503, 200]
    wiki.inject("/rest/api/space", Fault.too_many_requests(retry_after=7))
    limited = get(wiki, "/rest/api/space")
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "7"
    wiki.inject("/rest/api/content/3", Fault.malformed_json())
    assert get(wiki, "/rest/api/content/3").text.startswith('{"id": "1", "title": "trunc')
    assert len(wiki.requests_to("/rest/api/content/*")) == 4


def test_slow_answers_time_out_and_stop_does_not_wait_for_them() -> None:
    server = FakeConfluence(basic={AUTH}).start()
    server.add_space("DEV")
    server.inject("/rest/api/space", Fault.slow(30, times=None))
    with pytest.raises(requests.Timeout, match="timed out"):
        requests.get(server.url + "/rest/api/space", auth=AUTH, timeout=0.2)
    started = time.monotonic()
    server.stop()
    # the slow answer takes 30 s: half of that tells waiting from not, however loaded the machine
    assert time.monotonic() - started < 15
