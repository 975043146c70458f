"""A file of a job seen over its pages: where each element lies on its page (from
`metadata.coordinates`), the page images (the job's own document, rendered), and the elements
each chunk came from. The web UI draws from this; it reads only what the job stored."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingestflow.errors import NotFound
from ingestflow.service.page_render import IMAGE_SUFFIXES, page_image
from ingestflow.store import Workspace

PAGES_SHOWN = 10  # pages drawn at once (each is an image to render)
MAX_ORIGINS_BYTES = 64 << 20  # `orig_elements` decompressed, at most


@dataclass
class Box:
    """One element's box on its page, in the page's layout units (y downwards)."""

    index: int  # the element's position in the node's output
    type: str
    x: float
    y: float
    width: float
    height: float
    chunk: int | None = None  # for a chunker's output: the chunk it came from


@dataclass
class Page:
    """A page: its number, its layout size (of the coordinates), and the boxes on it."""

    number: int
    width: float
    height: float
    boxes: list[Box] = field(default_factory=list)


def box_of(element: dict[str, Any]) -> tuple[int, float, float, Box] | None:
    """(page, layout width, layout height, box) of an element with coordinates, else None."""
    meta = element.get("metadata") or {}
    coords = meta.get("coordinates") or {}
    points = coords.get("points") or []
    try:
        xs = [float(p[0]) for p in points]
        ys = [float(p[1]) for p in points]
        width = float(coords.get("layout_width") or 0)  # missing: 0, refused below
        height = float(coords.get("layout_height") or 0)
    except (TypeError, ValueError, IndexError):
        return None
    if not xs or width <= 0 or height <= 0:
        return None
    if coords.get("system") not in (None, "PixelSpace"):
        # PointSpace and relative coordinates count y upwards from the bottom of the page
        ys = [height - y for y in ys]
    x0, y0 = min(xs), min(ys)
    box = Box(-1, str(element.get("type", "?")), x0, y0, max(xs) - x0, max(ys) - y0)
    return int(meta.get("page_number") or 1), width, height, box


def pages_of(
    elements: list[dict[str, Any]], origins: list[list[dict[str, Any]]] | None = None
) -> list[Page]:
    """The pages the elements lie on, each with its elements' boxes (elements without
    coordinates have none); a chunk's boxes are those of the elements it came from
    (`origins`, one list per chunk)."""
    pages: dict[int, Page] = {}
    for index, element in enumerate(elements):
        parts: list[tuple[int | None, dict[str, Any]]] = [(None, element)]
        if origins is not None and box_of(element) is None:
            parts = [(index, origin) for origin in origins[index]]
        for chunk, part in parts:
            found = box_of(part)
            if found is None:
                continue
            number, width, height, box = found
            box.index, box.chunk = index, chunk
            page = pages.setdefault(number, Page(number, width, height))
            page.boxes.append(box)
    return [pages[n] for n in sorted(pages)]


def origins_of(element: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The elements a chunk came from (its `orig_elements`, kept when the chunker's
    include_orig_elements is on), or None when the element carries none."""
    packed = (element.get("metadata") or {}).get("orig_elements")
    if not packed:
        return None
    if isinstance(packed, list):
        return [e for e in packed if isinstance(e, dict)]
    try:
        inflate = zlib.decompressobj()
        data = inflate.decompress(base64.b64decode(packed), MAX_ORIGINS_BYTES)
        found = json.loads(data) if inflate.eof else None
    except (ValueError, zlib.error):
        return None
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else None


def chunk_origins(
    chunks: list[dict[str, Any]], before: list[dict[str, Any]] | None
) -> tuple[list[list[dict[str, Any]]], bool]:
    """Each chunk's elements, and whether they are exact: a chunk's `orig_elements` when the
    chunker kept them; else each element before the chunker goes, in order, to the first chunk
    from the last one matched whose text holds its start (chunkers keep the order; a split
    element counts where it starts)."""
    kept = [origins_of(chunk) for chunk in chunks]
    if all(k is not None for k in kept):
        return [k or [] for k in kept], True
    out: list[list[dict[str, Any]]] = [[] for _ in chunks]
    texts = [" ".join(str(chunk.get("text") or "").split()) for chunk in chunks]
    current = 0
    for element in before or []:
        head = " ".join(str(element.get("text") or "").split())[:60]
        if not head:
            continue  # nothing to match by (a page break, an image without text)
        found = next((i for i in range(current, len(chunks)) if _holds(texts[i], head)), None)
        if found is not None:  # an element in no chunk (dropped by the chunker) is left out
            out[found].append(element)
            current = found
    return out, False


def _holds(text: str, head: str) -> bool:
    """True when `text` holds `head`, or ends with its beginning (the element was split)."""
    if head in text:
        return True
    probe = head[:20]
    at = text.find(probe)
    while at >= 0:
        if head.startswith(text[at:]):
            return True
        at = text.find(probe, at + 1)
    return False


def find_file(record: dict[str, Any], file_id: str) -> dict[str, Any]:
    """A file entry of a job by its id (never by a path)."""
    for entry in record["files"]:
        if entry["file_id"] == file_id:
            return entry
    raise NotFound(f"file {file_id!r} is not in job {record['id']}; the job page lists its files")


def source_document(ws: Workspace, record: dict[str, Any], entry: dict[str, Any],
                    elements: list[dict[str, Any]]) -> Path | None:  # fmt: skip
    """The document the job read for a file, when it is still there unchanged: the upload
    kept in the workspace, or the local file its elements name whose content has the hash the
    job recorded (a moved or edited file is not shown as the job's). None otherwise."""
    candidates: list[Path] = []
    run = (ws.job_info(record["id"]).get("run") or {}) if record.get("id") else {}
    for folder in run.get("inputs") or []:
        candidates.append(Path(folder) / entry["filename"])
    for element in elements[:1]:
        locator = ((element.get("metadata") or {}).get("data_source") or {}).get(
            "record_locator"
        ) or {}
        if locator.get("protocol") == "file" and locator.get("remote_file_path"):
            candidates.append(Path(str(locator["remote_file_path"])))
    uploads = (ws.root / "uploads" / record["id"]).resolve()
    for path in candidates:
        try:
            real = path.resolve()
            if not real.is_file():
                continue
            if entry.get("version"):
                if _sha256(real) == entry["version"]:
                    return real
            elif real.is_relative_to(uploads):
                return real
        except OSError:
            continue
    return None


def is_pageable(path: Path) -> bool:
    """True when pages of this document can be shown as images."""
    return path.suffix.lower() == ".pdf" or path.suffix.lower() in IMAGE_SUFFIXES


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class FileView:
    """What the UI shows of a file after one node (`elements` None: the job kept none)."""

    record: dict[str, Any]
    entry: dict[str, Any]
    index: int
    elements: list[dict[str, Any]] | None
    pages: list[Page]  # the pages shown: PAGES_SHOWN from the one asked for
    images: bool  # whether the job's document is here to render the pages from
    numbers: list[int]  # every page with a box
    origins: list[list[dict[str, Any]]] | None  # each chunk's elements (chunkers and after)
    exact: bool  # origins from `orig_elements` (else matched by text)


def file_view(ws: Workspace, job: str, file_id: str, node: int, first: int = 1) -> FileView:
    """A file of a job after node `node` (from 1), with its chunks' elements and the pages
    (with boxes) from page `first` on, PAGES_SHOWN of them."""
    from ingestflow.service.diff import elements_of

    record = ws.job_record(job)
    entry = find_file(record, file_id)
    stats = record["node_stats"]
    if not 1 <= node <= len(stats):
        raise NotFound(f"node {node} is not in job {record['id'][:8]}: it has {len(stats)} node(s)")
    if entry["status"] != "SUCCESS":
        raise NotFound(
            f"{entry['filename']} has no output: {entry['status'].lower()} ({entry['error']})"
        )
    index = node - 1
    elements = elements_of(ws, record, index, entry)
    origins, exact = None, False
    chunked_at = next((i for i, n in enumerate(stats) if n["node_type"] == "chunk"), None)
    if elements is not None and chunked_at is not None and index >= chunked_at:
        before = elements_of(ws, record, chunked_at - 1, entry) if chunked_at else None
        origins, exact = chunk_origins(elements, before)
    every = pages_of(elements or [], origins)
    pages = [p for p in every if p.number >= first][:PAGES_SHOWN]
    found = document_of(ws, record, entry) if pages else None
    images = found is not None and is_pageable(found)
    numbers = [p.number for p in every]
    return FileView(record, entry, index, elements, pages, images, numbers, origins, exact)


def document_page(ws: Workspace, job: str, file_id: str, number: int) -> tuple[bytes, str]:
    """Page `number` of the document a job read for a file, as image bytes and media type."""
    record = ws.job_record(job)
    entry = find_file(record, file_id)
    found = document_of(ws, record, entry)
    if found is None or not is_pageable(found):
        raise NotFound(
            f"the document of {entry['filename']} is not here any more, changed since the job, "
            "or has no pages to show as images"
        )
    return page_image(found, number)


def document_of(ws: Workspace, record: dict[str, Any], entry: dict[str, Any]) -> Path | None:
    """The job's own document of a file (see `source_document`), from any kept output."""
    from ingestflow.service.diff import elements_of

    if entry["status"] != "SUCCESS":
        return source_document(ws, record, entry, [])
    for index in range(len(record["node_stats"])):
        found = elements_of(ws, record, index, entry)
        if found:
            return source_document(ws, record, entry, found)
    return source_document(ws, record, entry, [])
