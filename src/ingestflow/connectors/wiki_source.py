"""The `wiki` source (`WikiSource`): pages of a Confluence instance (Server/Data Center or Cloud)
as Documents. Its config, rules and registry entry are `connectors/wiki.py`.

`WikiSource` crawls: it lists the spaces (those named in `spaces`, else all, up to
`max_num_of_spaces`) and each space's pages (up to `max_num_of_docs_from_each_space`), reads each
page with its HTML, its permissions (rules: `wiki_permissions`) and, with `extract_images` /
`extract_files`, the images and attachments it embeds (`wiki_media`), and yields each page, then
its attachments, as Documents (their shape: `wiki_documents`). It talks HTTP through
atlassian-python-api's v1 REST class over one retrying, authenticated session (`wiki_http`:
`HttpPolicy`, failures explained in words). `check_connection` checks the instance and the
credentials without crawling.

A page that can't be read (deleted after listing, 5xx or timeouts past the retries, a body that is
not JSON or has no HTML) is yielded as a `FailedDocument`: no content, the reason in `error` and in
`warnings`, and `read_bytes()` raising `DocumentError` with that reason, so the runner records a
per-file failure and goes on.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

from ingestflow.connectors import wiki_media as media
from ingestflow.connectors import wiki_permissions as perms
from ingestflow.connectors.base import Source
from ingestflow.connectors.check import ConnectionCheck
from ingestflow.connectors.wiki_documents import (
    PROTOCOL,
    FailedDocument,
    WikiDocuments,
    slugify,
)
from ingestflow.connectors.wiki_http import (
    RETRY_STATUSES,
    HttpPolicy,
    Malformed,
    connect_failure,
    describe,
    http_status,
    open_client,
    paged,
)
from ingestflow.connectors.wiki_media import image_mime
from ingestflow.connectors.wiki_page_media import PageMedia
from ingestflow.elements import Document
from ingestflow.errors import ConnectorError

if TYPE_CHECKING:
    from atlassian import ConfluenceServer

    from ingestflow.connectors.wiki import WikiConfig

__all__ = [
    "PAGE_EXPAND",
    "PROTOCOL",
    "RETRY_STATUSES",
    "FailedDocument",
    "HttpPolicy",
    "WikiSource",
    "check_connection",
    "image_mime",
    "slugify",
]

log = logging.getLogger(__name__)

PAGE_EXPAND = "body.view,version,history,history.lastUpdated,space,ancestors"


class WikiSource(PageMedia, Source):
    """Pages (and optionally their embedded attachments) of a wiki instance, lazily."""

    name = "wiki"

    def __init__(self, config: WikiConfig, policy: HttpPolicy | None = None) -> None:
        self.config = config
        self.policy = policy or HttpPolicy()
        self.warnings: list[str] = []  # source-level notes for the job record
        self._gaps: list[str] = []  # why the last listing may have missed pages (no deletions)
        self._client: ConfluenceServer | None = None
        self._session: requests.Session | None = None
        self._listed: list[dict[str, Any]] | None = None
        # each space's grants and each page's read restrictions, read once
        self._permissions = perms.PermissionsReader(lambda: self.client, self._describe)
        parts = urlsplit(config.url)
        netloc = parts.netloc.rpartition("@")[2]  # never any user:password@ given in the URL
        self._docs = WikiDocuments(config.url, netloc.lower(), config.cloud)
        self._origin = media.origin(config.url)
        self._safe_url = parts._replace(netloc=netloc).geturl()
        self._refer = False  # list pages as references, read by the workers (`WikiPage`)

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
            self._session, self._client = open_client(self.config, self.policy)
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
            raise ConnectorError(
                connect_failure(exc, self._safe_url, self.config.auth_mode, self.policy)
            ) from exc
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise ConnectorError(
                f"{self._safe_url} answered, but not as the wiki REST API (GET rest/api/space "
                "gave no `results`); check `url` (a Cloud site's URL ends in /wiki)"
            )

    def _describe(self, exc: BaseException) -> str:
        return describe(exc, self.policy)

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
                    if http_status(exc) in (403, 404):
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
        return paged(fetch, total, self.policy.page_size)

    def _spaces(self) -> Iterator[dict[str, Any]]:
        listed = self._listed_spaces()
        if listed is not None:
            if len(listed) < len(set(self.config.spaces or ())):
                self._gaps.append(f"only the first {len(listed)} spaces were read")
            yield from listed
            return
        count = 0
        for space in self._paged(
            lambda start, limit: self.client.get_all_spaces(start=start, limit=limit),
            self.config.max_num_of_spaces,
        ):
            count += 1
            yield space
        if count >= self.config.max_num_of_spaces:
            self._gaps.append(f"max_num_of_spaces ({count}) spaces were read; there may be more")

    def listing_problem(self) -> str | None:
        """Why the last listing may have missed pages: a space or page list that could not be
        read, or one cut at its `max_num_of_*` limit. None when it read them all."""
        return "the wiki source " + "; ".join(self._gaps) if self._gaps else None

    # -- documents ----------------------------------------------------------------------------

    def read_in_workers(self) -> bool:
        """List pages as references (`WikiPage`: id, title, version) that the workers read, each
        with a client of its own; not with `extract_files`, whose attachments are known only
        from the page's HTML, which the listing then reads as before."""
        if self.config.extract_files:
            return False
        self._refer = True
        return True

    def suffixes(self) -> set[str] | None:
        """Pages are HTML; attachments, when extracted, are not known before the run."""
        return {".html"}

    def documents(self) -> Iterator[Document]:
        """Yield each page (then its embedded attachments when extract_files) of each space."""
        self._gaps = []
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
        count, limit = 0, self.config.max_num_of_docs_from_each_space
        while True:
            try:
                entry = next(pages)
            except StopIteration:
                if count >= limit:
                    self._gaps.append(
                        f"read max_num_of_docs_from_each_space ({limit}) pages of "
                        f"space {key}; there may be more"
                    )
                return
            except Exception as exc:
                yield self._failed_listing(key, exc)
                return
            count += 1
            if self._refer:
                yield self._page_reference(key, entry)
            else:
                yield from self._page_documents(key, entry)

    def _page_documents(self, space_key: str, entry: dict[str, Any]) -> Iterator[Document]:
        page_id, title = str(entry.get("id")), str(entry.get("title") or "")
        try:
            page = self.client.get_page_by_id(page_id, expand=PAGE_EXPAND)
            if not isinstance(page, dict):
                raise Malformed("the page response is not JSON")
            view = ((page.get("body") or {}).get("view") or {}).get("value")
            if not isinstance(view, str):
                raise Malformed("the page response has no HTML body (body.view.value)")
        except Exception as exc:
            reason = self._describe(exc)
            if http_status(exc) == 404:
                reason = "deleted or no longer visible since it was listed (HTTP 404)"
            reason = f"page {page_id}: {reason}"
            log.warning("wiki: %s", reason)
            yield self._docs.failed_page(space_key, page_id, title, reason)
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

    def _page_reference(self, space_key: str, entry: dict[str, Any]) -> Document:
        """A listed page, not read yet: what the run needs to plan and record it (id, name,
        version), and what a worker needs to read it (`WikiPage.fetch`)."""
        page_id, title = str(entry.get("id")), str(entry.get("title") or "")
        version = str((entry.get("version") or {}).get("number", "")) or None
        named = self._docs.failed_page(space_key, page_id, title, "")  # its id, name and url
        return WikiPage(
            id=named.id,
            record_id=named.record_id,
            filename=named.filename,
            version=version,
            mime_type="text/html",
            data_source=named.data_source,
            config=self.config,
            policy=self.policy,
            space_key=space_key,
            page_id=page_id,
            title=title,
        )

    def read_page(self, space_key: str, page_id: str, title: str) -> Document:
        """One page, read now (a FailedDocument when it cannot be), without its attachments."""
        return next(iter(self._page_documents(space_key, {"id": page_id, "title": title})))

    def _page_document(
        self, space_key: str, page: dict[str, Any], view: str
    ) -> tuple[Document, media.References]:
        extract = self.config.extract_images or self.config.extract_files
        return self._docs.page(
            space_key,
            page,
            view,
            rewrite=self._rewrite if extract else None,
            permissions=self._permissions,
        )

    def _failed_listing(self, space_key: str | None, exc: BaseException) -> Document:
        what = f"pages of space {space_key}" if space_key else "spaces"
        reason = f"could not list the {what}: {self._describe(exc)}"
        log.warning("wiki: %s", reason)
        self._gaps.append(reason)
        return self._docs.failed_listing(space_key, reason)


@dataclass
class WikiPage(Document):
    """A page the driver listed and a worker reads (`fetch`), with a reader of its own for the
    wiki (its credentials travel in `config`, whose secrets never show in a repr or message)."""

    config: WikiConfig | None = None
    policy: HttpPolicy | None = None
    space_key: str = ""
    page_id: str = ""
    title: str = ""

    def fetch(self) -> Document:
        """The page, read from the wiki by this process (a FailedDocument when it cannot be)."""
        assert self.config is not None
        return _reader(self.config, self.policy).read_page(self.space_key, self.page_id, self.title)

    def read_bytes(self) -> bytes:
        """The page's HTML, read now."""
        return self.fetch().read_bytes()

    def content_hash(self) -> str:
        """The hash of the page's HTML, read now."""
        return self.fetch().content_hash()

    def __repr__(self) -> str:
        return f"WikiPage(id={self.id!r}, filename={self.filename!r}, version={self.version!r})"


#: One reader a wiki in this process (a worker reads many pages of a run).
_READERS: dict[str, WikiSource] = {}


def _reader(config: WikiConfig, policy: HttpPolicy | None) -> WikiSource:
    """This process's reader of the wiki `config` names (with its credentials)."""
    key = hashlib.sha256(pickle.dumps((config, policy))).hexdigest()
    if key not in _READERS:
        _READERS[key] = WikiSource(config, policy)
    return _READERS[key]


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
