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
from pathlib import Path
from typing import Any

from ingestflow.elements import Element
from ingestflow.errors import DocumentError
from ingestflow.providers.client import Image, ModelClient, map_bounded
from ingestflow.providers.config import Endpoint
from ingestflow.providers.prompts import AnswerError, excerpt, unfence
from ingestflow.stages.ids import new_id

#: Rendering resolution of a PDF page sent to the model.
VLM_DPI = 150

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
        """The elements of a PDF's pages (all, or `pages` first..last) or of an image; page
        numbers are the file's plus `offset` (a file that is a page range of a document)."""
        images = [(1, _image_png(path))] if is_image else _render(path, pages)
        prompt = JSON_PROMPT if self.output_format == "application/json" else HTML_PROMPT
        answers = map_bounded(
            lambda item: self.client.chat(prompt, [Image(item[1])], max_tokens=8192),
            images,
            self.endpoint.concurrency,
        )
        elements: list[Element] = []
        for (number, _), answer in zip(images, answers, strict=True):
            page = number + offset
            if isinstance(answer, BaseException):
                raise DocumentError(f"page {page}: {answer}") from None
            try:
                found = self._elements(answer)
            except AnswerError as exc:
                raise DocumentError(
                    f"page {page}: {self.endpoint.name} answered something unusable: {exc}"
                ) from None
            for index, element in enumerate(found):
                metadata = element["metadata"]
                metadata.update(
                    page_number=page,
                    filename=Path(name).name,
                    filetype="image/png" if is_image else "application/pdf",
                    partition_strategy="vlm",
                )
                element["element_id"] = new_id(unique, name, page, index, element["text"])
            elements.extend(found)
        return elements

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


def _render(path: Path, pages: tuple[int, int] | None) -> list[tuple[int, str]]:
    """(page number, PNG as Base64) of each page of a PDF."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise DocumentError(f"the PDF cannot be opened: {exc}") from None
    try:
        first, last = pages or (1, len(pdf))
        out = []
        for number in range(first, last + 1):
            page = pdf[number - 1]
            try:
                bitmap = page.render(scale=VLM_DPI / 72)
                buffer = io.BytesIO()
                bitmap.to_pil().save(buffer, format="PNG", compress_level=1)
                bitmap.close()
            finally:
                page.close()
            out.append((number, base64.b64encode(buffer.getvalue()).decode()))
        return out
    finally:
        pdf.close()


def _image_png(path: Path) -> str:
    """An image file as PNG Base64 (any format Pillow reads; HEIC through pi-heif)."""
    from PIL import Image as PILImage

    try:
        from pi_heif import register_heif_opener

        register_heif_opener()
    except ImportError:  # pragma: no cover - pi-heif is a dependency
        pass
    try:
        with PILImage.open(path) as image:
            buffer = io.BytesIO()
            image.convert("RGB").save(buffer, format="PNG", compress_level=1)
    except OSError as exc:
        raise DocumentError(f"the image cannot be read: {exc}") from None
    return base64.b64encode(buffer.getvalue()).decode()
