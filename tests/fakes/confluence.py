"""A fake Confluence: a real HTTP server on loopback speaking the v1 REST calls that
atlassian-python-api makes (reference/wiki-source.md), with auth checks, fault injection and a
record of every request.

    with FakeConfluence(basic={("dev@example.com", "api-token")}, base_path="/wiki") as wiki:
        wiki.add_space("DEV", permissions=[space_grant("read", "space", users=["u-1"])])
        wiki.add_page("DEV", "Hello", "<p>hi</p>")
        wiki.inject("/rest/api/content/*/restriction/byOperation", Fault.forbidden())
        ...  # point a WikiSource at wiki.url

Paths in `inject`, `add_file` and `requests_to` are relative to the base path (`/wiki` for a Cloud
site, empty for Server) unless they start with the base path already; globs use fnmatch.
"""

from __future__ import annotations

import base64
import fnmatch
import html
import itertools
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, quote_plus, unquote, urlencode, urlsplit

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS_WIKI = REPO_ROOT.parent / "shared" / "corpus" / "wiki"
FIXTURE_WIKI = REPO_ROOT / "fixtures" / "wiki"
_WRAPPED = re.compile(r'^\s*<body class="Document">\s*<h1>\s*(.*?)\s*</h1>(.*)</body>\s*$', re.S)


@dataclass
class Fault:
    """What to do instead of answering normally, for the next `times` requests (None: always)."""

    status: int | None = None  # answer with this status; None: answer normally after `delay`
    times: int | None = 1
    delay: float = 0.0  # seconds to wait before answering (client timeouts)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # raw body (with `status`, or 200 when status is None and set)

    @classmethod
    def too_many_requests(cls, retry_after: int = 1, times: int | None = 1) -> Fault:
        """429 with a Retry-After header."""
        return cls(429, times, headers={"Retry-After": str(retry_after)})

    @classmethod
    def server_error(cls, status: int = 503, times: int | None = 1) -> Fault:
        """A 5xx, `times` times (None: forever)."""
        return cls(status, times)

    @classmethod
    def slow(cls, delay: float, times: int | None = 1) -> Fault:
        """Answer normally, but only after `delay` seconds."""
        return cls(None, times, delay=delay)

    @classmethod
    def gone(cls) -> Fault:
        """404 forever: a page deleted after it was listed."""
        return cls(404, None)

    @classmethod
    def forbidden(cls) -> Fault:
        """403 forever."""
        return cls(403, None)

    @classmethod
    def malformed_json(cls, times: int | None = None) -> Fault:
        """200 with a body that is not JSON."""
        return cls(200, times, body=b'{"id": "1", "title": "trunc')


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str  # relative to the base path
    query: dict[str, list[str]]
    headers: dict[str, str]
    status: int = 0


@dataclass
class FakeAttachment:
    """An attachment of a page."""

    id: str
    page_id: str
    title: str
    data: bytes
    media_type: str
    version: int = 1


@dataclass
class FakePage:
    """A page: its view HTML, version, restrictions and ancestors."""

    id: str
    space_key: str
    title: str
    body: str
    version: int = 1
    created: str = "2024-11-19T17:18:57.112Z"
    modified: str = "2024-11-20T09:00:00.000Z"
    restrictions: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    ancestors: list[str] = field(default_factory=list)
    attachments: list[FakeAttachment] = field(default_factory=list)


@dataclass
class FakeSpace:
    """A space and its permissions (v1 shape, see `space_grant`)."""

    id: int
    key: str
    name: str
    type: str = "global"
    permissions: list[dict[str, Any]] = field(default_factory=list)


def _user(user: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(user, Mapping):
        return {"type": "known", **user}
    return {"type": "known", "accountId": user, "accountType": "atlassian", "displayName": user}


def _group(group: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(group, Mapping):
        return {"type": "group", **group}
    return {"type": "group", "name": group, "id": group}


def space_grant(
    operation: str,
    target_type: str,
    users: Iterable[str | Mapping[str, Any]] = (),
    groups: Iterable[str | Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """One v1 space permission: `operation` on `target_type` for users (accountId strings or raw
    user objects) and groups (ids or raw group objects)."""
    user_list, group_list = [_user(u) for u in users], [_group(g) for g in groups]
    return {
        "operation": {"operation": operation, "targetType": target_type},
        "subjects": {
            "user": {"results": user_list, "size": len(user_list)},
            "group": {"results": group_list, "size": len(group_list)},
        },
        "anonymousAccess": False,
        "unlicensedAccess": False,
    }


def restriction(
    users: Iterable[str | Mapping[str, Any]] = (), groups: Iterable[str | Mapping[str, Any]] = ()
) -> dict[str, list[Any]]:
    """A page restriction for one operation (see `FakeConfluence.add_page(restrictions=...)`)."""
    return {"users": list(users), "groups": list(groups)}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeConfluence


class FakeConfluence:
    """A Confluence instance on 127.0.0.1 (port 0), Server (`base_path=""`) or Cloud (`/wiki`)."""

    def __init__(
        self,
        *,
        basic: Iterable[tuple[str, str]] = (("admin", "secret-password"),),
        bearer: Iterable[str] = (),
        base_path: str = "",
        max_limit: int = 25,
    ) -> None:
        self.basic = set(basic)
        self.bearer = set(bearer)
        self.base_path = base_path.rstrip("/")
        self.max_limit = max_limit
        self.spaces: dict[str, FakeSpace] = {}
        self.pages: dict[str, FakePage] = {}
        self.files: dict[str, tuple[bytes, str]] = {}
        self.faults: list[tuple[str, Fault]] = []
        self.requests: list[Recorded] = []
        self._ids = itertools.count(1001)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._port = 0  # kept after stop(): URLs stay printable
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeConfluence:
        """Start serving in a background thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server, self._port = server, int(server.server_address[1])
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (slow answers in flight are cut short)."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeConfluence:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:PORT`."""
        assert self._port, "start() the server first"
        return f"http://127.0.0.1:{self._port}"

    @property
    def url(self) -> str:
        """The instance URL a connector is given (origin + base path)."""
        return self.origin + self.base_path

    # -- content --------------------------------------------------------------------------------

    def add_space(
        self,
        key: str,
        name: str | None = None,
        *,
        space_type: str = "global",
        permissions: list[dict[str, Any]] | None = None,
    ) -> FakeSpace:
        """Add a space (`permissions`: a list of `space_grant(...)`)."""
        space = FakeSpace(next(self._ids), key, name or key, space_type, list(permissions or []))
        self.spaces[key] = space
        return space

    def add_page(
        self,
        space_key: str,
        title: str,
        body: str,
        *,
        page_id: str | None = None,
        version: int = 1,
        restrictions: dict[str, dict[str, list[Any]]] | None = None,
        ancestors: Iterable[str] = (),
        modified: str | None = None,
    ) -> FakePage:
        """Add a page whose `body.view` is `body`; restrictions: {"read": restriction(...), ...}."""
        page = FakePage(
            page_id or str(next(self._ids)),
            space_key,
            title,
            body,
            version,
            restrictions=dict(restrictions or {}),
            ancestors=list(ancestors),
        )
        if modified:
            page.modified = modified
        self.pages[page.id] = page
        return page

    def add_attachment(
        self, page_id: str, title: str, data: bytes, media_type: str, *, version: int = 1
    ) -> FakeAttachment:
        """Attach a file to a page (served at its `_links.download` and the Cloud REST route)."""
        attachment = FakeAttachment(
            f"att{next(self._ids)}", page_id, title, data, media_type, version
        )
        self.pages[page_id].attachments.append(attachment)
        return attachment

    def add_file(self, path: str, data: bytes, content_type: str) -> None:
        """Serve bytes at `path` (relative to the base path), e.g. an image a page shows."""
        self.files[self._relative(path)] = (data, content_type)

    def load_pages(self, space_key: str, directory: Path) -> list[FakePage]:
        """Add every `<id>.html` of `directory` (wrapped as `<body class="Document"><h1>title</h1>
        ...</body>`, the corpus's form) as a page of `space_key`; the wrapper is removed."""
        pages = []
        for path in sorted(directory.glob("*.html")):
            text = path.read_text(encoding="utf-8")
            match = _WRAPPED.match(text)
            title, body = (
                (html.unescape(match.group(1)), match.group(2)) if match else (path.stem, text)
            )
            page_id = path.stem if path.stem.isdigit() else None
            pages.append(self.add_page(space_key, title, body, page_id=page_id))
        return pages

    def inject(self, path: str, fault: Fault) -> Fault:
        """Apply `fault` to requests whose path matches the glob `path`."""
        with self._lock:
            self.faults.append((self._relative(path), fault))
        return fault

    def requests_to(self, path: str) -> list[Recorded]:
        """The recorded requests whose path matches the glob `path`."""
        pattern = self._relative(path)
        with self._lock:
            return [r for r in self.requests if fnmatch.fnmatchcase(r.path, pattern)]

    def _relative(self, path: str) -> str:
        if self.base_path and path.startswith(self.base_path + "/"):
            return path[len(self.base_path) :]
        return path

    # -- request handling -------------------------------------------------------------------------

    def _authorized(self, header: str | None) -> bool:
        if not header:
            return False
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer":
            return value.strip() in self.bearer
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(value).decode("utf-8").partition(":")
            except (ValueError, UnicodeDecodeError):
                return False
            return (user, password) in self.basic
        return False

    def _fault_for(self, path: str) -> Fault | None:
        with self._lock:
            for pattern, fault in self.faults:
                if fnmatch.fnmatchcase(path, pattern) and (fault.times is None or fault.times > 0):
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None

    def handle(self, handler: _Handler) -> None:
        """Answer one request."""
        split = urlsplit(handler.path)
        full_path = unquote(split.path)
        record = Recorded(
            handler.command,
            full_path,
            parse_qs(split.query),
            {k: v for k, v in handler.headers.items()},
        )
        with self._lock:
            self.requests.append(record)
        if self.base_path and not full_path.startswith(self.base_path + "/"):
            return self._send(handler, record, 404, _error(404, "outside the base path"))
        path = full_path[len(self.base_path) :]
        record.path = path
        if not self._authorized(handler.headers.get("Authorization")):
            body = _error(401, "Client must be authenticated to access this resource.")
            return self._send(
                handler, record, 401, body, {"WWW-Authenticate": 'Basic realm="fake"'}
            )
        fault = self._fault_for(path)
        if fault is not None:
            if fault.delay and self._stopping.wait(fault.delay):
                return None
            if fault.status is not None:
                body = fault.body if fault.body is not None else _error(fault.status, "fault")
                return self._send(handler, record, fault.status, body, fault.headers)
            if fault.body is not None:
                return self._send(handler, record, 200, fault.body, fault.headers)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        status, body, content_type = self._route(path, query)
        return self._send(handler, record, status, body, {"Content-Type": content_type})

    def _send(
        self,
        handler: _Handler,
        record: Recorded,
        status: int,
        body: bytes,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        record.status = status
        try:
            handler.send_response(status)
            headers = dict(headers or {})
            headers.setdefault("Content-Type", "application/json;charset=UTF-8")
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass

    def _route(self, path: str, query: dict[str, str]) -> tuple[int, bytes, str]:
        json_type = "application/json;charset=UTF-8"
        parts = [p for p in path.split("/") if p]
        if path in self.files:
            data, content_type = self.files[path]
            return 200, data, content_type
        if parts[:3] == ["rest", "api", "space"]:
            if len(parts) == 3:
                items = [self._space_json(s) for s in self.spaces.values()]
                return 200, _dumps(self._paged(path, query, items)), json_type
            space = self.spaces.get(parts[3])
            if space is None:
                return 404, _error(404, f"No space with key : {parts[3]}"), json_type
            if len(parts) == 4:
                return 200, _dumps(self._space_json(space)), json_type
            if parts[4:] == ["permissions"]:
                return 200, _dumps(space.permissions), json_type
        if parts[:3] == ["rest", "api", "content"]:
            if len(parts) == 3:
                expand = _expand(query.get("expand"))
                items = [
                    self._page_json(p, expand)
                    for p in self.pages.values()
                    if p.space_key == query.get("spaceKey") and query.get("type", "page") == "page"
                ]
                return 200, _dumps(self._paged(path, query, items)), json_type
            page = self.pages.get(parts[3])
            if page is None:
                return 404, _error(404, f"No content found with id: {parts[3]}"), json_type
            rest = parts[4:]
            if not rest:
                return 200, _dumps(self._page_json(page, _expand(query.get("expand")))), json_type
            if rest == ["restriction", "byOperation"]:
                return 200, _dumps(self._restrictions_json(page)), json_type
            if rest == ["child", "attachment"]:
                items = [self._attachment_json(a) for a in page.attachments]
                return 200, _dumps(self._paged(path, query, items)), json_type
            if rest[:2] == ["child", "attachment"] and rest[3:] == ["download"]:
                for attachment in page.attachments:
                    if attachment.id == rest[2]:
                        return 200, attachment.data, attachment.media_type
        if parts[:2] == ["download", "attachments"] and len(parts) == 4:
            page = self.pages.get(parts[2])
            for attachment in page.attachments if page else []:
                if attachment.title == parts[3]:
                    return 200, attachment.data, attachment.media_type
        return 404, _error(404, f"nothing at {path}"), json_type

    def _paged(self, path: str, query: dict[str, str], items: list[Any]) -> dict[str, Any]:
        start = int(query.get("start", 0))
        limit = min(int(query.get("limit", 25)), self.max_limit)
        results = items[start : start + limit]
        links: dict[str, str] = {
            "base": self.url,
            "context": self.base_path,
            "self": self.url + path,
        }
        if start + limit < len(items):  # relative to the base URL, as Confluence writes it
            links["next"] = f"{path}?{urlencode({**query, 'start': start + limit, 'limit': limit})}"
        return {
            "results": results,
            "start": start,
            "limit": limit,
            "size": len(results),
            "_links": links,
        }

    def _space_json(self, space: FakeSpace) -> dict[str, Any]:
        return {
            "id": space.id,
            "key": space.key,
            "name": space.name,
            "type": space.type,
            "status": "current",
            "_links": {
                "webui": f"/spaces/{quote(space.key)}",
                "self": f"{self.url}/rest/api/space/{space.key}",
            },
        }

    def _page_json(self, page: FakePage, expand: set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": page.id,
            "type": "page",
            "status": "current",
            "title": page.title,
            "_links": {
                "webui": f"/spaces/{quote(page.space_key)}/pages/{page.id}/"
                + quote_plus(page.title),
                "base": self.url,
                "context": self.base_path,
                "self": f"{self.url}/rest/api/content/{page.id}",
            },
            "_expandable": {"restrictions": f"/rest/api/content/{page.id}/restriction/byOperation"},
        }
        if "space" in expand:
            space = self.spaces.get(page.space_key)
            out["space"] = {"key": page.space_key, "id": space.id if space else 0, "type": "global"}
        if "version" in expand:
            out["version"] = {"number": page.version, "when": page.modified, "minorEdit": False}
        if "history" in expand:
            out["history"] = {"latest": True, "createdDate": page.created}
            if "history.lastUpdated" in expand:
                out["history"]["lastUpdated"] = {"when": page.modified, "number": page.version}
        if "ancestors" in expand:
            out["ancestors"] = [
                {"id": a, "type": "page", "title": self.pages[a].title if a in self.pages else a}
                for a in page.ancestors
            ]
        body = {}
        if "body.view" in expand:
            body["view"] = {"value": page.body, "representation": "view"}
        if "body.storage" in expand:
            body["storage"] = {"value": page.body, "representation": "storage"}
        if body:
            out["body"] = body
        return out

    def _restrictions_json(self, page: FakePage) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for operation in ("read", "update"):
            spec = page.restrictions.get(operation, {"users": [], "groups": []})
            users = [_user(u) for u in spec.get("users", [])]
            groups = [_group(g) for g in spec.get("groups", [])]
            out[operation] = {
                "operation": operation,
                "restrictions": {
                    "user": {"results": users, "start": 0, "limit": 200, "size": len(users)},
                    "group": {"results": groups, "start": 0, "limit": 200, "size": len(groups)},
                },
                "_expandable": {"content": f"/rest/api/content/{page.id}"},
            }
        return out

    def _attachment_json(self, attachment: FakeAttachment) -> dict[str, Any]:
        page_id = attachment.page_id
        return {
            "id": attachment.id,
            "type": "attachment",
            "status": "current",
            "title": attachment.title,
            "metadata": {"mediaType": attachment.media_type},
            "extensions": {"mediaType": attachment.media_type, "fileSize": len(attachment.data)},
            "version": {"number": attachment.version, "when": "2024-11-21T10:00:00.000Z"},
            "_links": {
                "download": f"/download/attachments/{page_id}/{quote(attachment.title)}"
                f"?version={attachment.version}&modificationDate=1732183200000&api=v2",
                "webui": f"/pages/viewpageattachments.action?pageId={page_id}",
            },
        }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms stalls
    server: _Server

    def do_GET(self) -> None:
        self.server.fake.handle(self)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


def _expand(value: str | None) -> set[str]:
    names = {part.strip() for part in (value or "").split(",") if part.strip()}
    return names | {name.split(".")[0] for name in names}


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


def _error(status: int, message: str) -> bytes:
    return _dumps({"statusCode": status, "message": message, "data": {"authorized": status != 401}})


def corpus_pages() -> Path | None:
    """The corpus's page bodies, or None when the corpus is absent."""
    pages = CORPUS_WIKI / "pages"
    return pages if pages.is_dir() else None


def iter_wrapped(directory: Path) -> Iterator[tuple[str, str, str]]:
    """(page id, title, inner HTML) of each wrapped page file of `directory`."""
    for path in sorted(directory.glob("*.html")):
        match = _WRAPPED.match(path.read_text(encoding="utf-8"))
        if match:
            yield path.stem, html.unescape(match.group(1)), match.group(2)
