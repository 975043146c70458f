"""Partitioner subtype `vlm`: the Auto strategy (pages routed to Fast, High Res or VLM) and the
VLM strategy.

Auto decides page by page (`route_pages`):
- Fast when the page has a usable text layer and neither tables nor pictures;
- VLM, when a model server answers for the node's provider, for pages without a usable text
  layer (scans) and pages with tables; images go to the VLM too;
- High Res for the other pages with tables or pictures (the layout model, run on a small
  rendering, finds them; image objects drawn on the page count too), and for scans and tables
  when no model server is configured — the job then says VLM was unavailable;
- never Fast when `allow_fast` is false.

Runs of consecutive pages with the same strategy are partitioned together (a run is written to a
PDF of its own, its pages numbered as in the document). Other formats are read by their own
partitioner, as Fast reads them. Every element carries `metadata.partition_strategy`, and the
document's page counts per strategy reach the job. The text of a PDF's pages is cleaned as High
Res cleans it, whichever strategy read them (`hires.clean_text`).

The VLM strategy (`is_dynamic: false`) sends every page to the model server (`stages.vlm`); no
endpoint for its provider stops the run at precheck, naming the variable to set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ingestflow.elements import Document, Element
from ingestflow.errors import DocumentError, EnvironmentProblem
from ingestflow.providers import config
from ingestflow.spec.settings import (
    FastSettings,
    HiResSettings,
    UnstructuredPartitionSettings,
    VLMPartitionSettings,
)
from ingestflow.spec.strategies import FAST, HI_RES, VLM, Strategy
from ingestflow.stages.base import NodeInputs, Part, RunContext, Stage
from ingestflow.stages.partition import (
    UnstructuredPartitionStage,
    filetypes,
    hires,
    join_elements,
    read_document,
    read_part,
    set_hierarchy,
)
from ingestflow.stages.partition.hires import clean_text, layout_model
from ingestflow.stages.partition.vlm_reader import VLMReader

#: A page with fewer text-layer characters than this has no usable text layer.
MIN_TEXT_CHARS = 40
#: A page whose text layer is more than this share of unreadable characters is treated as a scan.
MAX_BAD_SHARE = 0.2
#: An image object covering at least this share of the page makes it a High Res page.
MIN_IMAGE_SHARE = 0.02
#: Resolution of the rendering the layout model looks at to find tables and pictures.
ROUTING_DPI = 72


@dataclass(frozen=True)
class PageRoute:
    """The strategy of one page and why."""

    page: int  # 1-based
    strategy: Strategy  # Fast, High Res, or (with a model server) VLM
    reason: str


class VLMPartitionStage(Stage):
    """Auto (is_dynamic true) runs offline on Fast and High Res; VLM needs a model server."""

    settings: VLMPartitionSettings
    slow_per_document = True

    def __init__(
        self,
        name: str,
        subtype: str,
        settings: VLMPartitionSettings,
        context: RunContext,
        inputs: NodeInputs | None = None,
    ) -> None:
        super().__init__(name, subtype, settings, context, inputs)
        self._fast: UnstructuredPartitionStage | None = None
        self._hi_res: UnstructuredPartitionStage | None = None
        self._reader: VLMReader | None = None
        self.endpoint: config.Endpoint | None = None
        self.job_notes: list[str] = []

    def _inner(self, strategy: type[FastSettings | HiResSettings]) -> UnstructuredPartitionStage:
        """The Fast or High Res stage that reads Auto's pages of that strategy: High Res with
        tables, and the crops of Auto's own image blocks (`Strategy.image_blocks`)."""
        settings: UnstructuredPartitionSettings
        if strategy is HiResSettings:
            settings = HiResSettings(
                strategy="hi_res",
                unique_element_ids=self.settings.unique_element_ids,
                infer_table_structure=True,
                pdf_infer_table_structure=True,
                extract_image_block_types=list(self.settings.image_blocks()),  # type: ignore[arg-type]
            )
        else:
            settings = FastSettings(
                strategy="fast", unique_element_ids=self.settings.unique_element_ids
            )
        return UnstructuredPartitionStage(
            self.name, "unstructured_api", settings, self.context, self.inputs
        )

    def precheck(self) -> None:
        """VLM needs its provider's model server; Auto checks what High Res needs and whether a
        model server is there for its VLM pages."""
        provider = self.settings.provider
        endpoint = config.resolve(provider, self.context.endpoints)
        if endpoint is not None:
            endpoint = endpoint.with_key(self.settings.provider_api_key)
        usable = endpoint is not None and endpoint.protocol != "local"
        if not self.settings.is_auto:
            what = f"partition node {self.name!r} (VLM strategy)"
            if endpoint is None:
                raise config.missing(what, provider)
            if not usable:
                raise EnvironmentProblem(
                    f"{what}: {endpoint.variable.replace('BASE_URL', 'PROTOCOL')} is `local`, "
                    "and no offline backend reads page images as a vision-language model does; "
                    "point it at a model server, or use Auto or High Res"
                )
            problem = config.unreachable(what, endpoint)
            if problem:
                raise problem
            self.endpoint = endpoint
            return
        self._inner(FastSettings).precheck()
        self._inner(HiResSettings).precheck()
        self.endpoint = endpoint if usable else None
        if self.endpoint is None:
            why = (
                f"no model server is configured for {provider}: set "
                f"{config.base_url_variable('provider_a' if provider == 'auto' else provider)}"
                if endpoint is None
                else "its model server's protocol is `local`"
            )
            self.job_notes = [
                f"partition node {self.name!r} (Auto): VLM was unavailable ({why}); pages were "
                "routed to Fast and High Res only"
            ]

    def open(self) -> None:
        """Load both strategies once per process (Auto), and the model-server client."""
        if self._reader is not None or self._fast is not None:
            return
        self.precheck()
        if self.endpoint is not None:
            from ingestflow.stages.partition.vlm_reader import VLMReader

            self._reader = VLMReader(
                self.endpoint,
                self.settings.model,
                self.settings.output_format,
                self.settings.format_html,
            )
        if self.settings.is_auto:
            self._fast, self._hi_res = self._inner(FastSettings), self._inner(HiResSettings)
            self._fast.open()
            self._hi_res.open()
        else:  # the library offline (the VLM's HTML is read by its HTML partitioner), formats
            self._fast = self._inner(FastSettings)  # without pages, and the finishing rules
            self._fast.open()

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
        doc.elements = self._fast.finish(elements, doc)
        doc.warnings.extend(warnings)
        doc.stats["pages_by_strategy"] = pages
        return doc

    def page_ranges(self, doc: Document, workers: int) -> list[tuple[int, int]]:
        """Page ranges of a long PDF, so that its pages are spread over the workers (Auto; the
        VLM strategy's requests already run concurrently)."""
        if not self.settings.is_auto:
            return []
        return filetypes.pdf_page_ranges(
            doc, workers, self.settings.partition_strategy.pages_per_part
        )

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
        doc.elements = self._finisher().finish(elements, doc)
        doc.warnings.extend(warnings)
        doc.stats["pages_by_strategy"] = pages
        return doc

    def _finisher(self) -> UnstructuredPartitionStage:
        return self._fast or self._inner(FastSettings)

    def _partition(
        self,
        path: Path,
        name: str,
        is_temp: bool,
        first_page: int = 1,
    ) -> tuple[list[Element], list[str], dict[str, int]]:
        assert self._fast is not None
        if path.stat().st_size == 0:
            raise DocumentError("empty file (0 bytes)")
        file_type = filetypes.classify(path, name, "utf-8", images=True)
        unique = self.settings.unique_element_ids
        if file_type.partitioner_shortname == "image":
            if self._reader is not None:  # a photo or a scan: the VLM reads it
                return self._reader.read(path, name, True, unique), [], {VLM.name: 1}
            assert self._hi_res is not None
            read, notes = self._hi_res.reader.read(path, name, is_temp)
            return _tag(read, HI_RES), notes, {HI_RES.name: 1}
        if file_type.name != "PDF":
            read, notes = self._fast.reader.read(path, name, is_temp)
            if not self.settings.fast_allowed or not self.settings.is_auto:
                notes.append(
                    f"a {file_type.name} file has no pages to lay out: it was read by its own "
                    "partitioner (the Fast strategy)"
                )
            return _tag(read, FAST), notes, {}
        if not self.settings.is_auto:
            assert self._reader is not None
            read = self._reader.read(path, name, False, unique, offset=first_page - 1)
            return read, [], {VLM.name: len({e["metadata"]["page_number"] for e in read})}
        routes = route_pages(path, self.settings.fast_allowed, vlm=self._reader is not None)
        elements: list[Element] = []
        warnings: list[str] = []
        counts: dict[str, int] = {}
        offset = first_page - 1
        readers = {HI_RES: self._hi_res, FAST: self._fast}
        for strategy, first, last in _runs(routes):
            counts[strategy.name] = counts.get(strategy.name, 0) + last - first + 1
            stage = readers.get(strategy)
            if stage is None:  # the VLM's pages
                assert self._reader is not None
                elements.extend(self._reader.read(path, name, False, unique, (first, last), offset))
                continue
            if first == 1 and last == len(routes):
                found, notes = stage.reader.read(path, name, is_temp, first_page=first_page)
                if strategy is FAST:  # High Res cleans its own (`hires.clean_text`)
                    notes += clean_text.clean_elements(found, path, first_page)
            else:
                with filetypes.pdf_pages(path, first, last) as part:  # with the document's time
                    found, notes = stage.reader.read(part, name, is_temp, first_page=offset + first)
                    if strategy is FAST:
                        notes += clean_text.clean_elements(found, part, offset + first)
            elements.extend(_tag(found, strategy))
            warnings.extend(notes)
        set_hierarchy(elements)
        return elements, warnings, counts


def _tag(elements: list[Element], strategy: Strategy) -> list[Element]:
    for element in elements:
        element["metadata"]["partition_strategy"] = strategy.name
    return elements


def _runs(routes: list[PageRoute]) -> list[tuple[Strategy, int, int]]:
    """Consecutive pages with the same strategy: (strategy, first page, last page)."""
    runs: list[tuple[Strategy, int, int]] = []
    for route in routes:
        if runs and runs[-1][0] == route.strategy and runs[-1][2] == route.page - 1:
            runs[-1] = (route.strategy, runs[-1][1], route.page)
        else:
            runs.append((route.strategy, route.page, route.page))
    return runs


def route_pages(path: Path, allow_fast: bool, vlm: bool = False) -> list[PageRoute]:
    """The strategy of every page of a PDF (see the module docstring); with `vlm`, scans and
    pages with tables go to the VLM."""
    routes = _route_pages(path, allow_fast, analyse=allow_fast or vlm)
    if not vlm:
        return routes
    to_vlm = ("no usable text layer", "unreadable text layer", "tables")
    return [PageRoute(r.page, VLM, r.reason) if r.reason in to_vlm else r for r in routes]


def _route_pages(path: Path, allow_fast: bool, analyse: bool) -> list[PageRoute]:
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
                if not analyse:
                    routes.append(PageRoute(number, HI_RES, "allow_fast is false"))
                    continue
                textpage = page.get_textpage()
                text = textpage.get_text_range()
                textpage.close()
                readable = sum(1 for c in text if c.isprintable() and c != "\ufffd")
                visible = sum(1 for c in text if not c.isspace())
                if visible < MIN_TEXT_CHARS:
                    routes.append(PageRoute(number, HI_RES, "no usable text layer"))
                    continue
                if visible and 1 - readable / max(len(text), 1) > MAX_BAD_SHARE:
                    routes.append(PageRoute(number, HI_RES, "unreadable text layer"))
                    continue
                width, height = page.get_size()
                area = width * height or 1.0
                images = 0.0
                for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
                    left, bottom, right, top = obj.get_bounds()
                    images += max(0.0, right - left) * max(0.0, top - bottom)
                if images / area >= MIN_IMAGE_SHARE:
                    routes.append(PageRoute(number, HI_RES, "pictures"))
                    continue
                if model is None:
                    hires.load_layout_model()
                    from unstructured_inference.models.base import get_model

                    model = get_model(layout_model.LAYOUT_MODEL_NAME)
                bitmap = page.render(scale=ROUTING_DPI / 72)
                image = bitmap.to_pil()
                bitmap.close()
                found = model(image)
                kinds = {found.element_class_id_map[int(i)] for i in found.element_class_ids}
                if "Table" in kinds or "Picture" in kinds:
                    what = "tables" if "Table" in kinds else "pictures"
                    routes.append(PageRoute(number, HI_RES, what))
                elif allow_fast:
                    routes.append(PageRoute(number, FAST, "text layer, no tables or pictures"))
                else:
                    routes.append(PageRoute(number, HI_RES, "allow_fast is false"))
            finally:
                page.close()
    finally:
        pdf.close()
    return routes
