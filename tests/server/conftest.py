"""The REST server on real loopback HTTP: uvicorn in a thread on a free port, over a fresh
workspace with one API key; and an httpx client that keeps every response body it saw, so a test
can check that no body carries a stored secret or a traceback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from ingestflow.server.app import create_app
from ingestflow.service import Service, UploadLimits
from tests.fakes.confluence import FakeConfluence


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each schemathesis case keeps its operation in its node id: schemathesis names an item
    `test[GET /api/v1/...]` but pytest 9 builds the id from the function's name alone, so every
    operation shared one id, and pytest-xdist (which schedules by id) ran one of them."""
    for item in items:
        if type(item).__name__ != "SchemathesisFunction":
            continue
        _name, bracket, label = item.name.partition("[")
        node_id = getattr(item, "_id", None)
        if bracket and node_id is not None and node_id.params is None:
            item._id = node_id.with_params(label.removesuffix("]"))


API = "/api/v1"
# Runs offline and fast: Fast partition, then chunk by title.
NODES: list[dict[str, Any]] = [
    {
        "name": "Partitioner",
        "type": "partition",
        "subtype": "unstructured_api",
        "settings": {"strategy": "fast"},
    },
    {
        "name": "Chunker",
        "type": "chunk",
        "subtype": "chunk_by_title",
        "settings": {"max_characters": 500},
    },
]
DOC_A = b"Release plan\n\nShip the beta in March. The team reviews the plan every week.\n"
DOC_B = b"# Notes\n\nThe launch checklist is short.\n\n## Room\n\nBook the big room early.\n"
FINISHED = ("COMPLETED", "STOPPED", "FAILED")
WIKI_USER, WIKI_TOKEN = "ada@example.com", "wiki-api-token-s3cr3t"
WRONG_TOKEN = "wrong-wiki-token-s3cr3t"
SECRETS = (WIKI_TOKEN, WRONG_TOKEN, "milvus-pa55word-s3cr3t")


def wiki_source(wiki: FakeConfluence, name: str = "team wiki", **config: Any) -> dict[str, Any]:
    """A create body of a `wiki` source connector pointing at the fake Confluence."""
    return {
        "name": name,
        "type": "wiki",
        "config": {
            "url": wiki.url,
            "username": WIKI_USER,
            "token": WIKI_TOKEN,
            "spaces": ["DEV"],
            **config,
        },
    }


def local_workflow(name: str, nodes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A create body of a local-files workflow (no source, no destination)."""
    return {"name": name, "workflow_type": "custom", "workflow_nodes": nodes or NODES}


def two_files(field_name: str = "input_files") -> list[tuple[str, tuple[str, bytes, str]]]:
    """The multipart file parts of a small run."""
    return [
        (field_name, ("plan.txt", DOC_A, "text/plain")),
        (field_name, ("notes.md", DOC_B, "text/markdown")),
    ]


class RecordingClient(httpx.Client):
    """An httpx client that keeps every response body it received."""

    def __init__(self, **kwargs: Any) -> None:
        self.bodies: list[str] = []
        super().__init__(**kwargs, event_hooks={"response": [self._keep]})

    def _keep(self, response: httpx.Response) -> None:
        response.read()
        self.bodies.append(response.text)


@dataclass
class Server:
    """A running server: its base URL, an active API key, its workspace."""

    url: str
    key: str = field(repr=False)
    workspace: Path
    app: Any = None
    clients: list[RecordingClient] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return {"service-api-key": self.key}

    def client(
        self, key: str | None = None, header: str = "service-api-key", **kwargs: Any
    ) -> RecordingClient:
        """A client of this server that sends `key` (default: the server's; "" sends none) in
        `header`; other keyword arguments go to httpx.Client."""
        headers = {header: self.key if key is None else key} if key != "" else {}
        made = RecordingClient(base_url=self.url, headers=headers, timeout=30.0, **kwargs)
        self.clients.append(made)
        return made

    def bodies(self) -> list[str]:
        """Every response body any client of this server received."""
        return [b for c in self.clients for b in c.bodies]

    def wait_job(
        self, job_id: str, deadline_s: float = 90.0, client: httpx.Client | None = None
    ) -> dict[str, Any]:
        """Poll GET /jobs/{id} until the job is finished; its JobInformation."""
        http = client or self.client()
        end = time.monotonic() + deadline_s
        while True:
            answer = http.get(f"{API}/jobs/{job_id}")
            assert answer.status_code == 200, answer.text
            job = answer.json()
            if job["status"] in FINISHED:
                return job
            assert time.monotonic() < end, f"job {job_id} still {job['status']}"
            time.sleep(0.2)

    def close(self) -> None:
        for made in self.clients:
            made.close()


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def running_server(
    workspace: Path,
    limits: UploadLimits | None = None,
    max_running: int = 2,
    background: bool = True,
    key: str | None = None,
    **options: Any,
) -> Iterator[Server]:
    """Serve `create_app(workspace, ...)` on a free loopback port for the `with` block (other
    keyword arguments go to `create_app`: `allow_dirs`, `clock` (the schedules' clock, see
    tests/server/clocks.py), `keep_jobs_days`)."""
    workspace.mkdir(parents=True, exist_ok=True)
    if key is None:
        with Service(workspace) as service:
            _, key = service.keys.create("tests")
    app = create_app(
        workspace, limits=limits, max_running=max_running, background=background, **options
    )
    sock = _free_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    end = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive(), "the server thread ended before it started"
        assert time.monotonic() < end, "the server did not start"
        time.sleep(0.02)
    served = Server(f"http://127.0.0.1:{port}", key, workspace, app)
    try:
        yield served
    finally:
        served.close()
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


class Servers:
    """Starts servers (keyword arguments of `running_server`) in one test's tmp_path; `close`
    stops them all."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[Server] = []
        self._managers: list[Any] = []

    def __call__(self, name: str = "ws", **kwargs: Any) -> Server:
        manager = running_server(self.root / name, **kwargs)
        served = manager.__enter__()
        self._managers.append(manager)
        self.started.append(served)
        return served

    def bodies(self) -> list[str]:
        """Every response body any client of these servers received."""
        return [b for s in self.started for b in s.bodies()]

    def close(self) -> None:
        while self._managers:
            self._managers.pop().__exit__(None, None, None)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Servers]:
    """Start servers in the test's tmp_path; all stop at teardown."""
    servers = Servers(tmp_path)
    try:
        yield servers
    finally:
        servers.close()


@pytest.fixture
def server(serve: Servers) -> Server:
    """A server with background jobs and default limits."""
    return serve()


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    """A fake Confluence (Server layout) with one space of three small pages."""
    with FakeConfluence(basic={(WIKI_USER, WIKI_TOKEN)}) as fake:
        fake.add_space("DEV", "Development")
        for number, title in enumerate(("Alpha", "Beta", "Gamma")):
            fake.add_page(
                "DEV", title, f"<p>{title} page of the team wiki.</p>", page_id=str(101 + number)
            )
        yield fake


CHROMIUM = Path("/usr/bin/chromium")  # Debian's, installed by the set-up


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, once a test file (a file without it skips, saying why)."""
    if not CHROMIUM.exists():
        pytest.skip(f"no chromium at {CHROMIUM} to open the pages in")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            launched.close()
