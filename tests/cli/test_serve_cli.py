"""`ingestflow serve` as a user starts it: a real process, a real port, a key from `keys create`."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

EXE = [sys.executable, "-c", "from ingestflow.cli import main; main()"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_refuses_to_start_without_a_key(tmp_path: Path) -> None:
    result = subprocess.run(
        [*EXE, "serve", "--workspace", str(tmp_path / "ws"), "--port", str(_free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "no API key" in result.stderr and "ingestflow keys create" in result.stderr


@pytest.mark.slow
def test_serve_answers_with_a_key_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    made = subprocess.run(
        [*EXE, "keys", "create", "--workspace", ws], capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    port = _free_port()
    server = subprocess.Popen(
        [*EXE, "serve", "--workspace", ws, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.get(f"{base}/api/v1/templates", headers={"service-api-key": key})
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        assert answer.status_code == 200
        assert "fast_partition" in {t["id"] for t in answer.json()}
        sdk_header = httpx.get(f"{base}/api/v1/jobs/", headers={"unstructured-api-key": key})
        assert sdk_header.status_code == 200 and sdk_header.json() == []
        refused = httpx.get(f"{base}/api/v1/templates", headers={"service-api-key": key + "x"})
        assert refused.status_code == 401 and "API key" in refused.json()["detail"]
        assert httpx.get(f"{base}/openapi.json").status_code == 200
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    assert "Traceback" not in err and key not in err


@pytest.mark.slow
def test_serve_max_body_mb_bounds_json_bodies(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    made = subprocess.run(
        [*EXE, "keys", "create", "--workspace", ws], capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    port = _free_port()
    server = subprocess.Popen(
        [*EXE, "serve", "--workspace", ws, "--port", str(port), "--max-body-mb", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/api/v1/workflows"
        headers = {"service-api-key": key, "content-type": "application/json"}
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, headers=headers)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        body = b'{"name": "big", "workflow_type": "custom"}'
        over = httpx.post(url, headers=headers, content=body + b" " * (1 << 20))
        assert over.status_code == 413, over.text
        assert "at most 1 MB" in over.json()["detail"] and "--max-body-mb" in over.text
        under = httpx.post(url, headers=headers, content=body + b" " * ((1 << 20) - len(body)))
        assert under.status_code == 422, under.text  # read and judged: a custom one needs nodes
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    assert server.returncode == 0, err


@pytest.mark.slow
def test_serve_logs_one_line_per_request_without_secrets(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    made = subprocess.run(
        [*EXE, "keys", "create", "--workspace", ws], capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    port = _free_port()
    server = subprocess.Popen(
        [*EXE, "serve", "--workspace", ws, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    secret = "tok-query-secret-5150"
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                ok = httpx.get(f"{base}/api/v1/templates", headers={"service-api-key": key})
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        assert ok.status_code == 200
        refused = httpx.get(
            f"{base}/api/v1/jobs", params={"token": secret}, headers={"service-api-key": "nope"}
        )
        assert refused.status_code == 401
        missing = httpx.get(f"{base}/api/v1/jobs/no-such-job", headers={"service-api-key": key})
        assert missing.status_code == 404
        forged = httpx.get(f"{base}/api/v1/jobs/x%0Aforged", headers={"service-api-key": key})
        assert forged.status_code == 404
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    logged = out + err
    lines = re.findall(r"^\S+ \S+ (GET \S+ \d{3} \d+\.\d ms)$", err, re.M)
    assert [line.rsplit(" ", 2)[0] for line in lines] == [
        "GET /api/v1/templates 200",
        "GET /api/v1/jobs 401",
        "GET /api/v1/jobs/no-such-job 404",
        "GET /api/v1/jobs/x\\nforged 404",  # a decoded newline cannot start a line of its own
    ], err
    assert key not in logged and secret not in logged and "nope" not in logged
