"""Partitioner subtype `vlm`: the Auto strategy (pages routed to Fast or High Res) and VLM.

Auto decides page by page (`route_pages`):
- Fast when the page has a usable text layer and neither tables nor pictures;
- High Res when it has tables or pictures (the layout model, run on a small rendering, finds
  them; image objects drawn on the page count too) or no usable text layer (a scan);
- never Fast when `allow_fast` is false;
- VLM when a model server answers for the node's provider — not built yet (issue "Model
  providers"): pages that would go there go to High Res, and the job says VLM was unavailable.

Runs of consecutive pages with the same strategy are partitioned together (a run is written to a
PDF of its own, its pages numbered as in the document). Images go to High Res; other formats are
read by their own partitioner, as Fast reads them. Every element carries
`metadata.partition_strategy`, and the document's page counts per strategy reach the job.

The VLM strategy (`is_dynamic: false`) needs a model server and stops the run at precheck.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ingestflow.elements import Document, Element
from ingestflow.errors import DocumentError, EnvironmentProblem
from ingestflow.spec.settings import UnstructuredPartitionSettings, VLMPartitionSettings
from ingestflow.stages import filetypes, hires
from ingestflow.stages.base import Part, RunContext, Stage
from ingestflow.stages.partition import (
    UnstructuredPartitionStage,
    join_elements,
    read_document,
    read_part,
    set_hierarchy,
)

#: A page with fewer text-layer characters than this has no usable text layer.
MIN_TEXT_CHARS = 40
#: A page whose text layer is more than this share of unreadable characters is treated as a scan.
MAX_BAD_SHARE = 0.2
#: An image object covering at least this share of the page makes it a High Res page.
MIN_IMAGE_SHARE = 0.02
#: Resolution of the rendering the layout model looks at to find tables and pictures.
ROUTING_DPI = 72
#: Pages per part when a long PDF is spread over the workers (routing is cheap; most pages of a
#: text PDF are read by Fast, the others by High Res at about a second each).
PAGES_PER_PART = 4
#: Element types of Auto's High Res pages that keep their image (enrichments read them).
AUTO_IMAGE_BLOCKS = ["Image", "Table"]


@dataclass(frozen=True)
class PageRoute:
    """The strategy of one page and why."""

    page: int  # 1-based
    strategy: str  # "fast" | "hi_res"
    reason: str


class VLMPartitionStage(Stage):
    """Auto (is_dynamic true) runs offline on Fast and High Res; VLM needs a model server."""

    settings: VLMPartitionSettings
    slow_per_document = True

    def __init__(
        self, name: str, subtype: str, settings: VLMPartitionSettings, context: RunContext
    ) -> None:
        super().__init__(name, subtype, settings, context)
        self._fast: UnstructuredPartitionStage | None = None
        self._hi_res: UnstructuredPartitionStage | None = None
        self.job_notes: list[str] = []

    def _inner(self, strategy: str) -> UnstructuredPartitionStage:
        hi_res = strategy == "hi_res"
        settings = UnstructuredPartitionSettings(
            strategy="hi_res" if hi_res else "fast",
            unique_element_ids=self.settings.unique_element_ids,
            infer_table_structure=hi_res,
            pdf_infer_table_structure=hi_res,
            extract_image_block_types=AUTO_IMAGE_BLOCKS if hi_res else None,
        )
        return UnstructuredPartitionStage(self.name, "unstructured_api", settings, self.context)

    def precheck(self) -> None:
        """VLM stops here (no model-server client yet); Auto checks what High Res needs."""
        provider = self.settings.provider
        if not self.settings.is_auto:
            if not self.context.endpoints.get(provider):
                raise EnvironmentProblem(
                    f"partition node {self.name!r}: the VLM strategy needs a model server "
                    f"endpoint for provider {provider!r} and none is configured; offline, use "
                    "Auto (is_dynamic true), High Res or Fast (subtype unstructured_api)"
                )
            raise EnvironmentProblem(
                f"partition node {self.name!r}: the VLM strategy through a model server is not "
                "built yet; use Auto (is_dynamic true), High Res or Fast"
            )
        self._inner("fast").precheck()
        self._inner("hi_res").precheck()
        self.job_notes = [
            f"partition node {self.name!r} (Auto): VLM was unavailable "
            + (
                f"(no model server is configured for provider {provider!r})"
                if not self.context.endpoints.get(provider)
                else "(the model-server client is not built yet)"
            )
            + "; pages were routed to Fast and High Res only"
        ]

    def open(self) -> None:
        """Load both strategies once per process."""
        if self._fast is None:
            self.precheck()
            self._fast, self._hi_res = self._inner("fast"), self._inner("hi_res")
            self._fast.open()
            self._hi_res.open()

    def process(self, doc: Document) -> Document:
        """Partition `doc` page by page; StageError when it cannot be read."""
        self.open()
        assert self._fast is not None
        pages: dict[str, int] = {}

        def read(path: Path, name: str, is_temp: bool) -> tuple[list[Element], list[str]]:
            elements, warnings, counts = self._partition(path, name, is_temp)
            pages.update(counts)
            return elements, warnings

        elements, warnings = read_document(self.name, doc, read)
        doc.elements = self._fast._finish(elements, doc)
        doc.warnings.extend(warnings)
        doc.stats["pages_by_strategy"] = pages
        return doc

    def page_ranges(self, doc: Document, workers: int) -> list[tuple[int, int]]:
        """Page ranges of a long PDF, so that its pages are spread over the workers."""
        return filetypes.pdf_page_ranges(doc, workers, PAGES_PER_PART)

    def process_part(self, doc: Document, pages: tuple[int, int]) -> Part:
        """Pages `pages` of a PDF, each routed as in `process`."""
        self.open()
        counts: dict[str, int] = {}

        def read(
            path: Path, name: str, is_temp: bool, first_page: int, whole: bool
        ) -> tuple[list[Element], list[str]]:
            elements, warnings, found = self._partition(path, name, is_temp, first_page)
            counts.update(found)
            return elements, warnings

        part = read_part(self.name, doc, pages, read)
        part.stats["pages_by_strategy"] = counts
        return part

    def join_parts(self, doc: Document, parts: list[Part]) -> Document:
        """The document from its page ranges, with the page counts of all of them."""
        elements, warnings = join_elements(parts)
        pages: dict[str, int] = {}
        for part in parts:
            for strategy, count in part.stats.get("pages_by_strategy", {}).items():
                pages[strategy] = pages.get(strategy, 0) + count
        if not any(element["text"].strip() for element in elements):
            warnings.append("no text: the document yielded no element with text")
        doc.elements = self._finisher()._finish(elements, doc)
        doc.warnings.extend(warnings)
        doc.stats["pages_by_strategy"] = pages
        return doc

    def _finisher(self) -> UnstructuredPartitionStage:
        return self._fast or self._inner("fast")

    def _partition(
        self,
        path: Path,
        name: str,
        is_temp: bool,
        first_page: int = 1,
    ) -> tuple[list[Element], list[str], dict[str, int]]:
        assert self._fast is not None and self._hi_res is not None
        if path.stat().st_size == 0:
            raise DocumentError("empty file (0 bytes)")
        file_type = filetypes.classify(path, name, "utf-8", images=True)
        if file_type.partitioner_shortname == "image":
            elements, warnings = self._hi_res._partition_file(path, name, is_temp)
            return _tag(elements, "hi_res"), warnings, {"hi_res": 1}
        if file_type.name != "PDF":
            elements, warnings = self._fast._partition_file(path, name, is_temp)
            if not self.settings.fast_allowed:
                warnings.append(
                    f"allow_fast is false, but a {file_type.name} file has no pages to lay out: "
                    "it was read by its own partitioner"
                )
            return _tag(elements, "fast"), warnings, {}
        routes = route_pages(path, self.settings.fast_allowed)
        elements: list[Element] = []
        warnings: list[str] = []
        counts: dict[str, int] = {}
        offset = first_page - 1
        for strategy, first, last in _runs(routes):
            counts[strategy] = counts.get(strategy, 0) + last - first + 1
            stage = self._hi_res if strategy == "hi_res" else self._fast
            if first == 1 and last == len(routes):
                found, notes = stage._partition_file(path, name, is_temp, first_page=first_page)
            else:
                with filetypes.pdf_pages(path, first, last) as part:  # with the document's time
                    found, notes = stage._partition_file(
                        part, name, is_temp, first_page=offset + first
                    )
            elements.extend(_tag(found, strategy))
            warnings.extend(notes)
        set_hierarchy(elements)
        return elements, warnings, counts


def _tag(elements: list[Element], strategy: str) -> list[Element]:
    for element in elements:
        element["metadata"]["partition_strategy"] = strategy
    return elements


def _runs(routes: list[PageRoute]) -> list[tuple[str, int, int]]:
    """Consecutive pages with the same strategy: (strategy, first page, last page)."""
    runs: list[tuple[str, int, int]] = []
    for route in routes:
        if runs and runs[-1][0] == route.strategy and runs[-1][2] == route.page - 1:
            runs[-1] = (route.strategy, runs[-1][1], route.page)
        else:
            runs.append((route.strategy, route.page, route.page))
    return runs


def route_pages(path: Path, allow_fast: bool) -> list[PageRoute]:
    """The strategy of every page of a PDF (see the module docstring)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise DocumentError(f"the PDF cannot be opened: {exc}") from None
    model = None
    routes: list[PageRoute] = []
    try:
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                number = index + 1
                if not allow_fast:
                    routes.append(PageRoute(number, "hi_res", "allow_fast is false"))
                    continue
                textpage = page.get_textpage()
                text = textpage.get_text_range()
                textpage.close()
                readable = sum(1 for c in text if c.isprintable() and c != "\ufffd")
                visible = sum(1 for c in text if not c.isspace())
                if visible < MIN_TEXT_CHARS:
                    routes.append(PageRoute(number, "hi_res", "no usable text layer"))
                    continue
                if visible and 1 - readable / max(len(text), 1) > MAX_BAD_SHARE:
                    routes.append(PageRoute(number, "hi_res", "unreadable text layer"))
                    continue
                width, height = page.get_size()
                area = width * height or 1.0
                images = 0.0
                for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
                    left, bottom, right, top = obj.get_bounds()
                    images += max(0.0, right - left) * max(0.0, top - bottom)
                if images / area >= MIN_IMAGE_SHARE:
                    routes.append(PageRoute(number, "hi_res", "pictures"))
                    continue
                if model is None:
                    hires.load_layout_model()
                    from unstructured_inference.models.base import get_model

                    model = get_model(hires.layout_model.LAYOUT_MODEL_NAME)
                bitmap = page.render(scale=ROUTING_DPI / 72)
                image = bitmap.to_pil()
                bitmap.close()
                found = model(image)
                kinds = {found.element_class_id_map[int(i)] for i in found.element_class_ids}
                if "Table" in kinds or "Picture" in kinds:
                    what = "tables" if "Table" in kinds else "pictures"
                    routes.append(PageRoute(number, "hi_res", what))
                else:
                    routes.append(PageRoute(number, "fast", "text layer, no tables or pictures"))
            finally:
                page.close()
    finally:
        pdf.close()
    return routes
