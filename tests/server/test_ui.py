"""The web UI's sign-in and pages over real loopback HTTP: 401 without a session, a one-time
token or an API key opens one (an HttpOnly, SameSite=Strict cookie), API keys keep working for
/api/v1, files are named by their ids (no path escapes), element text is escaped and tables are
sanitised, connectors' secrets stay masked, and `ingestflow ui` prints a link that works once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import httpx
import pytest

from ingestflow.server.ui.render import crop_url, table_html
from ingestflow.service import Service
from tests.fakes.confluence import FakeConfluence
from tests.server.conftest import API, NODES, SECRETS, Server, Servers, wiki_source

PAGES = ("/ui/", "/ui", "/ui/diff", "/ui/workflows", "/ui/connectors", "/ui/jobs/abc")
EVIL = b"Beware <script>alert(1)</script> and <img src=x onerror=alert(2)> here.\n"


@pytest.fixture(autouse=True)
def no_leaks(serve: Servers) -> Iterator[None]:
    """After each test: no body carried a stored secret or a traceback."""
    yield
    for body in serve.bodies():
        assert "Traceback" not in body, body
        for secret in SECRETS:
            assert secret not in body, body


def signed_in(server: Server) -> httpx.Client:
    """A client holding a session opened with a fresh one-time token."""
    http = server.client(key="")
    answer = http.get("/ui/signin", params={"token": server.app.state.signin.issue_token()})
    assert answer.status_code == 303, answer.text
    return http


def finished_job(server: Server, files: list[tuple[str, tuple[str, bytes, str]]]) -> dict:
    """An on-demand job of Fast → chunk over uploaded files, finished; its full record."""
    http = server.client()
    answer = http.post(
        f"{API}/jobs/", data={"request_data": json.dumps({"job_nodes": NODES})}, files=files
    )
    assert answer.status_code == 200, answer.text
    server.wait_job(answer.json()["id"])
    with Service(server.workspace) as service:
        return service.jobs.get(answer.json()["id"])


def test_pages_answer_401_with_the_sign_in_page_without_a_session(server: Server) -> None:
    for http in (server.client(key=""), server.client()):  # an API key header is no session
        for path in PAGES:
            answer = http.get(path)
            assert answer.status_code == 401, (path, answer.text)
            assert '<form method="post" action="/ui/login"' in answer.text
    forged = server.client(key="", cookies={"ingestflow_ui": "made-up"})
    assert forged.get("/ui/").status_code == 401
    assert forged.get("/ui/jobs/abc/progress").status_code == 401
    # the API keeps its keys
    assert server.client(key="").get(f"{API}/workflows").status_code == 401
    assert server.client().get(f"{API}/workflows").status_code == 200
    # the sign-in page itself and the static files need no session
    assert server.client(key="").get("/ui/login").status_code == 200
    assert server.client(key="").get("/ui/static/ui.css").status_code == 200


def test_a_token_signs_in_once_with_an_httponly_strict_cookie(server: Server) -> None:
    token = server.app.state.signin.issue_token()
    http = server.client(key="")
    answer = http.get("/ui/signin", params={"token": token})
    assert answer.status_code == 303 and answer.headers["location"] == "/ui/"
    cookie = answer.headers["set-cookie"]
    port = server.url.rpartition(":")[2]
    assert cookie.startswith(f"ingestflow_ui_{port}=") and token not in cookie
    attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/ui"} <= attributes
    page = http.get("/ui/")
    assert page.status_code == 200 and "<h1>Jobs</h1>" in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    # used once: the same link again, or a wrong one, signs nobody in
    for again in (token, token[:-2], ""):
        other = server.client(key="")
        refused = other.get("/ui/signin", params={"token": again})
        assert refused.status_code == 401 and "set-cookie" not in refused.headers
        assert "expired (a link lasts 5 minutes) or was used already" in refused.text
        assert other.get("/ui/").status_code == 401
    assert http.get("/ui/").status_code == 200  # the session it opened lasts
    # signing out ends the session
    assert http.post("/ui/logout").status_code == 303
    assert http.get("/ui/").status_code == 401


def test_an_unused_sign_in_link_expires_within_minutes(server: Server) -> None:
    now = [1000.0]
    signin = server.app.state.signin
    signin.clock = lambda: now[0]  # the sign-in's clock, moved by the test
    late, soon = signin.issue_token(), signin.issue_token()
    now[0] += 4 * 60
    assert server.client(key="").get("/ui/signin", params={"token": soon}).status_code == 303
    now[0] += 2 * 60  # 6 minutes after it was made
    refused = server.client(key="").get("/ui/signin", params={"token": late})
    assert refused.status_code == 401 and "expired" in refused.text


def test_an_api_key_signs_in_on_the_sign_in_page(server: Server) -> None:
    http = server.client(key="")
    refused = http.post("/ui/login", data={"key": server.key + "x"})
    assert refused.status_code == 401 and "wrong or revoked" in refused.text
    assert server.key not in refused.text
    answer = http.post("/ui/login", data={"key": server.key})
    assert answer.status_code == 303 and "httponly" in answer.headers["set-cookie"].lower()
    assert http.get("/ui/workflows").status_code == 200
    with Service(server.workspace) as service:
        record, other = service.keys.create("to revoke")
        service.keys.revoke(record.id)
    assert server.client(key="").post("/ui/login", data={"key": other}).status_code == 401


def test_a_session_opened_with_an_api_key_ends_when_the_key_is_revoked(server: Server) -> None:
    with Service(server.workspace) as service:
        record, key = service.keys.create("for the browser")
    by_key, by_token = server.client(key=""), signed_in(server)
    assert by_key.post("/ui/login", data={"key": key}).status_code == 303
    assert by_key.get("/ui/").status_code == 200
    with Service(server.workspace) as service:  # as `ingestflow keys revoke` does
        service.keys.revoke(record.id)
    assert server.client(key=key).get(f"{API}/workflows").status_code == 401
    assert by_key.get("/ui/").status_code == 401
    assert by_key.get("/ui/jobs/abc/progress").status_code == 401
    assert by_token.get("/ui/").status_code == 200  # a link's session holds no key


def test_two_servers_keep_their_own_sessions_and_never_take_each_others(serve: Servers) -> None:
    one, two = serve("one"), serve("two")
    # one client for both, as one browser: it sends a host's cookies to every port of it
    browser = one.client(key="")
    for served in (one, two):
        token = served.app.state.signin.issue_token()
        assert browser.get(f"{served.url}/ui/signin", params={"token": token}).status_code == 303
    assert browser.get(f"{one.url}/ui/").status_code == 200  # not signed out by the other
    assert browser.get(f"{two.url}/ui/").status_code == 200
    # a session of one server, replayed into the other under the other's cookie name, opens
    # nothing there
    sessions = {c.name: c.value for c in browser.cookies.jar}
    (one_session,) = (v for k, v in sessions.items() if k.endswith(one.url.rpartition(":")[2]))
    two_cookie = "ingestflow_ui_" + two.url.rpartition(":")[2]
    replayed = two.client(key="", cookies={two_cookie: one_session})
    assert replayed.get("/ui/").status_code == 401
    # signing out of one leaves the other signed in
    assert browser.post(f"{one.url}/ui/logout").status_code == 303
    assert browser.get(f"{one.url}/ui/").status_code == 401
    assert browser.get(f"{two.url}/ui/").status_code == 200


def test_files_are_named_by_id_and_no_path_escapes(server: Server) -> None:
    job = finished_job(server, [("input_files", ("plan.txt", b"Release plan.\n", "text/plain"))])
    (entry,) = job["files"]
    http = signed_in(server)
    base = f"/ui/jobs/{job['id']}/files"
    assert http.get(f"{base}/{entry['file_id']}").status_code == 200
    for bad in ("plan.txt", "..%2F..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", entry["file_id"][:8]):
        answer = http.get(f"{base}/{bad}")
        assert answer.status_code == 404, (bad, answer.text)
        assert "root:" not in answer.text and str(server.workspace) not in answer.text
    for bad in ("../../../etc/passwd", "..%2F..%2Fapp.py", "%2e%2e/%2e%2e/app.py"):
        answer = http.get(f"/ui/static/{bad}")
        assert answer.status_code == 404 and "def create_app" not in answer.text
    # a text file has no pages to show; a page of nothing is refused
    answer = http.get(f"{base}/{entry['file_id']}/pages/1")
    assert answer.status_code == 404 and str(server.workspace) not in answer.text
    assert http.get(f"{base}/{entry['file_id']}/pages/0").status_code == 422
    assert http.get(f"{base}/{entry['file_id']}?node=9").status_code == 404


def test_element_text_is_escaped_and_the_job_pages_show_its_figures(server: Server) -> None:
    job = finished_job(
        server,
        [
            ("input_files", ("evil.txt", EVIL, "text/plain")),
            ("input_files", ("empty.txt", b"", "text/plain")),
        ],
    )
    http = signed_in(server)
    page = http.get(f"/ui/jobs/{job['id']}").text
    assert "<script>alert" not in page
    (failed,) = job["failed_files"]
    assert failed["document"] == "empty.txt" and re.sub(r"\s+", " ", failed["error"]) in page
    ok = next(f for f in job["files"] if f["status"] == "SUCCESS")
    shown = http.get(f"/ui/jobs/{job['id']}/files/{ok['file_id']}?node=1").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    assert "<script>alert" not in shown and "<img src=x" not in shown
    progress = http.get(f"/ui/jobs/{job['id']}/progress").json()
    assert progress["files"] == {"ok": 1, "failed": 1} and progress["active"] is False
    assert [n["node_name"] for n in progress["node_stats"]] == ["Partitioner", "Chunker"]


def test_tables_are_sanitised_to_table_markup() -> None:
    dirty = (
        '<table onclick="x()"><tr><td colspan="2" style="color:red">a<script>alert(1)</script>'
        '</td><td><img src=x onerror=alert(2)><a href="javascript:alert(3)">b</a></td></tr>'
        "</table><iframe src=//evil></iframe>"
    )
    clean = str(table_html(dirty))
    assert clean == '<table><tbody><tr><td colspan="2">a</td><td>b</td></tr></tbody></table>'


def test_element_images_show_only_as_plain_image_data() -> None:
    import base64

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
    ok = {"metadata": {"image_base64": png, "image_mime_type": "image/png"}}
    assert crop_url(ok) == f"data:image/png;base64,{png}"
    for meta in (
        {"image_base64": png, "image_mime_type": "text/html"},
        {"image_base64": png + '" onerror="alert(1)', "image_mime_type": "image/png"},
        {"image_base64": 7},
        {},
    ):
        assert crop_url({"metadata": meta}) == ""


def test_workflows_and_connectors_are_listed_with_secrets_masked(
    server: Server, wiki: FakeConfluence
) -> None:
    made = server.client().post(f"{API}/sources", json=wiki_source(wiki))
    assert made.status_code in (200, 201), made.text
    body = {"name": "weekly <b>wiki</b>", "workflow_type": "custom", "workflow_nodes": NODES}
    body["source_id"] = made.json()["id"]
    stored = server.client().post(f"{API}/workflows", json=body)
    assert stored.status_code in (200, 201), stored.text
    http = signed_in(server)
    page = http.get("/ui/connectors").text  # no_leaks: the wiki token is never in a body
    assert "team wiki" in page and "<td>source</td><td>wiki</td>" in page and "********" in page
    listed = http.get("/ui/workflows").text
    assert "weekly &lt;b&gt;wiki&lt;/b&gt;" in listed and made.json()["id"] in listed
    assert "Partitioner (partition / unstructured_api)" in listed


def test_the_diff_page_names_what_it_cannot_compare(server: Server) -> None:
    http = signed_in(server)
    answer = http.get("/ui/diff", params={"a": "nope", "b": "nada"})
    assert answer.status_code == 404 and "not found in this workspace" in answer.text


# --- `ingestflow ui` as a user starts it ------------------------------------------------------
EXE = [sys.executable, "-c", "from ingestflow.cli import main; main()"]


@pytest.mark.slow
def test_ui_command_prints_a_one_time_link_on_loopback(tmp_path: Path) -> None:
    ui = subprocess.Popen(
        [*EXE, "ui", "--workspace", str(tmp_path / "ws"), "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 90
        link = None
        while link is None:
            assert ui.poll() is None, ui.communicate()
            assert time.monotonic() < deadline, "no sign-in link printed"
            line = ui.stderr.readline() if ui.stderr else ""
            lines.append(line)
            found = re.search(r"(http://127\.0\.0\.1:\d+)/ui/signin\?token=(\S+)", line)
            link = found and (found.group(1), found.group(2))
        base, token = link
        http = httpx.Client(base_url=base)
        answer = http.get("/ui/signin", params={"token": token})
        assert answer.status_code == 303 and "httponly" in answer.headers["set-cookie"].lower()
        assert http.get("/ui/").status_code == 200
        again = httpx.get(f"{base}/ui/signin", params={"token": token})
        assert again.status_code == 401
        assert httpx.get(f"{base}{API}/workflows").status_code == 401  # keys guard the API
    finally:
        ui.send_signal(signal.SIGINT)
        _, err = ui.communicate(timeout=60)
    log = [line for line in err.splitlines() if " /ui/" in line or f" {API}" in line]
    assert any("GET /ui/signin 303" in line for line in log), err
    assert all(token not in line for line in log), log  # the log never shows the token
    assert ui.returncode == 0 and "Traceback" not in err


@pytest.mark.slow
def test_ui_command_opens_the_link_in_the_browser(tmp_path: Path) -> None:
    """Without --no-browser the link goes to the user's browser ($BROWSER, here a command that
    writes down the URL it is given)."""
    opened = tmp_path / "opened.txt"
    record = f"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])"
    browser = f'{sys.executable} -c "{record}" %s'
    ui = subprocess.Popen(
        [*EXE, "ui", "--workspace", str(tmp_path / "ws"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BROWSER": browser},
    )
    try:
        deadline = time.monotonic() + 90
        while not opened.exists() or not opened.read_text():
            assert ui.poll() is None, ui.communicate()
            assert time.monotonic() < deadline, "the browser was not opened"
            time.sleep(0.2)
        # the browser's command line (seen by every local user) holds no token: the URL of a
        # page only this user can read, which sends the browser on to the link
        url = opened.read_text()
        assert url.startswith("file://") and "token" not in url, url
        page = Path(url2pathname(urlsplit(url).path))
        assert page.stat().st_mode & 0o777 == 0o600
        assert page.parent.stat().st_mode & 0o777 == 0o700
        found = re.search(
            r'url=(http://127\.0\.0\.1:\d+/ui/signin\?token=[^"]+)"', page.read_text()
        )
        assert found, page.read_text()
        link = found.group(1)
        http = httpx.Client()
        assert http.get(link).status_code == 303  # the link the browser got signs in, once
        assert http.get(link).status_code == 401
    finally:
        ui.send_signal(signal.SIGINT)
        _, err = ui.communicate(timeout=60)
    assert ui.returncode == 0 and link in err  # printed too, for another browser
    assert not page.exists()  # removed at exit


def test_ui_command_says_when_its_port_is_taken(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*EXE, "ui", "--workspace", str(tmp_path / "ws"), "--port", str(port), "--no-browser"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 3, result.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr


def test_long_documents_are_drawn_ten_pages_at_a_time(server: Server) -> None:
    job = finished_job(server, [("input_files", ("long.txt", b"A long document.\n", "text/plain"))])
    (entry,) = job["files"]
    node = job["node_stats"][0]["node_id"]
    # the partitioner's kept output, as High Res writes it for 25 pages, one box a page
    pages = [
        {
            "type": "Title" if n % 2 else "NarrativeText",
            "text": f"Text of page {n}",
            "metadata": {
                "page_number": n,
                "coordinates": {
                    "points": [[10, 20], [10, 60], [300, 60], [300, 20]],
                    "system": "PixelSpace",
                    "layout_width": 1700,
                    "layout_height": 2200,
                },
            },
        }
        for n in range(1, 26)
    ]
    with Service(server.workspace) as service:
        path = service.ws.node_output_path(job["id"], node, entry["file_id"])
    path.write_text(json.dumps(pages))
    http = signed_in(server)
    base = f"/ui/jobs/{job['id']}/files/{entry['file_id']}"
    first = http.get(base).text
    assert first.count('class="page-view"') == 10
    assert first.count('<rect class="box') == 10
    assert "page-image" not in first and "drawn blank" in first  # a text file has no pages
    windows = first.split('id="page-windows"')[1].split("</nav>")[0]
    assert re.findall(r'page=(\d+)"', windows) == ["1", "11", "21"]
    later = http.get(base, params={"page": 11}).text
    shown = re.findall(r'data-page="(\d+)"', later)
    assert shown == [str(n) for n in range(11, 21)]
    assert re.findall(r"Text of page (\d+)", later) == [str(n) for n in range(11, 21)]
    assert "15 element(s) on other pages" in later
