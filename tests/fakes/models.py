"""A fake model server: a real HTTP server on loopback speaking the openai protocol (chat
completions, embeddings) and the anthropic protocol (messages), recording every request,
answering with scripted outputs and injecting faults.

    with FakeModelServer(key="sk-test") as server:
        server.reply(lambda req: "a diagram of a pump")     # every chat answer
        server.fault(Fault(status=429, headers={"Retry-After": "0"}))  # the next request
        ...  # point INGESTFLOW_PROVIDER_C_BASE_URL at server.openai_url

`reply(fn)` takes a function of the request (`Request`: path, headers, json, prompt text,
images) returning the answer text, or a `Fault` to answer with for that request. Embeddings are
deterministic vectors of `dimension` floats derived from the text (same text, same vector).
`trickle(interval)` makes every answer come one byte every `interval` seconds (a server that
never stops answering, but never finishes: the client's per-read timeout never fires).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.confluence import Fault

__all__ = ["FakeModelServer", "Fault", "Request"]


@dataclass
class Request:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    json: Any

    @property
    def protocol(self) -> str:
        return "anthropic" if self.path.endswith("/messages") else "openai"

    @property
    def model(self) -> str:
        return str(self.json.get("model", "")) if isinstance(self.json, dict) else ""

    def _parts(self) -> list[dict[str, Any]]:
        messages = self.json.get("messages", []) if isinstance(self.json, dict) else []
        parts: list[dict[str, Any]] = []
        for message in messages:
            content = message.get("content")
            if isinstance(content, str):
                parts.append({"type": "text", "text": content})
            elif isinstance(content, list):
                parts.extend(content)
        return parts

    @property
    def text(self) -> str:
        """The prompt text (all text parts)."""
        return "\n".join(p.get("text", "") for p in self._parts() if p.get("type") == "text")

    @property
    def images(self) -> list[str]:
        """The Base64 data of every image sent, in either protocol's format."""
        found = []
        for part in self._parts():
            if part.get("type") == "image_url":
                url = part["image_url"]["url"]
                found.append(url.split(",", 1)[1])
            elif part.get("type") == "image":
                found.append(part["source"]["data"])
        return found

    @property
    def image_formats(self) -> list[str]:
        """`image_url` (openai) or `image` (anthropic), per image part."""
        return [p["type"] for p in self._parts() if p.get("type") in ("image_url", "image")]


Responder = Callable[[Request], "str | Fault"]


@dataclass
class _State:
    key: str | None
    dimension: int
    responder: Responder
    requests: list[Request] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0
    trickle: float = 0.0  # seconds between the bytes of an answer (0: all at once)
    trickle_headers: bool = False  # trickle the status line and headers too
    trickling: int = 0  # answers being trickled now
    closed: threading.Event = field(default_factory=threading.Event)


class FakeModelServer:
    """The server; a context manager. `openai_url` and `anthropic_url` are the base URLs the
    official clients take."""

    def __init__(self, key: str | None = None, dimension: int = 8) -> None:
        self.state = _State(key, dimension, lambda request: "ok")
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        return self.url

    @property
    def requests(self) -> list[Request]:
        with self.state.lock:
            return list(self.state.requests)

    @property
    def max_in_flight(self) -> int:
        return self.state.max_in_flight

    def reply(self, responder: Responder) -> None:
        """Answer every chat request with `responder(request)`."""
        self.state.responder = responder

    def trickle(self, interval: float = 0.5, headers: bool = False) -> None:
        """Send every answer's body (with `headers`, the whole response) one byte every
        `interval` seconds."""
        self.state.trickle, self.state.trickle_headers = interval, headers

    @property
    def trickling(self) -> int:
        """Answers being trickled now (0 once every client has hung up)."""
        with self.state.lock:
            return self.state.trickling

    def fault(self, *faults: Fault) -> None:
        """Answer the next requests with these faults, in order (each `times` times)."""
        with self.state.lock:
            self.state.faults.extend(faults)

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.state.closed.set()  # a trickling answer stops
        self.httpd.shutdown()
        self.httpd.server_close()


def vector(text: str, dimension: int) -> list[float]:
    """A deterministic unit-ish vector for `text`."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 128) / 128 for i in range(dimension)]


class _Handler(BaseHTTPRequestHandler):
    state: _State
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        state = self.state
        with state.lock:
            state.requests.append(request)
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            fault = None
            if state.faults:
                fault = state.faults[0]
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        state.faults.pop(0)
        try:
            if not self._authorised(request):
                self._json(401, {"error": {"message": "invalid api key", "type": "auth"}})
                return
            if fault is not None and self._fault(fault):
                return
            if request.path.endswith("/embeddings"):
                inputs = body.get("input", []) if isinstance(body, dict) else []
                inputs = [inputs] if isinstance(inputs, str) else inputs
                data = [
                    {"object": "embedding", "index": i, "embedding": vector(t, state.dimension)}
                    for i, t in enumerate(inputs)
                ]
                self._json(200, {"object": "list", "data": data, "model": request.model})
                return
            answer = state.responder(request)
            if isinstance(answer, Fault):
                if self._fault(answer):
                    return
                answer = "ok"  # a fault that only delays
            self._answer(request, answer)
        finally:
            with state.lock:
                state.in_flight -= 1

    # --- helpers --------------------------------------------------------------------------------
    def _authorised(self, request: Request) -> bool:
        key = self.state.key
        if key is None:
            return True
        bearer = request.headers.get("authorization") == f"Bearer {key}"
        if request.protocol == "anthropic":  # the anthropic client sends either header
            return bearer or request.headers.get("x-api-key") == key
        return bearer

    def _fault(self, fault: Fault) -> bool:
        """Apply a fault; True when it answered (False: answer normally after its delay)."""
        if fault.delay:
            time.sleep(fault.delay)
        if fault.status is None and fault.body is None:
            return False
        status = fault.status or 200
        body = (
            fault.body
            if fault.body is not None
            else json.dumps({"error": {"message": f"injected {status}", "type": "fault"}}).encode()
        )
        try:
            self.send_response(status)
            for name, value in fault.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        return True

    def _answer(self, request: Request, text: str) -> None:
        if request.protocol == "anthropic":
            self._json(
                200,
                {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": request.model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                },
            )
        else:
            self._json(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": request.model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        if self.state.trickle and status == 200:
            self._trickle(status, data)
            return
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            self.close_connection = True

    def _trickle(self, status: int, data: bytes) -> None:
        """Send the answer one byte at a time until it is sent, the client hangs up or the
        server closes."""
        state = self.state
        head = (
            f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        ).encode()
        with state.lock:
            state.trickling += 1
        try:
            if not state.trickle_headers:
                self.wfile.write(head)
                self.wfile.flush()
                head = b""
            for byte in head + data:
                if state.closed.wait(state.trickle):
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.close_connection = True
            with state.lock:
                state.trickling -= 1
