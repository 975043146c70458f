"""The Documents the `wiki` source yields: ids, file names, HTML and `data_source` of pages and of
their embedded attachments, and `FailedDocument` for what was listed but could not be read.

A page's `data` is its `body.view` HTML (the rendered page: macros expanded, images as real
`<img src>`; `body.storage` would hand the partitioner `ac:`/`ri:` markup it can't read) inside
`<body class="Document"><h1>title</h1>...</body>`. `version` is the page's version number, ids are
uuid5 of the instance host and the page id (stable across runs), and `data_source` carries url,
version, record_locator (protocol `wiki`, the connector type users write), dates and
`permissions_data`. An attachment is a Document of its own, a child of its page (`parent_id`),
sharing the page's url and permissions; its version is the attachment's, else its content hash.
`WikiDocuments` only shapes: the reads it needs (rewriting the HTML, permissions, downloads) are
handed to it by the source.
"""

from __future__ import annotations

import hashlib
import html
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingestflow.connectors.wiki_media import References
from ingestflow.elements import Document
from ingestflow.errors import DocumentError

PROTOCOL = "wiki"

Rewrite = Callable[[str, str], tuple[str, References, list[str]]]  # (page id, html) -> ...
Permissions = Callable[[str, dict[str, Any]], tuple[list[dict[str, Any]] | None, str | None]]


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


def slugify(title: str, limit: int = 60) -> str:
    """A file-name-safe slug of a title (letters of any script kept)."""
    slug = re.sub(r"[\W_]+", "-", title.casefold()).strip("-")
    return slug[:limit].rstrip("-")


class WikiDocuments:
    """Names and shapes the Documents of one wiki instance."""

    def __init__(self, url: str, instance: str, cloud: bool) -> None:
        self.url = url  # the configured base URL
        self.instance = instance  # host[:port]: with the page id, the stable document id
        self.cloud = cloud

    def doc_id(self, *parts: str) -> str:
        """The stable id of a page, attachment or listing of this instance."""
        name = f"{PROTOCOL}://{self.instance}/" + "/".join(parts)
        return str(uuid.uuid5(uuid.NAMESPACE_URL, name))

    def page_url(self, page: dict[str, Any]) -> str:
        """Where a user views the page."""
        links = page.get("_links") or {}
        if isinstance(links.get("webui"), str):
            return str(links.get("base") or self.url).rstrip("/") + links["webui"]
        return f"{self.url}/pages/viewpage.action?pageId={page.get('id')}"

    def locator(self, space_key: str, page_id: str, url: str) -> dict[str, Any]:
        """The `record_locator` of a page."""
        return {
            "protocol": PROTOCOL,
            "remote_file_path": url,
            "space_key": space_key,
            "page_id": page_id,
            "url": url,
        }

    def page(
        self,
        space_key: str,
        page: dict[str, Any],
        view: str,
        *,
        rewrite: Rewrite | None,
        permissions: Permissions,
    ) -> tuple[Document, References]:
        """A page as a Document (its HTML passed through `rewrite` when given), and the
        attachments its HTML embeds."""
        page_id, title = str(page["id"]), str(page.get("title") or "")
        url, warnings = self.page_url(page), list[str]()
        references: References = (set(), set())
        if rewrite is not None:
            view, references, warnings = rewrite(page_id, view)
        version = str((page.get("version") or {}).get("number", ""))
        history = page.get("history") or {}
        data_source: dict[str, Any] = {
            "url": url,
            "version": version,
            "record_locator": self.locator(space_key, page_id, url),
            "date_created": history.get("createdDate"),
            "date_modified": (page.get("version") or {}).get("when")
            or (history.get("lastUpdated") or {}).get("when"),
        }
        permissions_data, note = permissions(space_key, page)
        if permissions_data is not None:
            data_source["permissions_data"] = permissions_data
        if note:
            warnings.append(note)
        body = (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head>\n'
            f'<body class="Document"><h1>{html.escape(title)}</h1>\n{view}\n</body></html>\n'
        )
        slug = slugify(title)
        doc_id = self.doc_id("pages", page_id)
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

    def failed_page(self, space_key: str, page_id: str, title: str, reason: str) -> Document:
        """A listed page that could not be read."""
        slug, doc_id = slugify(title), self.doc_id("pages", page_id)
        url = f"{self.url}/pages/viewpage.action?pageId={page_id}"
        return FailedDocument(
            id=doc_id,
            record_id=doc_id,
            filename=f"{space_key}/{page_id}" + (f"-{slug}" if slug else "") + ".html",
            mime_type="text/html",
            data_source={"url": url, "record_locator": self.locator(space_key, page_id, url)},
            warnings=[reason],
            error=reason,
        )

    def failed_listing(self, space_key: str | None, reason: str) -> Document:
        """A listing of spaces (space_key None) or of a space's pages that broke off."""
        doc_id = self.doc_id("spaces", space_key or "")
        return FailedDocument(
            id=doc_id,
            record_id=doc_id,
            filename=f"{space_key}/" if space_key else "(spaces)",
            data_source={"url": self.url, "record_locator": {"protocol": PROTOCOL}},
            warnings=[reason],
            error=reason,
        )

    def attachment(
        self,
        parent: Document,
        space_key: str,
        page_id: str,
        attachment: dict[str, Any],
        *,
        download: Callable[[str], bytes],
        describe: Callable[[BaseException], str],
    ) -> Document:
        """An attachment a page embeds, its content read with `download` (a FailedDocument
        when that fails)."""
        att_id = str(attachment.get("id"))
        title = str(attachment.get("title") or att_id)
        filename = title.replace("/", "_").replace("\\", "_")
        if self.cloud:  # Cloud's supported route; `_links.download` is deprecated there
            url = f"{self.url}/rest/api/content/{page_id}/child/attachment/{att_id}/download"
        else:
            link = str((attachment.get("_links") or {}).get("download") or "")
            url = f"{self.url}/{link.lstrip('/')}"
        page_url = parent.data_source["url"]
        version = (attachment.get("version") or {}).get("number")
        source: dict[str, Any] = {
            "url": page_url,
            "version": str(version) if version is not None else None,
            "record_locator": {
                **self.locator(space_key, page_id, page_url),
                "attachment_id": att_id,
                "remote_file_path": url,
            },
            "date_modified": (attachment.get("version") or {}).get("when"),
        }
        if "permissions_data" in parent.data_source:
            source["permissions_data"] = parent.data_source["permissions_data"]
        doc_id = self.doc_id("pages", page_id, "attachments", att_id)
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
            data = download(url)
        except Exception as exc:
            reason = f"attachment {title!r} of page {page_id}: {describe(exc)}"
            return FailedDocument(**common, mime_type=media, warnings=[reason], error=reason)
        doc = Document(**common, data=data, mime_type=media)
        doc.version = source["version"] or doc.content_hash()
        source["version"] = doc.version
        doc.warnings = [w for w in parent.warnings if w.startswith("permissions_data")]
        return doc
