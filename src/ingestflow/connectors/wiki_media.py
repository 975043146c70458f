"""What a wiki page's HTML embeds: images to inline and attachments to read.

With `extract_images`, each `<img>` served by the instance's own origin (scheme, host and port of
`url`) is downloaded with the connector's credentials and inlined as a `data:` URI of its real
MIME type (`image_mime`: magic bytes first); images on other hosts stay links, with one warning,
and an image that can't be fetched stays a link with its own warning. With `extract_files`, the
attachments the page embeds are found by attachment id (`data-linked-resource-*` attributes on
anything but an image) or by download link (`/download/attachments/{page id}/{file name}`).
BeautifulSoup and filetype are imported only when a page is rewritten.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urljoin, urlsplit

from ingestflow.connectors.wiki_http import Malformed

if TYPE_CHECKING:
    import requests
    from bs4 import BeautifulSoup

References = tuple[set[str], set[str]]  # (attachment ids, attachment file names) a page embeds


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


def default_port(scheme: str) -> int:
    """The port a URL of this scheme means when it names none."""
    return 443 if scheme == "https" else 80


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, lower-cased host, port) of a URL: what must match for the wiki to serve it."""
    parts = urlsplit(url)
    port = parts.port or default_port(parts.scheme)
    return (parts.scheme, (parts.hostname or "").lower(), port)


def rewrite(
    view: str,
    page_id: str,
    *,
    base_url: str,
    home: tuple[str, str, int],
    inline: bool,
    fetch: Callable[[str], requests.Response],
    describe: Callable[[BaseException], str],
) -> tuple[str, References, list[str]]:
    """Find the attachments a page's HTML embeds and, when `inline`, inline the images served by
    `home` (the wiki's `origin()`; each downloaded with `fetch`): returns the HTML, the
    references, and warnings."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(view, "html.parser")
    references = _attachment_references(soup, page_id)
    if not inline:
        return view, references, []
    changed, warnings = _inline_images(soup, base_url, home, fetch, describe)
    return (str(soup) if changed else view), references, warnings


def _attachment_references(soup: BeautifulSoup, page_id: str) -> References:
    ids: set[str] = set()
    names: set[str] = set()
    for tag in soup.find_all(True, attrs={"data-linked-resource-type": "attachment"}):
        if tag.name != "img" and tag.get("data-linked-resource-id"):
            ids.add(str(tag["data-linked-resource-id"]).removeprefix("att"))
    for link in soup.find_all("a", href=True):
        path = urlsplit(str(link["href"])).path
        if f"/download/attachments/{page_id}/" in path:
            names.add(unquote(path.rsplit("/", 1)[1]))
    return ids, names


def _inline_images(
    soup: BeautifulSoup,
    base_url: str,
    home: tuple[str, str, int],
    fetch: Callable[[str], requests.Response],
    describe: Callable[[BaseException], str],
) -> tuple[bool, list[str]]:
    warnings: list[str] = []
    foreign: set[str] = set()
    changed = False
    for img in soup.find_all("img", src=True):
        src = str(img["src"])
        if src.startswith("data:"):
            continue
        url = urljoin(base_url + "/", src)
        if origin(url) != home:
            foreign.add(urlsplit(url).netloc or src)
            continue
        try:
            response = fetch(url)
            response.raise_for_status()
            mime = image_mime(response.content, response.headers.get("Content-Type"))
            if mime is None:
                raise Malformed("the response is not an image")
        except Exception as exc:
            warnings.append(f"image {src} not inlined: {describe(exc)}")
            continue
        img["src"] = f"data:{mime};base64,{base64.b64encode(response.content).decode('ascii')}"
        changed = True
    if foreign:
        warnings.append(
            f"images on other hosts left as links ({', '.join(sorted(foreign))}): only "
            f"{home[1]} is fetched, with the connector's credentials"
        )
    return changed, warnings


def embedded(
    attachments: Iterable[dict[str, Any]], ids: set[str], names: set[str]
) -> list[dict[str, Any]]:
    """The attachments (of a page's listing) that its HTML embeds, by attachment id or name."""
    return [
        a
        for a in attachments
        if str(a.get("id", "")).removeprefix("att") in ids or a.get("title") in names
    ]
