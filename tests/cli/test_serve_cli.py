"""`ingestflow serve` as a user starts it: a real process, a real port, a key from `keys create`
(made in this process)."""

from __future__ import annotations

import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import httpx
import pytest
from typer.testing import CliRunner

from ingestflow.cli import app

EXE = [sys.executable, "-c", "from ingestflow.cli import main; main()"]
runner = CliRunner()


def new_key(workspace: str) -> str:
    """A key made by `ingestflow keys create` (in this process: only `serve` is about a process)."""
    made = runner.invoke(app, ["keys", "create", "--workspace", workspace])
    assert made.exit_code == 0, made.output
    return made.stdout.strip().splitlines()[-1]


class Serving:
    """`ingestflow serve --port 0 ...` in a process of its own; its URL is read back from the
    line the server prints once it listens (no port is probed, closed and reused), its output
    as it comes."""

    STARTED = re.compile(r"^serving workspace .* at (http://127\.0\.0\.1:\d+)/api/v1$")

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [*EXE, "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.url: queue.Queue[str | None] = queue.Queue()
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.err), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def _read(self, stream: IO[str], lines: list[str]) -> None:
        for line in stream:
            lines.append(line)
            if found := self.STARTED.search(line):
                self.url.put(found.group(1))
        self.url.put(None)  # the stream ended: the process has

    def base(self, seconds: float = 120) -> str:
        """The server's URL once it listens; fails loudly when it ends first or takes too long."""
        try:
            url = self.url.get(timeout=seconds)
        except queue.Empty:
            raise AssertionError(f"the server did not start within {seconds} s") from None
        assert url, f"the server ended before it listened: {''.join(self.err)}"
        return url

    def stop(self) -> tuple[str, str]:
        """Ctrl-C, then its stdout and stderr once it has ended."""
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"Ctrl-C did not stop the server: {''.join(self.err)}") from None
        for reader in self.readers:
            reader.join(timeout=60)
        return "".join(self.out), "".join(self.err)


def test_serve_refuses_to_start_without_a_key(tmp_path: Path) -> None:
    result = subprocess.run(
        [*EXE, "serve", "--workspace", str(tmp_path / "ws"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "no API key" in result.stderr and "ingestflow keys create" in result.stderr


@pytest.mark.slow
def test_serve_answers_with_a_key_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    key = new_key(ws)
    server = Serving("--workspace", ws)
    try:
        base = server.base()
        answer = httpx.get(f"{base}/api/v1/templates", headers={"service-api-key": key})
        assert answer.status_code == 200
        assert "fast_partition" in {t["id"] for t in answer.json()}
        sdk_header = httpx.get(f"{base}/api/v1/jobs/", headers={"unstructured-api-key": key})
        assert sdk_header.status_code == 200 and sdk_header.json() == []
        refused = httpx.get(f"{base}/api/v1/templates", headers={"service-api-key": key + "x"})
        assert refused.status_code == 401 and "API key" in refused.json()["detail"]
        assert httpx.get(f"{base}/openapi.json").status_code == 200
    finally:
        _, err = server.stop()
    assert server.process.returncode == 0, err
    assert "Traceback" not in err and key not in err


@pytest.mark.slow
def test_serve_max_body_mb_bounds_json_bodies(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    key = new_key(ws)
    server = Serving("--workspace", ws, "--max-body-mb", "1")
    try:
        url = f"{server.base()}/api/v1/workflows"
        headers = {"service-api-key": key, "content-type": "application/json"}
        body = b'{"name": "big", "workflow_type": "custom"}'
        over = httpx.post(url, headers=headers, content=body + b" " * (1 << 20))
        assert over.status_code == 413, over.text
        assert "at most 1 MB" in over.json()["detail"] and "--max-body-mb" in over.text
        under = httpx.post(url, headers=headers, content=body + b" " * ((1 << 20) - len(body)))
        assert under.status_code == 422, under.text  # read and judged: a custom one needs nodes
    finally:
        _, err = server.stop()
    assert server.process.returncode == 0, err


@pytest.mark.slow
def test_serve_logs_one_line_per_request_without_secrets(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    key = new_key(ws)
    server = Serving("--workspace", ws)
    secret = "tok-query-secret-5150"
    try:
        base = server.base()
        ok = httpx.get(f"{base}/api/v1/templates", headers={"service-api-key": key})
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
        out, err = server.stop()
    assert server.process.returncode == 0, err
    logged = out + err
    lines = re.findall(r"^\S+ \S+ (GET \S+ \d{3} \d+\.\d ms)$", err, re.M)
    assert [line.rsplit(" ", 2)[0] for line in lines] == [
        "GET /api/v1/templates 200",
        "GET /api/v1/jobs 401",
        "GET /api/v1/jobs/no-such-job 404",
        "GET /api/v1/jobs/x\\nforged 404",  # a decoded newline cannot start a line of its own
    ], err
    assert key not in logged and secret not in logged and "nope" not in logged


@pytest.mark.slow
def test_serve_on_a_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    new_key(ws)
    with socket.create_server(("127.0.0.1", 0)) as held:  # listening: the port is taken
        port = str(held.getsockname()[1])
        result = subprocess.run(
            [*EXE, "serve", "--workspace", ws, "--port", port],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 3, result.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr
    assert "Traceback" not in result.stderr
