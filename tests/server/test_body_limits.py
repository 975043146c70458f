"""Request bodies are bounded (`serve --max-body-mb`): a JSON body or an on-demand job's
`request_data` over the limit is a 413 that states the limit and how to raise it. A declared
length over it is refused before the body is read; a chunked body is cut as soon as it passes it.
Real loopback HTTP; the raw-socket cases send the headers, then less than they declare."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ingestflow.service import UploadLimits
from tests.server.conftest import API, Server, Servers, local_workflow, two_files

LIMIT = 2048  # "2 KB" in messages
LIMITS = UploadLimits(max_files=3, max_file_bytes=1000, max_body_bytes=LIMIT)
JSON = {"content-type": "application/json"}
WIKI = {"name": "w", "type": "wiki", "config": {"url": "http://127.0.0.1:9", "token": "t"}}


@pytest.fixture
def small(serve: Servers) -> Iterator[Server]:
    """A server that launches nothing, with a 2 KB body limit."""
    served = serve(background=False, limits=LIMITS)
    yield served
    for body in served.bodies():
        assert "Traceback" not in body and str(served.workspace) not in body, body


def padded(body: dict[str, Any], size: int) -> bytes:
    """`body` as JSON text of exactly `size` bytes (trailing spaces are JSON whitespace)."""
    text = json.dumps(body).encode()
    assert len(text) <= size
    return text + b" " * (size - len(text))


def assert_413(answer: httpx.Response, *words: str) -> str:
    assert answer.status_code == 413, answer.text
    detail = answer.json()["detail"]
    assert isinstance(detail, str)
    for word in ("at most 2 KB", "--max-body-mb", *words):
        assert word in detail, detail
    return detail


def json_routes(http: httpx.Client) -> list[tuple[str, str, dict[str, Any]]]:
    """Every route that takes a JSON body: method, path, and a valid body for it."""
    workflow = http.post(f"{API}/workflows", json=local_workflow("stored")).json()
    source = http.post(f"{API}/sources", json=WIKI).json()
    destination = {
        "name": "d",
        "type": "vectordb",
        "config": {
            "uri": "m.db",
            "user": "",
            "password": "p",
            "db_name": "",
            "collection_name": "c",
        },
    }
    stored_destination = http.post(f"{API}/destinations", json=destination).json()
    return [
        ("POST", "/workflows", local_workflow("new")),
        ("PUT", f"/workflows/{workflow['id']}", {"name": "renamed"}),
        ("POST", "/sources", {**WIKI, "name": "w2"}),
        ("PUT", f"/sources/{source['id']}", {"config": WIKI["config"]}),
        ("POST", "/destinations", {**destination, "name": "d2"}),
        ("PUT", f"/destinations/{stored_destination['id']}", {"config": destination["config"]}),
    ]


def test_every_json_body_over_the_limit_is_413_and_one_at_the_limit_is_read(
    small: Server,
) -> None:
    http = small.client()
    for method, path, body in json_routes(http):
        over = http.request(method, API + path, content=padded(body, LIMIT + 1), headers=JSON)
        assert_413(over, "2 KB")
        at = http.request(method, API + path, content=padded(body, LIMIT), headers=JSON)
        assert at.status_code == 200, (method, path, at.text)


def raw_exchange(server: Server, head: list[str], body: bytes) -> tuple[int, dict[str, Any]]:
    """Send a request's head and `body` over a socket (the body may be less than the head
    declares, or chunks without the last one) and read the answer's status and JSON."""
    host, port = server.url.removeprefix("http://").split(":")
    lines = [*head, f"Host: {host}:{port}", f"service-api-key: {server.key}", "", ""]
    with socket.create_connection((host, int(port))) as sock:
        sock.settimeout(30)  # the deadline: an answer that never comes fails the test loudly
        sock.sendall("\r\n".join(lines).encode() + body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            got = sock.recv(65536)
            assert got, f"the server closed the connection without answering: {answer!r}"
            answer += got
        top, _, rest = answer.partition(b"\r\n\r\n")
        headers = dict(
            line.lower().split(": ", 1) for line in top.decode().split("\r\n")[1:] if ": " in line
        )
        length = int(headers["content-length"])
        while len(rest) < length:
            got = sock.recv(65536)
            assert got, "the server closed the connection mid-answer"
            rest += got
    return int(top.split()[1]), json.loads(rest[:length])


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(
    small: Server,
) -> None:
    head = [
        f"POST {API}/workflows HTTP/1.1",
        "Content-Type: application/json",
        f"Content-Length: {50 << 20}",
    ]
    status, answer = raw_exchange(small, head, b'{"name": ')  # 50 MB declared, 9 bytes sent
    assert status == 413, answer
    assert "50 MB" in answer["detail"] and "--max-body-mb" in answer["detail"]


def test_a_chunked_body_is_cut_once_it_passes_the_limit(small: Server) -> None:
    head = [
        f"POST {API}/workflows HTTP/1.1",
        "Content-Type: application/json",
        "Transfer-Encoding: chunked",
    ]
    chunk = b"x" * 1000
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(3))  # never the last
    status, answer = raw_exchange(small, head, body)
    assert status == 413, answer
    assert "at most 2 KB" in answer["detail"] and "--max-body-mb" in answer["detail"]


def test_request_data_over_the_limit_is_413(small: Server) -> None:
    http = small.client()
    nodes = local_workflow("x")["workflow_nodes"]
    big = json.dumps({"job_nodes": nodes}) + " " * LIMIT
    answer = http.post(f"{API}/jobs", data={"request_data": big}, files=two_files())
    assert_413(answer, "request_data")
    fits = json.dumps({"job_nodes": nodes}).ljust(LIMIT)
    answer = http.post(f"{API}/jobs", data={"request_data": fits}, files=two_files())
    assert answer.status_code == 200, answer.text


def test_a_chunked_upload_is_cut_once_it_passes_what_the_limits_allow(small: Server) -> None:
    http = small.client()
    workflow = http.post(f"{API}/workflows", json=local_workflow("chunked")).json()
    head = [
        f"POST {API}/workflows/{workflow['id']}/run HTTP/1.1",
        "Content-Type: multipart/form-data; boundary=b0undary",
        "Transfer-Encoding: chunked",
    ]
    part = b'--b0undary\r\nContent-Disposition: form-data; name="input_files"; filename="a.txt"\r\n'
    chunks = [part + b"Content-Type: text/plain\r\n\r\n", *[b"x" * (1 << 16)] * 20]  # 1.25 MB
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)  # never the last chunk
    status, answer = raw_exchange(small, head, body)
    assert status == 413, answer
    # its file passes the 1000 bytes a file may be long before the body passes its own bound
    assert "a.txt is larger than the 1000 bytes" in answer["detail"], answer
    assert not list((small.workspace / "uploads").rglob("a.txt"))


def test_an_upload_over_the_file_limit_is_refused_while_it_streams_in(small: Server) -> None:
    http = small.client()
    workflow = http.post(f"{API}/workflows", json=local_workflow("streamed")).json()
    part = b'--b0undary\r\nContent-Disposition: form-data; name="input_files"; filename="a.txt"\r\n'
    declared = 1 << 20  # within what the whole request may be (3 files, and room for headers)
    head = [
        f"POST {API}/workflows/{workflow['id']}/run HTTP/1.1",
        "Content-Type: multipart/form-data; boundary=b0undary",
        f"Content-Length: {declared}",
    ]
    sent = part + b"Content-Type: text/plain\r\n\r\n" + b"x" * (64 << 10)
    # 64 KB of the file, 1000 bytes allowed: the answer comes without the rest of the body
    status, answer = raw_exchange(small, head, sent)
    assert len(sent) < declared
    assert status == 413, answer
    assert answer["detail"].startswith("a.txt is larger than the 1000 bytes a file may be")
    assert "--max-file-mb" in answer["detail"]
    assert not list((small.workspace / "uploads").rglob("a.txt"))
