"""The `wiki` source: pages of a Confluence instance (Server/Data Center or Cloud) as Documents.

Reads through atlassian-python-api's v1 REST class whatever `cloud` says (its Cloud class lacks
`get_page_by_id` and the restriction calls), over one `requests` session that carries the auth of
the config (API token and password: HTTP Basic; personal access token: Bearer) and a urllib3
`Retry`: 429 (honouring Retry-After, capped), 5xx, timeouts and refused connections are retried
with bounded exponential backoff; see `HttpPolicy`.

Each page becomes one Document: `data` is the page's `body.view` HTML (the rendered page: macros
expanded, images as real `<img src>`; `body.storage` would hand the partitioner `ac:`/`ri:` markup
it can't read) inside `<body class="Document"><h1>title</h1>...</body>`. `version` is the page's
version number, ids are uuid5 of the instance host and the page id (stable across runs), and
`data_source` carries url, version, record_locator (protocol `wiki`, the connector type users
write), dates and `permissions_data` (rules: `wiki_permissions`).

A page that can't be read (deleted after listing, 5xx or timeouts past the retries, a body that is
not JSON or has no HTML) is yielded as a `FailedDocument`: no content, the reason in `error` and in
`warnings`, and `read_bytes()` raising `DocumentError` with that reason, so the runner records a
per-file failure and goes on.
"""

from __future__ import annotations

import base64
import hashlib
import html
import logging
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout
from urllib3.util import Retry

from ingestflow.connectors import wiki_permissions as perms
from ingestflow.connectors.base import Source
from ingestflow.connectors.check import ConnectionCheck
from ingestflow.elements import Document
from ingestflow.errors import ConnectorError, DocumentError

if TYPE_CHECKING:
    from atlassian import ConfluenceServer

    from ingestflow.spec.models import WikiConfig

log = logging.getLogger(__name__)

PROTOCOL = "wiki"
PAGE_EXPAND = "body.view,version,history,history.lastUpdated,space,ancestors"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_AUTH_LABELS = {
    "api_token": "API token (username + token)",
    "pat": "personal access token",
    "basic": "username + password",
}
_STATUS_WORDS = {401: "unauthorized", 403: "forbidden", 404: "not found", 429: "too many requests"}


@dataclass(frozen=True)
class HttpPolicy:
    """How the source talks HTTP: timeouts, retries and listing page size."""

    timeout: float = 30.0  # seconds to connect, and to wait for each read
    retries: int = 4  # retries after the first try, for 429, 5xx, timeouts, refused connections
    backoff_factor: float = 0.5  # sleep factor * 2**(n-1) between retries (first retry: none)
    backoff_max: float = 30.0
    retry_after_max: int = 120  # a longer Retry-After is cut to this
    page_size: int = 50  # `limit` asked of list calls; the server may cap it

    def retry(self) -> Retry:
        """The urllib3 retry rule mounted on the session."""
        return Retry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            other=0,
            allowed_methods=frozenset({"GET", "HEAD"}),
            status_forcelist=RETRY_STATUSES,
            backoff_factor=self.backoff_factor,
            backoff_max=self.backoff_max,
            respect_retry_after_header=True,
            retry_after_max=self.retry_after_max,
            raise_on_status=False,
        )


@dataclass
class FailedDocument(Document):
    """A document the source listed but could not read: no content, `error` says why, and
    `read_bytes()` raises `DocumentError` with it, so the first stage fails it alone."""

    error: str = ""

    def read_bytes(self) -> bytes:
        """Raise the failure: there is no content."""
        raise DocumentError(f"{self.filename}: {self.error}")

    def content_hash(self) -> str:
        """A marker version that never matches a successful run's, so it is never skipped."""
        return "unreadable:" + hashlib.sha256(self.error.encode("utf-8")).hexdigest()


class _Malformed(ValueError):
    """The wiki answered with something that is not the expected JSON."""


def slugify(title: str, limit: int = 60) -> str:
    """A file-name-safe slug of a title (letters of any script kept)."""
    slug = re.sub(r"[\W_]+", "-", title.casefold()).strip("-")
    return slug[:limit].rstrip("-")


def image_mime(data: bytes, content_type: str | None) -> str | None:
    """The real MIME type of image bytes (magic bytes first), or None when not an image."""
    import filetype

    kind = filetype.guess(data[:8192])
    if kind is not None and kind.mime.startswith("image/"):
        return kind.mime
    head = data[:2048].lstrip().lower()
    declared = (content_type or "").split(";")[0].strip().lower()
    if head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in head):
        return "image/svg+xml"
    if declared.startswith("image/") and declared != "image/svg+xml":
        return declared
    return None


def _http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    if response is None:  # atlassian's ApiError keeps the HTTPError in `reason`
        response = getattr(getattr(exc, "reason", None), "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _timed_out(exc: BaseException) -> bool:
    if isinstance(exc, requests.Timeout):
        return True
    cause = getattr(exc.args[0] if exc.args else None, "reason", None)
    # urllib3's NewConnectionError (refused, unknown host) subclasses its TimeoutError
    return isinstance(cause, Urllib3Timeout) and not isinstance(cause, NewConnectionError)


def _connection_cause(exc: BaseException) -> str:
    match = re.search(r"\[Errno -?\d+\] [^'\")]+", str(exc))
    return match.group(0).strip() if match else type(exc).__name__


class WikiSource(Source):
    """Pages (and optionally their embedded attachments) of a wiki instance, lazily."""

    name = "wiki"

    def __init__(self, config: WikiConfig, policy: HttpPolicy | None = None) -> None:
        self.config = config
        self.policy = policy or HttpPolicy()
        self.warnings: list[str] = []  # source-level notes for the job record
        self._client: ConfluenceServer | None = None
        self._session: requests.Session | None = None
        self._listed: list[dict[str, Any]] | None = None
        self._grants: dict[str, dict[tuple[str, str], perms.Principals] | str] = {}
        self._ancestor_reads: dict[str, perms.Principals] = {}
        parts = urlsplit(config.url)
        netloc = parts.netloc.rpartition("@")[2]  # never any user:password@ given in the URL
        self._host = (parts.hostname or "").lower()
        self._instance = netloc.lower()  # host[:port]: with the page id, the stable document id
        self._origin = (parts.scheme, self._host, parts.port or _default_port(parts.scheme))
        self._safe_url = parts._replace(netloc=netloc).geturl()

    def __repr__(self) -> str:
        return (
            f"WikiSource(url={self._safe_url!r}, auth={self.config.auth_mode!r}, "
            f"cloud={self.config.cloud}, spaces={self.config.spaces!r})"
        )

    # -- connection ---------------------------------------------------------------------------

    @property
    def client(self) -> ConfluenceServer:
        """The atlassian v1 REST client (built on first use)."""
        if self._client is None:
            from atlassian import ConfluenceServer

            session = requests.Session()
            adapter = HTTPAdapter(max_retries=self.policy.retry())
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            cfg = self.config
            auth: dict[str, Any]
            if cfg.auth_mode == "pat":
                auth = {"token": cfg.token.get_secret_value() if cfg.token else None}
            else:
                secret = cfg.token if cfg.auth_mode == "api_token" else cfg.password
                auth = {
                    "username": cfg.username,
                    "password": secret.get_secret_value() if secret else None,
                }
            client = ConfluenceServer(
                cfg.url,
                cloud=cfg.cloud,
                session=session,
                backoff_and_retry=False,
                retry_with_header=False,  # the session's Retry honours Retry-After
                **auth,
            )
            client.timeout = self.policy.timeout  # the library truncates it to whole seconds
            self._session, self._client = session, client
        return self._client

    @property
    def session(self) -> requests.Session:
        """The authenticated session (downloads go through it, to the instance's host only)."""
        _ = self.client
        assert self._session is not None
        return self._session

    def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            self._session.close()
        self._client = self._session = None

    def precheck(self) -> None:
        """Check the instance answers, the credentials work and every listed space exists."""
        self._probe()
        self._listed_spaces()

    def _probe(self) -> None:
        try:
            body = self.client.get_all_spaces(start=0, limit=1)
        except Exception as exc:
            raise ConnectorError(self._connect_failure(exc)) from exc
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise ConnectorError(
                f"{self._safe_url} answered, but not as the wiki REST API (GET rest/api/space "
                "gave no `results`); check `url` (a Cloud site's URL ends in /wiki)"
            )

    def _connect_failure(self, exc: BaseException) -> str:
        status, url = _http_status(exc), self._safe_url
        mode = _AUTH_LABELS.get(self.config.auth_mode, self.config.auth_mode)
        if status == 401:
            return (
                f"the wiki at {url} rejected the credentials (HTTP 401, auth mode: {mode}); "
                "check `username` and `token`/`password`"
            )
        if status == 403:
            return f"the wiki at {url} accepted the credentials ({mode}) but may not list spaces"
        if status == 404:
            return (
                f"no wiki REST API at {url}/rest/api (HTTP 404); check `url` (a Cloud site's "
                "URL ends in /wiki)"
            )
        return f"cannot use the wiki at {url}: {self._describe(exc)}"

    def _describe(self, exc: BaseException) -> str:
        status = _http_status(exc)
        if status is not None:
            word = _STATUS_WORDS.get(status)
            text = f"HTTP {status}" + (f" ({word})" if word else "")
            retried = status in RETRY_STATUSES
            return text + (f" after {self.policy.retries} retries" if retried else "")
        if _timed_out(exc):
            return f"no answer within {self.policy.timeout:g}s ({self.policy.retries + 1} tries)"
        if isinstance(exc, requests.ConnectionError):
            return f"connection failed: {_connection_cause(exc)}"
        if isinstance(exc, _Malformed | perms.PermissionsUnreadable):
            return str(exc)
        return f"{type(exc).__name__}: {exc}"

    # -- spaces -------------------------------------------------------------------------------

    def _listed_spaces(self) -> list[dict[str, Any]] | None:
        """The spaces named in `spaces` (ConnectorError naming any missing key), else None."""
        keys = self.config.spaces
        if not keys:
            return None
        if self._listed is None:
            found, missing = [], []
            for key in keys:
                try:
                    space = self.client.get_space(key)
                except Exception as exc:
                    if _http_status(exc) in (403, 404):
                        missing.append(key)
                        continue
                    raise ConnectorError(
                        f"could not look up space {key!r} on {self._safe_url}: "
                        f"{self._describe(exc)}"
                    ) from exc
                found.append(space if isinstance(space, dict) else {"key": key})
            if missing:
                raise ConnectorError(
                    f"space key(s) not found on {self._safe_url}: {', '.join(map(repr, missing))}; "
                    "`spaces` takes space keys (not display names) the user may view"
                )
            limit = self.config.max_num_of_spaces
            if len(found) > limit:
                note = f"{len(found)} spaces listed, max_num_of_spaces is {limit}: read {limit}"
                self.warnings.append(note)
                log.warning(note)
            self._listed = found[:limit]
        return self._listed

    def _paged(self, fetch: Callable[[int, int], Any], total: int) -> Iterator[dict[str, Any]]:
        """Items of a v1 list call, page by page (`_links.next` says there is more), up to total."""
        start = seen = 0
        while seen < total:
            body = fetch(start, min(self.policy.page_size, total - seen))
            if not isinstance(body, dict) or not isinstance(body.get("results"), list):
                raise _Malformed("a list response is not a JSON object with `results`")
            results = body["results"]
            for item in results[: total - seen]:
                if isinstance(item, dict):
                    yield item
            seen += len(results)
            start += len(results)
            if not results or not (body.get("_links") or {}).get("next"):
                return

    def _spaces(self) -> Iterator[dict[str, Any]]:
        listed = self._listed_spaces()
        if listed is not None:
            yield from listed
            return
        yield from self._paged(
            lambda start, limit: self.client.get_all_spaces(start=start, limit=limit),
            self.config.max_num_of_spaces,
        )

    # -- documents ----------------------------------------------------------------------------

    def documents(self) -> Iterator[Document]:
        """Yield each page (then its embedded attachments when extract_files) of each space."""
        spaces = self._spaces()
        while True:
            try:
                space = next(spaces)
            except StopIteration:
                return
            except ConnectorError:
                raise
            except Exception as exc:
                yield self._failed_listing(None, exc)
                return
            yield from self._space_documents(space)

    def _space_documents(self, space: dict[str, Any]) -> Iterator[Document]:
        key = str(space.get("key"))
        log.info("wiki: reading space %s", key)
        pages = self._paged(
            lambda start, limit: self.client.get_all_pages_from_space_raw(
                key, start=start, limit=limit, expand="version"
            ),
            self.config.max_num_of_docs_from_each_space,
        )
        while True:
            try:
                entry = next(pages)
            except StopIteration:
                return
            except Exception as exc:
                yield self._failed_listing(key, exc)
                return
            yield from self._page_documents(key, entry)

    def _page_documents(self, space_key: str, entry: dict[str, Any]) -> Iterator[Document]:
        page_id, title = str(entry.get("id")), str(entry.get("title") or "")
        try:
            page = self.client.get_page_by_id(page_id, expand=PAGE_EXPAND)
            if not isinstance(page, dict):
                raise _Malformed("the page response is not JSON")
            view = ((page.get("body") or {}).get("view") or {}).get("value")
            if not isinstance(view, str):
                raise _Malformed("the page response has no HTML body (body.view.value)")
        except Exception as exc:
            reason = self._describe(exc)
            if _http_status(exc) == 404:
                reason = "deleted or no longer visible since it was listed (HTTP 404)"
            yield self._failed_page(space_key, page_id, title, f"page {page_id}: {reason}")
            return
        doc, references = self._page_document(space_key, page, view)
        attachments: list[dict[str, Any]] = []
        if self.config.extract_files and references[0] | references[1]:
            try:
                attachments = self._embedded_attachments(page_id, *references)
            except Exception as exc:
                doc.warnings.append(f"embedded files not read: {self._describe(exc)}")
        yield doc
        for attachment in attachments:
            yield self._attachment_document(doc, space_key, page_id, attachment)

    def _ids(self, *parts: str) -> str:
        name = f"{PROTOCOL}://{self._instance}/" + "/".join(parts)
        return str(uuid.uuid5(uuid.NAMESPACE_URL, name))

    def _page_url(self, page: dict[str, Any]) -> str:
        links = page.get("_links") or {}
        if isinstance(links.get("webui"), str):
            return str(links.get("base") or self.config.url).rstrip("/") + links["webui"]
        return f"{self.config.url}/pages/viewpage.action?pageId={page.get('id')}"

    def _locator(self, space_key: str, page_id: str, url: str) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL,
            "remote_file_path": url,
            "space_key": space_key,
            "page_id": page_id,
            "url": url,
        }

    def _page_document(
        self, space_key: str, page: dict[str, Any], view: str
    ) -> tuple[Document, tuple[set[str], set[str]]]:
        page_id, title = str(page["id"]), str(page.get("title") or "")
        url, warnings = self._page_url(page), []
        references: tuple[set[str], set[str]] = (set(), set())
        if self.config.extract_images or self.config.extract_files:
            view, references, warnings = self._rewrite(page_id, view)
        version = str((page.get("version") or {}).get("number", ""))
        history = page.get("history") or {}
        data_source: dict[str, Any] = {
            "url": url,
            "version": version,
            "record_locator": self._locator(space_key, page_id, url),
            "date_created": history.get("createdDate"),
            "date_modified": (page.get("version") or {}).get("when")
            or (history.get("lastUpdated") or {}).get("when"),
        }
        permissions, note = self._permissions(space_key, page)
        if permissions is not None:
            data_source["permissions_data"] = permissions
        if note:
            warnings.append(note)
        body = (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head>\n'
            f'<body class="Document"><h1>{html.escape(title)}</h1>\n{view}\n</body></html>\n'
        )
        slug = slugify(title)
        doc_id = self._ids("pages", page_id)
        doc = Document(
            id=doc_id,
            record_id=doc_id,
            filename=f"{space_key}/{page_id}" + (f"-{slug}" if slug else "") + ".html",
            data=body.encode("utf-8", errors="replace"),
            version=version or None,
            mime_type="text/html",
            data_source=data_source,
            warnings=warnings,
        )
        return doc, references

    def _failed_page(self, space_key: str, page_id: str, title: str, reason: str) -> Document:
        log.warning("wiki: %s", reason)
        slug, doc_id = slugify(title), self._ids("pages", page_id)
        url = f"{self.config.url}/pages/viewpage.action?pageId={page_id}"
        return FailedDocument(
            id=doc_id,
            record_id=doc_id,
            filename=f"{space_key}/{page_id}" + (f"-{slug}" if slug else "") + ".html",
            mime_type="text/html",
            data_source={"url": url, "record_locator": self._locator(space_key, page_id, url)},
            warnings=[reason],
            error=reason,
        )

    def _failed_listing(self, space_key: str | None, exc: BaseException) -> Document:
        what = f"pages of space {space_key}" if space_key else "spaces"
        reason = f"could not list the {what}: {self._describe(exc)}"
        log.warning("wiki: %s", reason)
        doc_id = self._ids("spaces", space_key or "")
        return FailedDocument(
            id=doc_id,
            record_id=doc_id,
            filename=f"{space_key}/" if space_key else "(spaces)",
            data_source={"url": self.config.url, "record_locator": {"protocol": PROTOCOL}},
            warnings=[reason],
            error=reason,
        )

    # -- permissions --------------------------------------------------------------------------

    def _permissions(
        self, space_key: str, page: dict[str, Any]
    ) -> tuple[list[dict[str, Any]] | None, str | None]:
        """`permissions_data` for a page, or None and the reason they could not be read."""
        if space_key not in self._grants:
            try:
                permissions = self.client.get_all_space_permissions(space_key)
                self._grants[space_key] = perms.space_grants(permissions)
            except Exception as exc:
                self._grants[space_key] = self._describe(exc)
        grants = self._grants[space_key]
        lead = "permissions_data left out: could not read"
        if isinstance(grants, str):
            return None, f"{lead} the permissions of space {space_key} ({grants})"
        page_id = str(page["id"])
        try:
            restrictions = self.client.get_all_restrictions_for_content(page_id)
            parsed = perms.page_restrictions(restrictions)
            self._ancestor_reads[page_id] = parsed.get("read", perms.Principals())
            ancestors = [
                self._ancestor_read(str(a.get("id")))
                for a in page.get("ancestors") or []
                if isinstance(a, dict)
            ]
        except Exception as exc:
            return None, f"{lead} the restrictions of page {page_id} ({self._describe(exc)})"
        return perms.permissions_data(parsed, grants, ancestors), None

    def _ancestor_read(self, page_id: str) -> perms.Principals:
        if page_id not in self._ancestor_reads:
            body = self.client.get_all_restrictions_for_content(page_id)
            read = perms.page_restrictions(body).get("read", perms.Principals())
            self._ancestor_reads[page_id] = read
        return self._ancestor_reads[page_id]

    # -- images and attachments ---------------------------------------------------------------

    def _own_host(self, url: str) -> bool:
        parts = urlsplit(url)
        port = parts.port or _default_port(parts.scheme)
        return (parts.scheme, (parts.hostname or "").lower(), port) == self._origin

    def _rewrite(self, page_id: str, view: str) -> tuple[str, tuple[set[str], set[str]], list[str]]:
        """Inline own-host images (extract_images) and find embedded attachments (extract_files):
        returns the HTML, (attachment ids, attachment file names) referenced, and warnings."""
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(view, "html.parser")
        ids: set[str] = set()
        names: set[str] = set()
        for tag in soup.find_all(attrs={"data-linked-resource-type": "attachment"}):
            if tag.name != "img" and tag.get("data-linked-resource-id"):
                ids.add(str(tag["data-linked-resource-id"]).removeprefix("att"))
        for link in soup.find_all("a", href=True):
            path = urlsplit(str(link["href"])).path
            if f"/download/attachments/{page_id}/" in path:
                names.add(unquote(path.rsplit("/", 1)[1]))
        if not self.config.extract_images:
            return view, (ids, names), []
        warnings: list[str] = []
        foreign: set[str] = set()
        changed = False
        for img in soup.find_all("img", src=True):
            src = str(img["src"])
            if src.startswith("data:"):
                continue
            url = urljoin(self.config.url + "/", src)
            if not self._own_host(url):
                foreign.add(urlsplit(url).netloc or src)
                continue
            try:
                response = self.session.get(url, timeout=self.policy.timeout)
                response.raise_for_status()
                mime = image_mime(response.content, response.headers.get("Content-Type"))
                if mime is None:
                    raise _Malformed("the response is not an image")
            except Exception as exc:
                warnings.append(f"image {src} not inlined: {self._describe(exc)}")
                continue
            img["src"] = f"data:{mime};base64,{base64.b64encode(response.content).decode('ascii')}"
            changed = True
        if foreign:
            warnings.append(
                f"images on other hosts left as links ({', '.join(sorted(foreign))}): only "
                f"{self._host} is fetched, with the connector's credentials"
            )
        return (str(soup) if changed else view), (ids, names), warnings

    def _embedded_attachments(
        self, page_id: str, ids: set[str], names: set[str]
    ) -> list[dict[str, Any]]:
        """The page's attachments that its HTML embeds (by attachment id or download link)."""
        listing = self._paged(
            lambda start, limit: self.client.get_attachments_from_content(
                page_id, start=start, limit=limit, expand="version"
            ),
            10_000,
        )
        return [
            a
            for a in listing
            if str(a.get("id", "")).removeprefix("att") in ids or a.get("title") in names
        ]

    def _attachment_document(
        self, parent: Document, space_key: str, page_id: str, attachment: dict[str, Any]
    ) -> Document:
        att_id = str(attachment.get("id"))
        title = str(attachment.get("title") or att_id)
        filename = title.replace("/", "_").replace("\\", "_")
        if self.config.cloud:  # Cloud's supported route; `_links.download` is deprecated there
            url = f"{self.config.url}/rest/api/content/{page_id}/child/attachment/{att_id}/download"
        else:
            link = str((attachment.get("_links") or {}).get("download") or "")
            url = f"{self.config.url}/{link.lstrip('/')}"
        page_url = parent.data_source["url"]
        version = (attachment.get("version") or {}).get("number")
        source: dict[str, Any] = {
            "url": page_url,
            "version": str(version) if version is not None else None,
            "record_locator": {
                **self._locator(space_key, page_id, page_url),
                "attachment_id": att_id,
                "remote_file_path": url,
            },
            "date_modified": (attachment.get("version") or {}).get("when"),
        }
        if "permissions_data" in parent.data_source:
            source["permissions_data"] = parent.data_source["permissions_data"]
        doc_id = self._ids("pages", page_id, "attachments", att_id)
        common: dict[str, Any] = {
            "id": doc_id,
            "record_id": doc_id,
            "filename": filename,
            "data_source": source,
            "parent_id": parent.id,
        }
        media = (attachment.get("metadata") or {}).get("mediaType") or (
            attachment.get("extensions") or {}
        ).get("mediaType")
        try:
            response = self.session.get(url, timeout=self.policy.timeout)
            response.raise_for_status()
        except Exception as exc:
            reason = f"attachment {title!r} of page {page_id}: {self._describe(exc)}"
            log.warning("wiki: %s", reason)
            return FailedDocument(**common, mime_type=media, warnings=[reason], error=reason)
        doc = Document(**common, data=response.content, mime_type=media)
        doc.version = source["version"] or doc.content_hash()
        source["version"] = doc.version
        doc.warnings = [w for w in parent.warnings if w.startswith("permissions_data")]
        return doc


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def check_connection(config: WikiConfig, policy: HttpPolicy | None = None) -> ConnectionCheck:
    """Whether the wiki answers, accepts the credentials and has every listed space (no crawl)."""
    source = WikiSource(config, policy or HttpPolicy(timeout=15.0, retries=1))
    try:
        source.precheck()
    except ConnectorError as exc:
        return ConnectionCheck.failure(str(exc))
    finally:
        source.close()
    return ConnectionCheck.success()
