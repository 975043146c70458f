"""The wiki source against a fake Confluence over real HTTP on loopback."""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from bs4 import BeautifulSoup
from pydantic import SecretStr

from ingestflow.connectors import wiki_permissions as perms
from ingestflow.connectors.check import ConnectionCheck, check_connector
from ingestflow.connectors.wiki import WikiConfig
from ingestflow.connectors.wiki_source import (
    FailedDocument,
    HttpPolicy,
    WikiSource,
    check_connection,
    image_mime,
    slugify,
)
from ingestflow.elements import Document
from ingestflow.errors import ConnectorError, DocumentError
from tests.fakes.confluence import (
    CORPUS_WIKI,
    FIXTURE_WIKI,
    FakeConfluence,
    Fault,
    corpus_pages,
    iter_wrapped,
    restriction,
    space_grant,
)

USER, API_TOKEN = "dev@example.com", "api-token-s3cr3t"
ADMIN, PASSWORD = "admin", "pa55word-s3cr3t"
PAT = "pat-s3cr3t-token"
SECRETS = (API_TOKEN, PASSWORD, PAT)
FAST = HttpPolicy(timeout=0.5, retries=2, backoff_factor=0.01, backoff_max=0.05, page_size=50)

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + b"\x00" * 16
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect/></svg>'


def make_wiki(base_path: str = "", max_limit: int = 25) -> FakeConfluence:
    return FakeConfluence(
        basic={(USER, API_TOKEN), (ADMIN, PASSWORD)},
        bearer={PAT},
        base_path=base_path,
        max_limit=max_limit,
    )


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    with make_wiki() as server:
        yield server


@pytest.fixture
def cloud_wiki() -> Iterator[FakeConfluence]:
    with make_wiki("/wiki") as server:
        yield server


def config(server: FakeConfluence, **overrides: Any) -> WikiConfig:
    """An API-token config for `server` (overrides replace fields)."""
    fields: dict[str, Any] = {"url": server.url, "username": USER, "token": API_TOKEN}
    fields.update(overrides)
    return WikiConfig(**{k: v for k, v in fields.items() if v is not None})


def crawl(server: FakeConfluence, **overrides: Any) -> list[Document]:
    source = WikiSource(config(server, **overrides), FAST)
    try:
        source.precheck()
        return list(source.documents())
    finally:
        source.close()


def by_name(docs: list[Document]) -> dict[str, Document]:
    return {d.filename: d for d in docs}


def text_of(doc: Document) -> str:
    return " ".join(BeautifulSoup(doc.read_bytes(), "html.parser").get_text().split())


def simple_site(server: FakeConfluence) -> None:
    server.add_space("DEV", "Development")
    server.add_page("DEV", "Alpha", "<p>alpha body</p>", page_id="101", version=3)
    server.add_page("DEV", "Beta", "<p>beta body</p>", page_id="102")
    server.add_page("DEV", "Gamma", "<p>gamma body</p>", page_id="103")


# -- auth ----------------------------------------------------------------------------------------

AUTH_MODES: dict[str, tuple[dict[str, str | None], str]] = {
    "api_token": ({"username": USER, "token": API_TOKEN}, "Basic"),
    "pat": ({"token": PAT, "username": None}, "Bearer"),
    "basic": ({"username": ADMIN, "password": PASSWORD, "token": None}, "Basic"),
}


@pytest.mark.parametrize("mode", sorted(AUTH_MODES))
def test_each_auth_mode_with_right_credentials_reads_pages(wiki: FakeConfluence, mode: str) -> None:
    simple_site(wiki)
    fields, scheme = AUTH_MODES[mode]
    assert config(wiki, **fields).auth_mode == mode
    docs = crawl(wiki, **fields)
    assert [d.filename for d in docs] == [
        "DEV/101-alpha.html",
        "DEV/102-beta.html",
        "DEV/103-gamma.html",
    ]
    assert all(r.headers["Authorization"].startswith(scheme + " ") for r in wiki.requests)
    assert all(r.status == 200 for r in wiki.requests)


@pytest.mark.parametrize("mode", sorted(AUTH_MODES))
def test_each_auth_mode_with_wrong_credentials_fails_precheck(
    wiki: FakeConfluence, mode: str
) -> None:
    simple_site(wiki)
    fields, _ = AUTH_MODES[mode]
    wrong = {
        k: (v + "-wrong" if k in ("token", "password") and v else v) for k, v in fields.items()
    }
    source = WikiSource(config(wiki, **wrong), FAST)
    with pytest.raises(ConnectorError, match=r"rejected the credentials \(HTTP 401") as caught:
        source.precheck()
    assert not any(secret in str(caught.value) for secret in SECRETS)
    assert wiki.requests[-1].status == 401


# -- bases, spaces, limits, pagination -----------------------------------------------------------


@pytest.mark.parametrize("cloud", [True, False])
def test_cloud_wiki_base_works_with_the_v1_client_whatever_cloud_says(
    cloud_wiki: FakeConfluence, cloud: bool
) -> None:
    simple_site(cloud_wiki)
    docs = crawl(cloud_wiki, cloud=cloud)
    assert len(docs) == 3 and not any(isinstance(d, FailedDocument) for d in docs)
    assert all(r.path.startswith("/rest/api/") for r in cloud_wiki.requests)
    assert docs[0].data_source["url"] == f"{cloud_wiki.url}/spaces/DEV/pages/101/Alpha"


def test_server_base_serves_rest_api_at_the_root(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    docs = crawl(wiki)
    assert len(docs) == 3
    assert {r.path.split("?")[0] for r in wiki.requests} >= {"/rest/api/space", "/rest/api/content"}


def test_listed_spaces_only(wiki: FakeConfluence) -> None:
    for key in ("A", "B", "~personal"):
        wiki.add_space(key, space_type="personal" if key.startswith("~") else "global")
        wiki.add_page(key, f"page of {key}", "<p>x</p>")
    docs = crawl(wiki, spaces=["B", "~personal"])
    assert sorted(d.data_source["record_locator"]["space_key"] for d in docs) == ["B", "~personal"]
    assert not wiki.requests_to("/rest/api/space")[1:]  # only the precheck probe lists spaces


def test_all_spaces_when_none_listed(wiki: FakeConfluence) -> None:
    for key in ("A", "B", "~personal"):
        wiki.add_space(key)
        wiki.add_page(key, f"page of {key}", "<p>x</p>")
    docs = crawl(wiki)
    assert [d.data_source["record_locator"]["space_key"] for d in docs] == ["A", "B", "~personal"]


def test_both_limits_are_honoured_across_pages_of_results() -> None:
    with make_wiki(max_limit=2) as wiki:
        for key in ("A", "B", "C"):
            wiki.add_space(key)
            for n in range(5):
                wiki.add_page(key, f"{key} page {n}", "<p>x</p>")
        docs = crawl(wiki, max_num_of_spaces=2, max_num_of_docs_from_each_space=3)
        keys = [d.data_source["record_locator"]["space_key"] for d in docs]
        assert keys == ["A"] * 3 + ["B"] * 3
        listings = wiki.requests_to("/rest/api/content")
        assert [(r.query["spaceKey"][0], r.query.get("start", ["0"])[0]) for r in listings] == [
            ("A", "0"),
            ("A", "2"),
            ("B", "0"),
            ("B", "2"),
        ]
        assert all(int(r.query["limit"][0]) <= 3 for r in listings)
        assert not wiki.requests_to("/rest/api/content?spaceKey=C*")


def test_listed_spaces_beyond_max_num_of_spaces_are_cut_with_a_warning(
    wiki: FakeConfluence,
) -> None:
    for key in ("A", "B"):
        wiki.add_space(key)
        wiki.add_page(key, key, "<p>x</p>")
    source = WikiSource(config(wiki, spaces=["A", "B"], max_num_of_spaces=1), FAST)
    docs = list(source.documents())
    assert [d.data_source["record_locator"]["space_key"] for d in docs] == ["A"]
    assert source.warnings == ["2 spaces listed, max_num_of_spaces is 1: read 1"]


def test_pagination_follows_next_until_the_last_page() -> None:
    with make_wiki(max_limit=2) as wiki:
        wiki.add_space("DEV")
        for n in range(7):
            wiki.add_page("DEV", f"Page {n}", f"<p>{n}</p>", page_id=str(500 + n))
        docs = crawl(wiki)
        assert [d.filename for d in docs] == [f"DEV/{500 + n}-page-{n}.html" for n in range(7)]
        starts = [r.query.get("start", ["0"])[0] for r in wiki.requests_to("/rest/api/content")]
        assert starts == ["0", "2", "4", "6"]


def test_missing_space_keys_fail_precheck_naming_them(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    source = WikiSource(config(wiki, spaces=["DEV", "NOPE", "GONE"]), FAST)
    with pytest.raises(ConnectorError, match=r"space key\(s\) not found .*'NOPE', 'GONE'"):
        source.precheck()
    with pytest.raises(ConnectorError, match=r"'NOPE'"):
        next(iter(WikiSource(config(wiki, spaces=["NOPE"]), FAST).documents()))


# -- documents -----------------------------------------------------------------------------------


def test_page_document_shape(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.add_space("OPS")
    page = wiki.add_page("OPS", "Zürich – Größen & Maße", "<p>café</p>", page_id="7")
    page.created, page.modified = "2024-01-02T03:04:05.000Z", "2024-02-03T04:05:06.000Z"
    doc = by_name(crawl(wiki))["OPS/7-zürich-grössen-masse.html"]
    assert doc.mime_type == "text/html" and doc.version == "1" and doc.parent_id is None
    html_text = doc.read_bytes().decode("utf-8")
    assert '<meta charset="utf-8">' in html_text
    assert "<h1>Zürich – Größen &amp; Maße</h1>" in html_text and "<p>café</p>" in html_text
    url = f"{wiki.url}/spaces/OPS/pages/7/Z%C3%BCrich+%E2%80%93+Gr%C3%B6%C3%9Fen+%26+Ma%C3%9Fe"
    assert doc.data_source == {
        "url": url,
        "version": "1",
        "record_locator": {
            "protocol": "wiki",
            "remote_file_path": url,
            "space_key": "OPS",
            "page_id": "7",
            "url": url,
        },
        "date_created": "2024-01-02T03:04:05.000Z",
        "date_modified": "2024-02-03T04:05:06.000Z",
        "permissions_data": [
            {"read": {"users": [], "groups": []}},
            {"update": {"users": [], "groups": []}},
            {"delete": {"users": [], "groups": []}},
        ],
    }


def test_ids_are_stable_and_versions_follow_the_page(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    first = crawl(wiki)
    wiki.pages["101"].version = 4
    second = crawl(wiki)
    assert [(d.id, d.record_id) for d in first] == [(d.id, d.record_id) for d in second]
    assert len({d.id for d in first}) == 3 and all(d.id == d.record_id for d in first)
    assert [d.version for d in first] == ["3", "1", "1"]
    assert [d.version for d in second] == ["4", "1", "1"]
    assert all(len(d.record_id) <= 200 for d in first)


def test_ids_differ_between_instances() -> None:
    with make_wiki() as one, make_wiki() as two:
        simple_site(one)
        simple_site(two)
        assert {d.id for d in crawl(one)}.isdisjoint({d.id for d in crawl(two)})


def test_documents_are_lazy(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    source = WikiSource(config(wiki), FAST)
    first = next(iter(source.documents()))
    assert first.filename == "DEV/101-alpha.html"
    assert not wiki.requests_to("/rest/api/content/102")


def test_project_fixture_pages_round_trip(wiki: FakeConfluence) -> None:
    wiki.add_space("TEAM")
    wiki.load_pages("TEAM", FIXTURE_WIKI / "pages")
    docs = crawl(wiki)
    expected = {pid: (title, body) for pid, title, body in iter_wrapped(FIXTURE_WIKI / "pages")}
    assert [d.data_source["record_locator"]["page_id"] for d in docs] == list(expected)
    for doc in docs:
        title, body = expected[doc.data_source["record_locator"]["page_id"]]
        inner = " ".join(BeautifulSoup(body, "html.parser").get_text().split())
        assert text_of(doc) == f"{title} {inner}"


@pytest.mark.corpus
def test_corpus_pages_round_trip_with_their_text() -> None:
    pages = corpus_pages()
    if pages is None:
        pytest.skip(f"wiki corpus not found at {CORPUS_WIKI}")
    with make_wiki("/wiki") as wiki:
        key = "~712020ee2049b23ac64da1b06405e83e96830f"
        wiki.add_space(key, space_type="personal")
        wiki.load_pages(key, pages)
        docs = crawl(wiki, cloud=True)
    assert len(docs) == 6
    for doc in docs:
        page_id = doc.data_source["record_locator"]["page_id"]
        original = (pages / f"{page_id}.html").read_bytes()
        expected = " ".join(BeautifulSoup(original, "html.parser").get_text().split())
        assert text_of(doc) == expected
        assert doc.filename.startswith(f"{key}/{page_id}-")


@pytest.mark.corpus
def test_corpus_pages_with_extract_images_keep_foreign_images_as_links() -> None:
    pages = corpus_pages()
    if pages is None:
        pytest.skip(f"wiki corpus not found at {CORPUS_WIKI}")
    with make_wiki("/wiki") as wiki:
        wiki.add_space("~me", space_type="personal")
        wiki.load_pages("~me", pages)
        wait_gif = (
            "/wiki/s/-1018781093/6452/7e658bf7a9b3c92626ae4d82f37e3428710b4ca1/_/images/icons"
        )
        wiki.add_file(f"{wait_gif}/wait.gif", GIF, "image/gif")
        docs = {
            d.data_source["record_locator"]["page_id"]: d
            for d in crawl(wiki, cloud=True, extract_images=True)
        }
    overview = BeautifulSoup(docs["196720"].read_bytes(), "html.parser")
    waiting = overview.find("img", alt="Please wait")
    assert waiting is not None and str(waiting["src"]).startswith("data:image/gif;base64,")
    getting_started = docs["196722"]
    assert any(
        "images on other hosts left as links (wac-cdn-bfldr.atlassian.com, wac-cdn.atlassian.com)"
        in w
        for w in getting_started.warnings
    )
    srcs = [
        str(i["src"])
        for i in BeautifulSoup(getting_started.read_bytes(), "html.parser").find_all("img")
    ]
    assert srcs and all(src.startswith("https://wac-cdn") for src in srcs)


# -- images and files ----------------------------------------------------------------------------


def test_extract_images_inlines_own_host_images_with_their_real_mime(
    cloud_wiki: FakeConfluence,
) -> None:
    with make_wiki() as elsewhere:
        elsewhere.add_file("/img/remote.png", PNG, "image/png")
        cloud_wiki.add_space("DEV")
        body = (
            '<p>pics</p><img src="/wiki/download/attachments/9/a.png">'
            '<img src="/wiki/download/attachments/9/b.jpg">'
            '<img src="download/attachments/9/c.gif">'
            f'<img src="{cloud_wiki.url}/download/attachments/9/d.svg">'
            f'<img src="{elsewhere.origin}/img/remote.png">'
            '<img src="/wiki/download/attachments/9/missing.png">'
            '<img src="data:image/png;base64,AAAA">'
        )
        cloud_wiki.add_page("DEV", "Pictures", body, page_id="9")
        # wrong or vague Content-Types: the MIME comes from the bytes
        cloud_wiki.add_attachment("9", "a.png", PNG, "application/octet-stream")
        cloud_wiki.add_attachment("9", "b.jpg", JPEG, "image/png")
        cloud_wiki.add_attachment("9", "c.gif", GIF, "binary/octet-stream")
        cloud_wiki.add_attachment("9", "d.svg", SVG, "text/plain")
        (doc,) = crawl(cloud_wiki, extract_images=True, cloud=True)
        assert not elsewhere.requests  # credentials never go to another host
    soup = BeautifulSoup(doc.read_bytes(), "html.parser")
    srcs = [img["src"] for img in soup.find_all("img")]
    for src, (mime, data) in zip(
        srcs[:4],
        [("image/png", PNG), ("image/jpeg", JPEG), ("image/gif", GIF), ("image/svg+xml", SVG)],
        strict=True,
    ):
        assert src == f"data:{mime};base64,{base64.b64encode(data).decode()}"
    assert srcs[4] == f"{elsewhere.origin}/img/remote.png"
    assert srcs[5] == "/wiki/download/attachments/9/missing.png"
    assert srcs[6] == "data:image/png;base64,AAAA"
    assert any("missing.png not inlined: HTTP 404" in w for w in doc.warnings)
    assert any("images on other hosts left as links (127.0.0.1:" in w for w in doc.warnings)


@pytest.mark.parametrize("mode", ["api_token", "pat"])
def test_an_image_redirected_to_another_host_gets_no_credentials(
    wiki: FakeConfluence, mode: str
) -> None:
    with make_wiki() as elsewhere:
        wiki.add_space("DEV")
        wiki.add_page("DEV", "Pic", '<img src="/download/attachments/9/a.png">', page_id="9")
        wiki.add_attachment("9", "a.png", PNG, "image/png")
        target = f"{elsewhere.origin}/media/a.png"
        wiki.inject("/download/attachments/9/a.png", Fault(302, None, headers={"Location": target}))
        (doc,) = crawl(wiki, extract_images=True, **AUTH_MODES[mode][0])
        (hop,) = elsewhere.requests
    assert "Authorization" not in hop.headers
    assert b'<img src="/download/attachments/9/a.png">' in doc.read_bytes()  # untouched
    assert any("a.png not inlined: HTTP 401" in w for w in doc.warnings)


def test_images_are_left_alone_without_extract_images(wiki: FakeConfluence) -> None:
    wiki.add_space("DEV")
    wiki.add_page("DEV", "Pic", '<img src="/download/attachments/9/a.png">', page_id="9")
    wiki.add_attachment("9", "a.png", PNG, "image/png")
    (doc,) = crawl(wiki)
    assert b'<img src="/download/attachments/9/a.png">' in doc.read_bytes()
    assert not wiki.requests_to("/download/*")


def test_image_mime_by_magic_bytes() -> None:
    assert image_mime(PNG, "text/plain") == "image/png"
    assert image_mime(SVG, None) == "image/svg+xml"
    assert image_mime(b"<html>login</html>", "text/html") is None
    assert image_mime(b"\x00\x01", "image/x-icon") == "image/x-icon"


def _files_site(server: FakeConfluence) -> None:
    server.add_space("DEV")
    context = server.base_path
    body = (
        "<p>see the files</p>"
        f'<a class="confluence-embedded-file" data-linked-resource-id="{{id}}" '
        f'data-linked-resource-type="attachment" href="{context}/download/attachments/9/'
        'report.pdf?version=1">report.pdf</a>'
        f'<a href="{context}/download/attachments/9/R%C3%A9sum%C3%A9%20%E2%80%93%202024.txt">cv</a>'
    )
    page = server.add_page("DEV", "Files", body, page_id="9")
    report = server.add_attachment("9", "report.pdf", b"%PDF-1.4 fake", "application/pdf")
    page.body = page.body.replace("{id}", report.id.removeprefix("att"))
    server.add_attachment("9", "Résumé – 2024.txt", "naïve".encode(), "text/plain", version=2)
    server.add_attachment("9", "not-embedded.bin", b"\x00", "application/octet-stream")


@pytest.mark.parametrize("base_path,cloud", [("", False), ("/wiki", True)])
def test_extract_files_yields_embedded_attachments_pointing_back(
    base_path: str, cloud: bool
) -> None:
    with make_wiki(base_path) as wiki:
        _files_site(wiki)
        wiki.add_space("SEC", permissions=[space_grant("read", "space", users=["u-1"])])
        docs = crawl(wiki, extract_files=True, cloud=cloud)
        route = "/rest/api/content/9/child/attachment/*/download" if cloud else "/download/*"
        assert len(wiki.requests_to(route)) == 2
    page, *files = docs
    assert [f.filename for f in files] == ["report.pdf", "Résumé – 2024.txt"]
    assert [f.read_bytes() for f in files] == [b"%PDF-1.4 fake", "naïve".encode()]
    assert [f.mime_type for f in files] == ["application/pdf", "text/plain"]
    assert [f.version for f in files] == ["1", "2"]
    for f in files:
        assert f.parent_id == page.id and f.id != page.id and f.record_id == f.id
        assert f.data_source["url"] == page.data_source["url"]
        locator = f.data_source["record_locator"]
        assert locator["page_id"] == "9" and locator["url"] == page.data_source["url"]
        assert locator["attachment_id"].startswith("att")
        assert f.data_source["permissions_data"] == page.data_source["permissions_data"]


def test_no_attachment_documents_without_extract_files(wiki: FakeConfluence) -> None:
    _files_site(wiki)
    assert len(crawl(wiki)) == 1
    assert not wiki.requests_to("/rest/api/content/9/child/attachment")


def test_attachment_that_fails_to_download_fails_alone(wiki: FakeConfluence) -> None:
    _files_site(wiki)
    wiki.inject("/download/attachments/9/report.pdf", Fault.server_error(500, times=None))
    page, report, resume = crawl(wiki, extract_files=True)
    assert isinstance(report, FailedDocument) and report.parent_id == page.id
    assert report.error == "attachment 'report.pdf' of page 9: HTTP 500 after 2 retries"
    assert resume.read_bytes() == "naïve".encode()


# -- permissions ---------------------------------------------------------------------------------


def grants(*items: dict[str, Any]) -> dict[tuple[str, str], perms.Principals]:
    return perms.space_grants(list(items))


def restrictions(**ops: dict[str, list[Any]]) -> dict[str, perms.Principals]:
    with make_wiki() as server:  # the fake's own JSON shape, parsed by the rules' reader
        server.add_space("S")
        page = server.add_page("S", "p", "", restrictions=ops)
        body = server._restrictions_json(page)
    return perms.page_restrictions(body)


def as_map(data: list[dict[str, Any]]) -> dict[str, tuple[list[str], list[str]]]:
    assert [next(iter(item)) for item in data] == ["read", "update", "delete"]
    return {op: (v["users"], v["groups"]) for item in data for op, v in item.items()}


SPACE = [
    space_grant("read", "space", users=["reader", "editor", "deleter"], groups=["staff"]),
    space_grant("create", "page", users=["editor"], groups=["staff"]),
    space_grant("administer", "space", users=["admin"]),
    space_grant("delete", "page", users=["deleter", "outsider"], groups=["staff"]),
    space_grant("create", "comment", users=["commenter"]),
]


def test_rule_space_readers_and_admins_read_when_the_page_is_unrestricted() -> None:
    out = as_map(perms.permissions_data(restrictions(), grants(*SPACE)))
    assert out["read"] == (["admin", "deleter", "editor", "reader"], ["staff"])


def test_rule_space_editors_and_admins_update_only_if_they_read() -> None:
    out = as_map(perms.permissions_data(restrictions(), grants(*SPACE)))
    assert out["update"] == (["admin", "editor"], ["staff"])
    rogue = space_grant("create", "page", users=["no-read"])
    assert "no-read" not in as_map(perms.permissions_data({}, grants(*SPACE, rogue)))["update"][0]


def test_rule_delete_is_space_delete_page_for_readers() -> None:
    out = as_map(perms.permissions_data(restrictions(), grants(*SPACE)))
    assert out["delete"] == (["deleter"], ["staff"])  # `outsider` may not read


def test_rule_page_read_restriction_overrides_space_and_editors_may_read() -> None:
    page = restrictions(
        read=restriction(users=["reader"]), update=restriction(users=["editor"], groups=["leads"])
    )
    out = as_map(perms.permissions_data(page, grants(*SPACE)))
    assert out["read"] == (["editor", "reader"], ["leads"])
    assert out["update"] == (["editor"], ["leads"])
    assert out["delete"] == ([], [])  # `deleter` can't read; only editors may delete


def test_rule_update_restriction_limits_editors_and_deleters() -> None:
    page = restrictions(update=restriction(users=["deleter"]))
    out = as_map(perms.permissions_data(page, grants(*SPACE)))
    assert out["read"] == (["admin", "deleter", "editor", "reader"], ["staff"])
    assert out["update"] == (["deleter"], [])
    assert out["delete"] == (["deleter"], [])


def test_rule_ancestor_read_restrictions_are_inherited_conservatively() -> None:
    parent = perms.Principals({"reader", "editor"}, {"staff"})
    out = as_map(perms.permissions_data(restrictions(), grants(*SPACE), [parent]))
    assert out["read"] == (["editor", "reader"], ["staff"])
    assert out["update"] == (["editor"], ["staff"])
    own = restrictions(read=restriction(users=["reader", "admin"]))
    out = as_map(perms.permissions_data(own, grants(*SPACE), [parent]))
    assert out["read"] == (["reader"], [])  # named by every restriction on the way up


def test_rule_identifiers_prefer_account_id_then_user_key_then_name() -> None:
    server_style = space_grant(
        "read",
        "space",
        users=[{"username": "jdoe", "userKey": "ff80"}, {"username": "asmith"}],
        groups=[{"name": "confluence-users"}, {"name": "devs", "id": "g-uuid"}],
    )
    out = as_map(perms.permissions_data({}, grants(server_style)))
    assert out["read"] == (["asmith", "ff80"], ["confluence-users", "g-uuid"])


def test_rule_cloud_v2_space_permissions_are_read_too() -> None:
    v2 = {
        "results": [
            {
                "principal": {"type": "user", "id": "acc-1"},
                "operation": {"key": "read", "targetType": "space"},
            },
            {
                "principal": {"type": "group", "id": "g-1"},
                "operation": {"key": "delete", "targetType": "page"},
            },
            {
                "principal": {"type": "group", "id": "g-1"},
                "operation": {"key": "read", "targetType": "space"},
            },
        ]
    }
    out = as_map(perms.permissions_data({}, perms.space_grants(v2)))
    assert out == {"read": (["acc-1"], ["g-1"]), "update": ([], []), "delete": ([], ["g-1"])}


def test_rule_malformed_permission_bodies_are_unreadable() -> None:
    with pytest.raises(perms.PermissionsUnreadable, match="not a list"):
        perms.space_grants("<html>")
    with pytest.raises(perms.PermissionsUnreadable, match="not a JSON object"):
        perms.page_restrictions(None)
    with pytest.raises(perms.PermissionsUnreadable, match="list of principals"):
        perms.page_restrictions({"read": {"restrictions": {"user": {"results": "x"}}}})


def test_permissions_end_to_end_with_restrictions_and_ancestors(wiki: FakeConfluence) -> None:
    wiki.add_space("DEV", permissions=SPACE)
    wiki.add_page(
        "DEV",
        "Parent",
        "<p>p</p>",
        page_id="1",
        restrictions={"read": restriction(users=["reader", "editor"])},
    )
    wiki.add_page("DEV", "Child", "<p>c</p>", page_id="2", ancestors=["1"])
    wiki.add_page("DEV", "Open", "<p>o</p>", page_id="3")
    parent, child, open_page = crawl(wiki)
    assert as_map(parent.data_source["permissions_data"])["read"] == (["editor", "reader"], [])
    assert as_map(child.data_source["permissions_data"])["read"] == (["editor", "reader"], [])
    assert as_map(child.data_source["permissions_data"])["update"] == (["editor"], [])
    assert as_map(open_page.data_source["permissions_data"])["read"][1] == ["staff"]
    assert len(wiki.requests_to("/rest/api/space/DEV/permissions")) == 1  # cached per space
    assert len(wiki.requests_to("/rest/api/content/1/restriction/byOperation")) == 1


@pytest.mark.corpus
def test_rules_reproduce_the_peers_permissions_for_the_captured_site() -> None:
    peer = CORPUS_WIKI / "peer-file-data" / "196720.json"
    if not peer.is_file():
        pytest.skip(f"wiki corpus not found at {CORPUS_WIKI}")
    expected = json.loads(peer.read_text())["metadata"]["permissions_data"]
    owner, group = (
        "712020:ee2049b2-3ac6-4da1-b064-05e83e96830f",
        "f866838e-f226-45cf-8f6a-80c6696cfe91",
    )
    site = grants(
        space_grant("read", "space", users=[owner], groups=[group]),
        space_grant("administer", "space", groups=[group]),
    )
    assert perms.permissions_data({}, site) == expected


@pytest.mark.parametrize(
    "path,fault,why",
    [
        (
            "/rest/api/space/DEV/permissions",
            Fault.forbidden(),
            "permissions of space DEV (HTTP 403",
        ),
        ("/rest/api/space/DEV/permissions", Fault(404, None), "permissions of space DEV (HTTP 404"),
        ("/rest/api/content/*/restriction/byOperation", Fault.forbidden(), "restrictions of page"),
        (
            "/rest/api/content/*/restriction/byOperation",
            Fault.malformed_json(),
            "restrictions of page",
        ),
    ],
    ids=["space-403", "old-server-404", "restrictions-403", "restrictions-malformed"],
)
def test_unreadable_permissions_leave_none_and_a_warning(
    wiki: FakeConfluence, path: str, fault: Fault, why: str
) -> None:
    simple_site(wiki)
    wiki.inject(path, fault)
    docs = crawl(wiki)
    assert len(docs) == 3 and not any(isinstance(d, FailedDocument) for d in docs)
    for doc in docs:
        assert "permissions_data" not in doc.data_source
        assert len(doc.warnings) == 1 and why in doc.warnings[0]
        assert doc.warnings[0].startswith("permissions_data left out: could not read")


# -- faults --------------------------------------------------------------------------------------


def test_429_with_retry_after_is_honoured(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.inject("/rest/api/content/102", Fault.too_many_requests(retry_after=1))
    started = time.monotonic()
    docs = crawl(wiki)
    assert time.monotonic() - started >= 0.9  # waited as the server asked, not the tiny backoff
    assert not any(isinstance(d, FailedDocument) for d in docs)
    assert [r.status for r in wiki.requests_to("/rest/api/content/102")] == [429, 200]


def test_5xx_is_retried_then_succeeds(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.inject("/rest/api/content/101", Fault.server_error(502, times=2))
    docs = crawl(wiki)
    assert text_of(docs[0]) == "Alpha alpha body"
    assert [r.status for r in wiki.requests_to("/rest/api/content/101")] == [502, 502, 200]


def test_5xx_forever_fails_that_page_alone(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.inject("/rest/api/content/102", Fault.server_error(503, times=None))
    alpha, beta, gamma = crawl(wiki)
    assert isinstance(beta, FailedDocument) and beta.data is None and beta.version is None
    assert beta.error == "page 102: HTTP 503 after 2 retries"
    assert beta.warnings == [beta.error] and beta.filename == "DEV/102-beta.html"
    with pytest.raises(DocumentError, match=r"DEV/102-beta.html: page 102: HTTP 503"):
        beta.read_bytes()
    assert beta.content_hash().startswith("unreadable:")
    assert text_of(alpha) == "Alpha alpha body" and text_of(gamma) == "Gamma gamma body"
    assert len(wiki.requests_to("/rest/api/content/102")) == 3
    wiki.faults.clear()
    assert crawl(wiki)[1].id == beta.id  # the failure is recorded under the page's own id


def test_timeout_is_retried_then_succeeds(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.inject("/rest/api/content/101", Fault.slow(1.0, times=1))
    docs = crawl(wiki)
    assert text_of(docs[0]) == "Alpha alpha body"
    assert len(wiki.requests_to("/rest/api/content/101")) == 2


def test_timeout_forever_fails_that_page_alone(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.inject("/rest/api/content/101", Fault.slow(1.0, times=None))
    alpha, beta, _ = crawl(wiki)
    assert isinstance(alpha, FailedDocument)
    assert alpha.error == "page 101: no answer within 0.5s (3 tries)"
    assert text_of(beta) == "Beta beta body"


def test_page_deleted_between_listing_and_fetching_fails_alone(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.inject("/rest/api/content/103", Fault.gone())
    *ok, gone = crawl(wiki)
    assert isinstance(gone, FailedDocument) and len(ok) == 2
    assert gone.error == "page 103: deleted or no longer visible since it was listed (HTTP 404)"
    assert len(wiki.requests_to("/rest/api/content/103")) == 1  # a 404 is not retried


def test_malformed_json_body_fails_that_page_alone(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.inject("/rest/api/content/101", Fault.malformed_json())
    alpha, beta, gamma = crawl(wiki)
    assert isinstance(alpha, FailedDocument)
    assert alpha.error == "page 101: the page response is not JSON"
    assert not isinstance(beta, FailedDocument) and not isinstance(gamma, FailedDocument)


def test_page_without_a_body_fails_alone(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    wiki.inject("/rest/api/content/101", Fault(200, None, body=b'{"id": "101", "title": "Alpha"}'))
    alpha, *_ = crawl(wiki)
    assert isinstance(alpha, FailedDocument)
    assert alpha.error == "page 101: the page response has no HTML body (body.view.value)"


def test_broken_html_is_passed_on_for_the_partitioner(wiki: FakeConfluence) -> None:
    wiki.add_space("DEV")
    broken = '<p>unclosed <b>bold <div><table><tr><td>cell</p></tr><img src="/x.png" <a href='
    wiki.add_page("DEV", "Broken", broken, page_id="1")
    wiki.add_file("/x.png", PNG, "image/png")
    (doc,) = crawl(wiki, extract_images=True, extract_files=True)
    assert not isinstance(doc, FailedDocument)
    assert "cell" in text_of(doc) and "unclosed" in text_of(doc)


def test_failed_space_listing_is_a_failed_document_and_other_spaces_go_on(
    wiki: FakeConfluence,
) -> None:
    for key in ("A", "B"):
        wiki.add_space(key)
        wiki.add_page(key, f"{key} page", "<p>x</p>")
    wiki.inject("/rest/api/content", Fault.server_error(500, times=3))  # A's listing, all tries
    failed, b_page = crawl(wiki)
    assert isinstance(failed, FailedDocument) and failed.filename == "A/"
    assert failed.error == "could not list the pages of space A: HTTP 500 after 2 retries"
    assert b_page.data_source["record_locator"]["space_key"] == "B"


# -- connection check ----------------------------------------------------------------------------


def test_check_connection_ok(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    assert check_connection(config(wiki), FAST) == ConnectionCheck(True, "SUCCESS", None)
    assert not wiki.requests_to("/rest/api/content*")  # no crawl


def test_check_connection_bad_credentials(wiki: FakeConfluence) -> None:
    result = check_connection(config(wiki, token="nope"), FAST)
    assert (result.ok, result.status) == (False, "FAILURE")
    assert result.reason is not None and "rejected the credentials (HTTP 401" in result.reason


def test_check_connection_unreachable() -> None:
    with socket.socket() as sock:  # bound, never listening: refused, and no one else's port
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = WikiConfig(url=f"http://127.0.0.1:{port}", token=SecretStr(PAT))
        result = check_connection(config, FAST)
    assert not result.ok and result.status == "FAILURE"
    assert result.reason is not None
    assert re.search(
        r"cannot use the wiki at http://127\.0\.0\.1:\d+: connection failed", result.reason
    )


def test_check_connection_not_a_wiki(cloud_wiki: FakeConfluence) -> None:
    result = check_connection(config(cloud_wiki, url=cloud_wiki.origin), FAST)  # forgot /wiki
    assert result.reason is not None and "no wiki REST API" in result.reason


def test_check_connection_answer_that_is_not_the_rest_api(wiki: FakeConfluence) -> None:
    wiki.inject("/rest/api/space", Fault(200, None, body=b"<html>login</html>"))
    result = check_connection(config(wiki), FAST)
    assert result.reason is not None and "answered, but not as the wiki REST API" in result.reason


def test_check_connection_missing_space(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    result = check_connection(config(wiki, spaces=["DEV", "NOPE"]), FAST)
    assert result.reason is not None and "'NOPE'" in result.reason and "'DEV'" not in result.reason


def test_check_connector_dispatches_and_validates(wiki: FakeConfluence) -> None:
    simple_site(wiki)
    raw = {"url": wiki.url, "username": USER, "token": API_TOKEN}
    assert check_connector("wiki", raw).ok
    assert check_connector("Confluence", raw).ok
    bad = check_connector("wiki", {"url": wiki.url, "token": API_TOKEN, "password": PASSWORD})
    assert not bad.ok and bad.reason is not None and "config is invalid" in bad.reason
    assert not any(secret in bad.reason for secret in SECRETS)
    unknown = check_connector("ftp", {})
    assert (
        unknown.reason
        == "no connection check for connector type 'ftp'; known types: vectordb, wiki"
    )


# -- secrets -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", sorted(AUTH_MODES))
def test_secrets_never_appear_in_logs_reprs_errors_or_outputs(
    wiki: FakeConfluence, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    _files_site(wiki)
    wiki.inject("/rest/api/content/9/restriction/byOperation", Fault.forbidden())
    fields, _ = AUTH_MODES[mode]
    caplog.set_level(logging.DEBUG)
    source = WikiSource(config(wiki, extract_files=True, extract_images=True, **fields), FAST)
    docs = list(source.documents())
    outputs = [repr(source), repr(source.config)]
    outputs += [json.dumps(d.data_source) + " ".join(d.warnings) for d in docs]
    wrong = {k: (v + "x" if k in ("token", "password") and v else v) for k, v in fields.items()}
    with pytest.raises(ConnectorError, match="rejected") as caught:
        WikiSource(config(wiki, **wrong), FAST).precheck()
    outputs.append(str(caught.value))
    outputs.append(str(check_connection(config(wiki, **wrong), FAST)))
    text = caplog.text + "\n".join(outputs)
    assert "Authorization" not in caplog.text
    assert not any(secret in text for secret in SECRETS)


def test_slugify() -> None:
    assert slugify("Getting started in Confluence") == "getting-started-in-confluence"
    assert slugify("한국어 페이지!") == "한국어-페이지"
    assert slugify("???") == ""
    assert len(slugify("x" * 300)) == 60
