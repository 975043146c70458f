"""The VLM strategy: a vision-language model on a model server reads each page image.

One request per page (PDF pages rendered at `VLM_DPI`; an image file is one page), requests
running concurrently within the endpoint's limit. The prompt asks for the page as HTML
(`output_format: text/html`) or as a JSON list of elements (`application/json`); the answer
becomes elements with their page number:

- HTML goes through the `unstructured` library's own HTML partitioner, so headings become
  Title, paragraphs NarrativeText, list items ListItem, tables Table with `text_as_html`
  (pretty-printed when `format_html` is true), images Image;
- JSON items keep their `type` when it is an element type (otherwise UncategorizedText), their
  `text`, and `text_as_html` for tables.

An answer that is neither fails the document with the provider's words quoted; so does a request
that fails after the client's retries.
"""

from __future__ import annotations

import base64
import io
import threading
from pathlib import Path
from typing import Any

from ingestflow.elements import Element
from ingestflow.errors import DocumentError
from ingestflow.providers.client import Image, ModelClient, first_error, map_bounded
from ingestflow.providers.config import Endpoint
from ingestflow.providers.prompts import AnswerError, excerpt, unfence
from ingestflow.stages.ids import new_id

#: Rendering resolution of a PDF page sent to the model.
VLM_DPI = 150
_PDFIUM = threading.Lock()

HTML_PROMPT = (
    "Convert this document page to semantic HTML, in reading order (a two-column page column "
    "by column). Use <h1>-<h3> for titles and headings, <p> for paragraphs, <ul>/<ol> with <li> "
    "for lists, <table> with <tr>, <th>, <td> (rowspan and colspan for merged cells) for "
    'tables, <img alt="…"> with a short description for pictures, <figcaption> for '
    "captions. Copy the text exactly. Answer with the HTML body only."
)
JSON_PROMPT = (
    "Read this document page into its elements, in reading order (a two-column page column by "
    'column). Answer with a JSON array only, one object per element: {"type": one of Title, '
    "NarrativeText, ListItem, Table, Image, FigureCaption, Header, Footer, Formula, Address, "
    'EmailAddress, UncategorizedText; "text": the element\'s text exactly as written (for an '
    'Image, a short description); "text_as_html": for a Table only, the table as an HTML '
    "<table>}."
)
ELEMENT_TYPES = {
    "Title",
    "NarrativeText",
    "ListItem",
    "Table",
    "Image",
    "FigureCaption",
    "Header",
    "Footer",
    "Formula",
    "Address",
    "EmailAddress",
    "UncategorizedText",
    "PageBreak",
}


class VLMReader:
    """Pages to elements through one model server endpoint."""

    def __init__(self, endpoint: Endpoint, model: str, output_format: str, format_html: bool):
        self.client = ModelClient(endpoint, model)
        self.endpoint = endpoint
        self.output_format = output_format
        self.format_html = format_html

    def read(
        self,
        path: Path,
        name: str,
        is_image: bool,
        unique: bool,
        pages: tuple[int, int] | None = None,
        offset: int = 0,
    ) -> list[Element]:
        """The elements of a PDF's pages (all, or `pages` first..last) or of an image (each
        frame of a multi-page TIFF is a page); page numbers are the file's plus `offset` (a file
        that is a page range of a document). Pages are rendered as their request starts, so a
        long PDF is never in memory as images all at once."""
        import mimetypes

        numbers = list(range(1, _frames(path) + 1)) if is_image else _page_numbers(path, pages)
        prompt = JSON_PROMPT if self.output_format == "application/json" else HTML_PROMPT
        filetype = (mimetypes.guess_type(name)[0] or "image/png") if is_image else "application/pdf"

        def one(number: int) -> list[Element]:
            page = number + offset
            image = _image_png(path, number - 1) if is_image else _render_page(path, number)
            answer = self.client.chat(prompt, [Image(image)], max_tokens=8192)
            try:
                found = self._elements(answer)
            except AnswerError as exc:
                raise DocumentError(
                    f"page {page}: {self.endpoint.name} answered something unusable: {exc}"
                ) from None
            for index, element in enumerate(found):
                element["metadata"].update(
                    page_number=page,
                    filename=Path(name).name,
                    filetype=filetype,
                    partition_strategy="vlm",
                )
                element["element_id"] = new_id(unique, name, page, index, element["text"])
            return found

        results = map_bounded(one, numbers, self.endpoint.concurrency)
        error = first_error(results)
        if error is not None:
            if isinstance(error, DocumentError) and str(error).startswith("page "):
                raise error
            page = numbers[results.index(error)] + offset
            raise DocumentError(f"page {page}: {error}") from None
        return [element for found in results for element in found]  # type: ignore[union-attr]

    def _elements(self, answer: str) -> list[Element]:
        if self.output_format == "application/json":
            return _from_json(answer)
        return self._from_html(answer)

    def _from_html(self, answer: str) -> list[Element]:
        from unstructured.partition.html import partition_html

        html = unfence(answer)
        if "<" not in html:
            raise AnswerError(f"no HTML in the answer: {excerpt(answer)}")
        elements = [e.to_dict() for e in partition_html(text=html)]
        for element in elements:
            metadata = element["metadata"]
            for key in ("filetype", "languages", "category_depth", "parent_id"):
                metadata.pop(key, None)
            table = metadata.get("text_as_html")
            if table:
                metadata["text_as_html"] = _format(table, self.format_html)
        if not any(e["text"].strip() for e in elements):
            raise AnswerError(f"the HTML has no text: {excerpt(answer)}")
        return elements


def _from_json(answer: str) -> list[Element]:
    import json

    body = unfence(answer)
    try:
        items = json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("["), body.rfind("]")
        try:
            items = json.loads(body[start : end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            items = None
    if isinstance(items, dict) and isinstance(items.get("elements"), list):
        items = items["elements"]
    if not isinstance(items, list):
        raise AnswerError(f"not a JSON array of elements: {excerpt(answer)}")
    elements: list[Element] = []
    for item in items:
        if not isinstance(item, dict) or not str(item.get("text") or "").strip():
            continue
        kind = str(item.get("type") or "")
        metadata: dict[str, Any] = {}
        if kind == "Table" and item.get("text_as_html"):
            metadata["text_as_html"] = str(item["text_as_html"])
        elements.append(
            {
                "type": kind if kind in ELEMENT_TYPES else "UncategorizedText",
                "element_id": "",
                "text": str(item["text"]).strip(),
                "metadata": metadata,
            }
        )
    if not elements:
        raise AnswerError(f"no element with text in the JSON: {excerpt(answer)}")
    return elements


def _format(table: str, pretty: bool) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(table, "html.parser")
    return soup.prettify().strip() if pretty else str(soup)


def _page_numbers(path: Path, pages: tuple[int, int] | None) -> list[int]:
    """The page numbers to read (all, or first..last)."""
    import pypdfium2 as pdfium

    with _PDFIUM:
        try:
            pdf = pdfium.PdfDocument(str(path))
        except pdfium.PdfiumError as exc:
            raise DocumentError(f"the PDF cannot be opened: {exc}") from None
        try:
            first, last = pages or (1, len(pdf))
        finally:
            pdf.close()
    return list(range(first, last + 1))


def _render_page(path: Path, number: int) -> str:
    """One PDF page as PNG Base64, at VLM_DPI (pdfium is not thread-safe: one at a time)."""
    import pypdfium2 as pdfium

    with _PDFIUM:
        pdf = pdfium.PdfDocument(str(path))
        image = _render_one(pdf, number)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return base64.b64encode(buffer.getvalue()).decode()


def _render_one(pdf: Any, number: int) -> Any:
    try:
        page = pdf[number - 1]
        try:
            bitmap = page.render(scale=VLM_DPI / 72)
            image = bitmap.to_pil()
            bitmap.close()
            return image
        finally:
            page.close()
    finally:
        pdf.close()


def _frames(path: Path) -> int:
    """Pages of an image file (a multi-page TIFF has several)."""
    from PIL import Image as PILImage

    _heif()
    try:
        with PILImage.open(path) as image:
            return int(getattr(image, "n_frames", 1) or 1)
    except OSError as exc:
        raise DocumentError(f"the image cannot be read: {exc}") from None


def _heif() -> None:
    try:
        from pi_heif import register_heif_opener

        register_heif_opener()
    except ImportError:  # pragma: no cover - pi-heif is a dependency
        pass


def _image_png(path: Path, frame: int = 0) -> str:
    """One frame of an image file as PNG Base64 (any format Pillow reads; HEIC through
    pi-heif)."""
    from PIL import Image as PILImage

    _heif()
    try:
        with PILImage.open(path) as image:
            image.seek(frame)
            buffer = io.BytesIO()
            image.convert("RGB").save(buffer, format="PNG", compress_level=1)
    except OSError as exc:
        raise DocumentError(f"the image cannot be read: {exc}") from None
    return base64.b64encode(buffer.getvalue()).decode()
