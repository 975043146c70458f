"""The API's documentation pages, /docs (Swagger UI) and /redoc (ReDoc), over real loopback
HTTP: everything they load is served by the server itself (no CDN, no web fonts), under the UI's
security headers, and in a real browser (Debian's chromium, headless) they draw the API with no
request leaving the machine and no script error."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.server.conftest import Server

PAGES = {"/docs": ".swagger-ui .info .title", "/redoc": "h1"}


def test_the_docs_pages_load_everything_from_the_server(server: Server) -> None:
    http = server.client(key="")  # the pages, as FastAPI's, need no key
    for path in PAGES:
        answer = http.get(path)
        assert answer.status_code == 200, answer.text
        policy = answer.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self';" in policy
        assert "frame-ancestors 'none'" in policy and "http" not in policy
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert "<script>" not in answer.text  # no inline script: every script is a file
        links = re.findall(r'(?:src|href)="([^"]*)"', answer.text)
        assert links and all(link.startswith("/docs/static/") for link in links), links
        assert "//" not in answer.text.replace("<!doctype html>", "")  # no other host
        for link in links:
            asset = http.get(link)
            assert asset.status_code == 200 and asset.content, link
            assert asset.headers["x-content-type-options"] == "nosniff"
            assert asset.headers["content-type"].split(";")[0] in (
                "text/javascript",
                "text/css",
                "image/png",
            )
    assert b"cdn.redoc.ly" not in http.get("/docs/static/redoc.standalone.js").content
    assert "validatorUrl: null" in http.get("/docs/static/swagger-init.js").text
    for bad in ("nope.js", "..%2Fapp.py", "..%2F..%2Fserver%2Fapp.py"):
        assert http.get(f"/docs/static/{bad}").status_code == 404, bad


def watched(browser: Any) -> tuple[Any, list[str], list[str]]:
    """A new page, the URLs it requests and its script errors."""
    page = browser.new_page()
    requests: list[str] = []
    failures: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: failures.append(str(error)))
    page.on(
        "console",
        lambda message: failures.append(message.text) if message.type == "error" else None,
    )
    return page, requests, failures


@pytest.mark.slow
def test_the_docs_pages_draw_the_api_offline_in_a_browser(server: Server, browser: Any) -> None:
    for path, title in PAGES.items():
        page, requests, failures = watched(browser)
        page.goto(server.url + path)
        page.wait_for_selector(title, timeout=30_000)
        assert page.inner_text(title).startswith("ingestflow"), path
        assert any(url.endswith("/openapi.json") for url in requests), requests
        away = [u for u in requests if not u.startswith((server.url + "/", "blob:" + server.url))]
        assert away == [], (path, away)
        assert failures == [], (path, failures)
        page.close()
