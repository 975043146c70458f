"""The stage contract: one class per node kind, cheap to build, heavy work in `open()`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ingestflow.elements import Document, Element
from ingestflow.providers.config import Endpoint
from ingestflow.spec.settings import Settings


@dataclass
class Part:
    """What `Stage.process_part` returns for one page range of a document."""

    pages: tuple[int, int]
    elements: list[Element] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


#: Texts the local embedding model encodes at once unless the run says otherwise.
EMBED_BATCH_SIZE = 32


@dataclass(frozen=True)
class RuntimeOptions:
    """How this run's workers work, set by the runner (never by the workflow): read by attribute.

    `doc_timeout`: seconds a document may spend in one node (None: no limit). `torch_threads`:
    torch's threads in a worker (None: the CPUs shared among `workers`). `embed_batch_size`:
    texts the local embedding model encodes at once."""

    doc_timeout: float | None = None
    torch_threads: int | None = None
    embed_batch_size: int = EMBED_BATCH_SIZE
    workers: int = 1

    def with_threads(self, threads: int) -> RuntimeOptions:
        """These options with torch's threads a worker: those already set, else `threads`."""
        return self if self.torch_threads is not None else replace(self, torch_threads=threads)


@dataclass(frozen=True)
class RunContext:
    """What every stage of a run may need besides its own settings: run-wide values only.

    `unique_element_ids` is the workflow's rule for ids (the partitioner's setting); chunk ids
    follow it (random UUIDs when true, deterministic hashes when false). `endpoints` maps a
    provider or embedder name to the model server the user configured (`providers.config`;
    remote features need one offline). What one node hands another is not here: it is each
    planned node's `NodeInputs`.
    `options`: how the workers work (`RuntimeOptions`, the runner's).
    """

    unique_element_ids: bool = True
    workspace: Path | None = None
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    options: RuntimeOptions = field(default_factory=RuntimeOptions)
    #: The provider contextual chunking uses.
    context_provider: str = "provider_a"


@dataclass(frozen=True)
class NodeInputs:
    """What flows into one node from the others, as the plan works it out (`runner.plan`) from
    what each kind declares."""

    #: A partitioner: the element types whose image crops nodes after it need (it crops them
    #: whatever its own settings list).
    crops_for_later: tuple[str, ...] = ()
    #: An enrichment: the element types the partitioner upstream keeps image crops of, and the
    #: languages it reads.
    image_types: tuple[str, ...] = ()
    languages: tuple[str, ...] = ("eng",)
    #: An enrichment or a partitioner: the workflow's enrichment tasks (generative OCR leaves the
    #: elements that another task describes to it; a partitioner says when no task will give its
    #: formulas LaTeX).
    tasks: tuple[str, ...] = ()
    #: The element types whose crops leave the documents after this node: made for enrichments
    #: only, no later node needs them, and the user did not list them.
    drop_crops: tuple[str, ...] = ()


#: `doc.stats` key under which a node that acts on some elements only (an enrichment) counts
#: them, node name -> elements acted on (`runner.enrichment` sums them over a job).
ACTED_ON = "enrichment_acted_on"


class Stage:
    """Base of every stage: `open()` loads models and clients, `process()` handles one document.

    The constructor must stay cheap (no heavy import, no model load): a plan builds every stage
    before the run, and `ingestflow validate` never opens one.
    """

    #: Stages that benefit from batching across documents (the embedder) set this True; the runner
    #: then calls `process_many` with several documents at once.
    batched = False
    #: Stages that spend seconds on every document (layout models, OCR) set this True: the runner
    #: then sends documents to the workers one at a time, so that the work stays balanced.
    slow_per_document = False
    #: Stages that act on some elements only (enrichments) set this True and count them under
    #: `ACTED_ON`; the job then names a node that acted on nothing (`what_it_reads` says what).
    tallies_acted_on = False

    def __init__(
        self,
        name: str,
        subtype: str,
        settings: Settings,
        context: RunContext,
        inputs: NodeInputs | None = None,
    ) -> None:
        self.name = name
        self.subtype = subtype
        self.settings = settings
        self.context = context
        self.inputs = inputs or NodeInputs()

    def precheck(self) -> None:
        """Fail fast (EnvironmentProblem / ConnectorError) on what the run would lack."""

    def open(self) -> None:
        """Load models, libraries and clients; called once per worker process."""

    def process(self, doc: Document) -> Document:
        """Transform one document's elements; raise DocumentError for a per-document failure."""
        raise NotImplementedError

    def process_many(self, docs: list[Document]) -> list[Document]:
        """Process several documents; batched stages override this."""
        return [self.process(doc) for doc in docs]

    # --- one long document over several workers (partition stages) -------------------------------
    def page_ranges(self, doc: Document, workers: int) -> list[tuple[int, int]]:
        """Page ranges (first, last; 1-based) to process in parallel for a long document, or
        `[]` to process it whole. Called in the runner's main process: must stay cheap."""
        return []

    def process_part(self, doc: Document, pages: tuple[int, int]) -> Part:
        """The elements of one page range of `doc` (see `page_ranges`)."""
        raise NotImplementedError

    def range_unit(self, doc: Document) -> str:
        """What `page_ranges` counts for `doc` ("pages", or "lines" of a text), for messages."""
        return "pages"

    def join_parts(self, doc: Document, parts: list[Part]) -> Document:
        """`doc` with the elements of all its parts, as one `process(doc)` call would give."""
        raise NotImplementedError

    def what_it_reads(self) -> str:
        """What this node acts on, in words (for a job in which it found nothing to act on)."""
        return "element"

    def what_it_does(self) -> str:
        """What this node does, in a few words (its subtype unless it says better)."""
        return self.subtype

    def close(self) -> None:
        """Release what `open()` took."""
