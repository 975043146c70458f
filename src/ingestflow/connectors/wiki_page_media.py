"""A wiki page's images and attachments, read through the wiki source's own session: the
page's HTML with its images inlined (`extract_images`), and the attachments it embeds as
documents of their own (`extract_files`). A part of `WikiSource`, kept apart."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ingestflow.connectors import wiki_media as media
from ingestflow.connectors.wiki_documents import FailedDocument, WikiDocuments
from ingestflow.elements import Document

if TYPE_CHECKING:
    import requests
    from atlassian import ConfluenceServer

    from ingestflow.connectors.wiki import WikiConfig
    from ingestflow.connectors.wiki_http import HttpPolicy

log = logging.getLogger("ingestflow.connectors.wiki_source")


class PageMedia:
    """What `WikiSource` reads of a page besides its text (it provides what is declared here)."""

    config: WikiConfig
    policy: HttpPolicy
    _origin: tuple[str, str, int]
    _docs: WikiDocuments

    if TYPE_CHECKING:

        @property
        def client(self) -> ConfluenceServer: ...

        @property
        def session(self) -> requests.Session: ...

        def _describe(self, exc: BaseException) -> str: ...

        def _paged(
            self, fetch: Callable[[int, int], Any], total: int
        ) -> Iterator[dict[str, Any]]: ...

    def _rewrite(self, page_id: str, view: str) -> tuple[str, media.References, list[str]]:
        return media.rewrite(
            view,
            page_id,
            base_url=self.config.url,
            home=self._origin,
            inline=self.config.extract_images,
            fetch=lambda url: self.session.get(url, timeout=self.policy.timeout),
            describe=self._describe,
        )

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
        return media.embedded(listing, ids, names)

    def _attachment_document(
        self, parent: Document, space_key: str, page_id: str, attachment: dict[str, Any]
    ) -> Document:
        doc = self._docs.attachment(
            parent, space_key, page_id, attachment, download=self._download, describe=self._describe
        )
        if isinstance(doc, FailedDocument):
            log.warning("wiki: %s", doc.error)
        return doc

    def _download(self, url: str) -> bytes:
        response = self.session.get(url, timeout=self.policy.timeout)
        response.raise_for_status()
        return response.content
