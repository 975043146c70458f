"""The chunk stage: the four chunker subtypes of SPEC.md on `unstructured`'s chunking engine.

- `chunk_by_character`: the library's `basic` strategy (`chunk_elements`).
- `chunk_by_title`: the library's `chunk_by_title`. Its combiner (combine_text_under_n_chars,
  default max_characters) merges small consecutive sections whatever their pages, so with
  multipage_sections false a page boundary still separates chunks only where combining stops;
  this is the library's behaviour, kept so that output matches the hosted service's.
- `chunk_by_page` (not in the library): the elements are cut into runs of one page each and every
  run is chunked with the basic rules, so no chunk holds text of two pages. A missing page number
  continues the current page, as the library's page predicate has it. Overlap (`overlap_all`)
  stays within a page: a tail of page 1 never opens a chunk of page 2.
- `chunk_by_similarity` (not in the library): consecutive elements stay in one run while the cosine
  similarity of their embeddings is at least `similarity_threshold` (0.5 when absent, the
  service's documented default); each run is then chunked with the basic rules, so max_characters
  and new_after_n_chars still bound every chunk and an oversized element is text-split as the
  library does. Elements without text neither break nor extend a run's similarity chain. The
  embeddings come from the local all-MiniLM-L6-v2 (the service uses a larger sentence model, so
  the same threshold may cut in slightly different places).

Defaults: SPEC.md's where it states one (include_orig_elements false, multipage_sections false),
the library's otherwise (max_characters 500, new_after_n_chars = combine_text_under_n_chars =
max_characters, overlap 0). `unstructured_api_url` (a remote chunker) stops the run at
precheck: chunking is local. `unstructured_api_key` alone names no service and is never used
nor logged.

`contextual_chunking_strategy: "v1"`: after chunking, a language model (the provider of
`INGESTFLOW_CONTEXT_PROVIDER`, PROVIDER_A by default; no endpoint stops the run at precheck)
writes for each chunk one or two sentences situating it in its document (the document's text,
its first 24,000 characters, goes with each request); the context is prepended to the chunk's
text, before embedding, and kept in `metadata.chunk_context`. Requests run concurrently within
the endpoint's limit; a failed one fails the document.

Chunk ids: random UUIDs when the run's `unique_element_ids` is true; otherwise the first 32 hex
digits of SHA-256(document record id, chunk index, chunk text) - stable across runs with the same
input and settings, unique within the document. `metadata.table_id` of TableChunks follows the
same rule (the id of the table's first chunk) so that deterministic output has no random field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ingestflow.elements import Document, Element
from ingestflow.errors import DocumentError, EnvironmentProblem, StageError, WorkflowInvalid
from ingestflow.providers import config
from ingestflow.providers.config import Endpoint
from ingestflow.spec.node_rules import chunk_size_problems
from ingestflow.spec.settings import (
    ChunkBySimilaritySettings,
    ChunkByTitleSettings,
    ChunkSettings,
)
from ingestflow.stages import chunk_carry
from ingestflow.stages.base import NodeInputs, RunContext, Stage
from ingestflow.stages.ids import new_id

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as LibElement

    from ingestflow.providers.client import ModelClient

#: Used when `similarity_threshold` is absent: the hosted service's documented default.
DEFAULT_SIMILARITY_THRESHOLD = 0.5
#: How much of a document's text goes with each contextual-chunking request (the model sees
#: the document's start when it is longer).
CONTEXT_DOCUMENT_CHARS = 24_000


class ChunkStage(Stage):
    """Chunks one document's elements with the strategy named by the node's subtype."""

    def __init__(
        self,
        name: str,
        subtype: str,
        settings: Any,
        context: RunContext,
        inputs: NodeInputs | None = None,
    ) -> None:
        super().__init__(name, subtype, settings, context, inputs)
        self._endpoint: Endpoint | None = None
        self._client: ModelClient | None = None

    def precheck(self) -> None:
        """Reject, before the run, what the offline engine cannot do or the library would reject."""
        problems = chunk_size_problems(self.chunk_settings, f"{self.name}.settings")
        if problems:
            raise WorkflowInvalid(problems, what=f"chunk node {self.name!r}")
        st = self.chunk_settings
        if st.unstructured_api_url:
            raise EnvironmentProblem(
                f"chunk node {self.name!r}: unstructured_api_url is set, but ingestflow chunks "
                "locally with the same `unstructured` chunking engine and does not call a remote "
                "chunker; remove unstructured_api_url (and unstructured_api_key) from the node's "
                "settings"
            )
        if st.contextual_chunking_strategy:
            provider = self.context.context_provider
            endpoint = config.resolve(provider, self.context.endpoints)
            what = (
                f"chunk node {self.name!r} (contextual_chunking_strategy "
                f"{st.contextual_chunking_strategy!r})"
            )
            if endpoint is None:
                raise config.missing(what, provider)
            if endpoint.protocol == "local":
                raise EnvironmentProblem(
                    f"{what}: the context is written by a language model, and "
                    f"{endpoint.variable.replace('BASE_URL', 'PROTOCOL')} is `local`; point it "
                    "at a model server (protocol openai or anthropic), or remove "
                    "contextual_chunking_strategy"
                )
            self._endpoint = endpoint

    @property
    def chunk_settings(self) -> ChunkSettings:
        """The settings, typed."""
        assert isinstance(self.settings, ChunkSettings)
        return self.settings

    def open(self) -> None:
        """Import the chunking engine (and load the sentence model for similarity chunking)."""
        from ingestflow.offline import set_offline_env
        from ingestflow.stages.embed import prepare_local, torch_threads

        set_offline_env()
        import unstructured.chunking.basic  # noqa: F401  (the import is the slow part)

        if self.subtype == "chunk_by_similarity":
            prepare_local(torch_threads(self.context.options))

    def process(self, doc: Document) -> Document:
        """Replace the document's elements by its chunks."""
        from unstructured.staging.base import elements_from_dicts

        elements: list[LibElement] = []
        dropped: list[str] = []
        for item in doc.elements:
            # -- one at a time: elements_from_dicts drops what it cannot rebuild, without a word
            rebuilt = elements_from_dicts([item])
            elements.extend(rebuilt)
            if not rebuilt:
                dropped.append(str(item.get("type")))
        if dropped:
            doc.warnings.append(
                f"{self.name}: {len(dropped)} element(s) of a type the chunker cannot rebuild "
                f"were dropped (types: {sorted(set(dropped))})"
            )
        carry = chunk_carry.enriched(doc.elements)  # entities and enriched_by ride along
        try:
            chunks = self.chunk(elements, origins=carry)
        except DocumentError:
            raise
        except Exception as exc:
            raise StageError(self.name, doc.filename, f"chunking failed: {exc}") from exc
        source_text = "\n\n".join(e.text for e in elements if e.text and e.text.strip())
        doc.elements = assign_ids(
            chunk_carry.chunk_dicts(chunks, carry, bool(self.chunk_settings.include_orig_elements)),
            identity=doc.record_id or doc.id or doc.filename,
            unique=self.context.unique_element_ids,
        )
        if self.chunk_settings.contextual_chunking_strategy:
            self._add_context(doc, source_text)
        return doc

    def _add_context(self, doc: Document, source_text: str) -> None:
        """Prepend to each chunk a short context, written by the model, about the chunk's place
        in its document; the context is kept in `metadata.chunk_context`."""
        from ingestflow.providers.client import ModelClient, first_error, map_bounded
        from ingestflow.providers.config import DEFAULT_MODELS
        from ingestflow.providers.prompts import CONTEXT_PROMPT

        if self._endpoint is None:
            self.precheck()
        endpoint = self._endpoint
        assert endpoint is not None
        if self._client is None:
            self._client = ModelClient(endpoint, DEFAULT_MODELS.get(endpoint.name))
        client = self._client
        document = source_text[:CONTEXT_DOCUMENT_CHARS]

        def context(chunk: dict[str, Any]) -> str:
            prompt = CONTEXT_PROMPT.format(document=document, chunk=chunk["text"])
            return " ".join(client.chat(prompt, max_tokens=200).split())

        results = map_bounded(context, doc.elements, endpoint.concurrency)
        error = first_error(results)
        if error is not None:
            raise StageError(self.name, doc.filename, f"contextual chunking: {error}")
        for chunk, result in zip(doc.elements, results, strict=True):
            assert isinstance(result, str)
            chunk["metadata"]["chunk_context"] = result
            chunk["text"] = f"{result}\n\n{chunk['text']}"

    def chunk(self, elements: list[LibElement], origins: bool = False) -> list[LibElement]:
        """The chunks of `elements` (library Element objects) for this node's subtype;
        `origins`: each chunk's `orig_elements` set whatever the settings say."""
        from unstructured.chunking.basic import chunk_elements
        from unstructured.chunking.title import chunk_by_title

        kwargs = common_kwargs(self.chunk_settings)
        kwargs["include_orig_elements"] = kwargs["include_orig_elements"] or origins
        if self.subtype == "chunk_by_title":
            st = self.chunk_settings
            assert isinstance(st, ChunkByTitleSettings)
            return chunk_by_title(
                elements,
                multipage_sections=st.multipage_sections,
                combine_text_under_n_chars=st.combine_text_under_n_chars,
                **kwargs,
            )
        if self.subtype == "chunk_by_page":
            runs = page_runs(elements)
        elif self.subtype == "chunk_by_similarity":
            runs = self._similarity_runs(elements)
        elif self.subtype == "chunk_by_character":
            runs = [elements]
        else:  # a chunker registered on this class without a `chunk` of its own
            raise NotImplementedError(
                f"{type(self).__name__} has no chunking for subtype {self.subtype!r}: register "
                "the subtype with a ChunkStage subclass that overrides `chunk`"
            )
        return [chunk for run in runs for chunk in chunk_elements(run, **kwargs)]

    def _similarity_runs(self, elements: list[LibElement]) -> list[list[LibElement]]:
        from ingestflow.stages.embed import encode

        st = self.chunk_settings
        assert isinstance(st, ChunkBySimilaritySettings)
        threshold = (
            DEFAULT_SIMILARITY_THRESHOLD
            if st.similarity_threshold is None
            else st.similarity_threshold
        )
        batch = self.context.options.embed_batch_size
        texts = [e.text for e in elements if e.text and e.text.strip()]
        vectors = iter(encode(texts, batch) if texts else [])

        def vector_of(element: LibElement) -> Any:
            return next(vectors) if element.text and element.text.strip() else None

        return similarity_runs(elements, vector_of, threshold)


def common_kwargs(st: ChunkSettings) -> dict[str, Any]:
    """Library keyword arguments shared by every strategy (None leaves the library's default)."""
    return {
        "include_orig_elements": st.include_orig_elements,
        "max_characters": st.max_characters,
        "new_after_n_chars": st.new_after_n_chars,
        "overlap": st.overlap,
        "overlap_all": st.overlap_all,
    }


def page_runs(elements: Iterable[LibElement]) -> list[list[LibElement]]:
    """Split elements into runs of one page each; a missing page number continues the page."""
    runs: list[list[LibElement]] = []
    current: int | None = None
    for element in elements:
        page = element.metadata.page_number
        if runs and (page is None or current is None or page == current):
            runs[-1].append(element)
        else:
            runs.append([element])
        if page is not None:
            current = page
    return runs


def similarity_runs(
    elements: Iterable[LibElement],
    vector_of: Callable[[LibElement], Any],
    threshold: float,
) -> list[list[LibElement]]:
    """Split elements where the cosine similarity of consecutive texts falls below `threshold`.

    `vector_of` is called once per element, in order, and returns a unit-norm vector, or None for
    an element without text (such an element joins the current run).
    """
    runs: list[list[LibElement]] = []
    previous: Any = None
    for element in elements:
        vector = vector_of(element)
        starts_run = not runs or (
            vector is not None and previous is not None and float(vector @ previous) < threshold
        )
        if starts_run:
            runs.append([element])
        else:
            runs[-1].append(element)
        if vector is not None:
            previous = vector
    return runs


def assign_ids(chunks: list[Element], identity: str, unique: bool) -> list[Element]:
    """Give chunk dicts their ids (see the module docstring) and TableChunks a matching table_id."""
    table_ids: dict[str, str] = {}
    for index, chunk in enumerate(chunks):
        chunk["element_id"] = new_id(unique, identity, index, chunk.get("text", ""))
        metadata = chunk.get("metadata") or {}
        if not unique and metadata.get("table_id"):
            table_ids.setdefault(metadata["table_id"], chunk["element_id"])
            metadata["table_id"] = table_ids[metadata["table_id"]]
    return chunks
