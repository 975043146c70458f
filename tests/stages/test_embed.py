"""The embed stage with the real local all-MiniLM-L6-v2, and what it refuses before a run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from ingestflow.elements import Document
from ingestflow.errors import EnvironmentProblem, WorkflowInvalid
from ingestflow.spec.catalog import catalog
from ingestflow.spec.settings import EmbedSettings
from ingestflow.stages.base import RunContext, RuntimeOptions
from ingestflow.stages.embed import EmbedStage, local_model, torch_threads

pytestmark = pytest.mark.slow  # loads unstructured and the sentence model

LOCAL = "sentence-transformers/all-minilm-l6-v2"
CAT_1 = "Cats are small domesticated carnivorous mammals kept as pets."
CAT_2 = "A kitten purrs on the sofa and chases a ball of yarn."
ROCKET = "The rocket engine burned liquid oxygen and kerosene during launch."


def embedder(
    subtype: str = "ibm",
    model: str = LOCAL,
    endpoints: dict[str, Any] | None = None,
    **options: Any,
) -> EmbedStage:
    ctx = RunContext(endpoints=endpoints or {}, options=RuntimeOptions(**options))
    return EmbedStage("embedder", subtype, EmbedSettings(model_name=model), ctx)


def doc(*texts: str, name: str = "a.txt") -> Document:
    elements = [
        {"type": "CompositeElement", "element_id": f"{name}-{i}", "text": t, "metadata": {}}
        for i, t in enumerate(texts)
    ]
    return Document(id=name, record_id=name, filename=name, elements=elements)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def stage() -> EmbedStage:
    """The local embedder, opened once for the module (the model loads once per process)."""
    st = embedder()
    st.precheck()
    st.open()
    return st


def test_vectors_are_384_unit_norm_floats(stage: EmbedStage) -> None:
    out = stage.process(doc(CAT_1, ROCKET))
    assert stage.dimension == 384
    for element in out.elements:
        vector = element["embeddings"]
        assert len(vector) == 384 and all(type(x) is float for x in vector)
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-5)


def test_similar_sentences_are_closer_than_unrelated_ones(stage: EmbedStage) -> None:
    out = stage.process(doc(CAT_1, CAT_2, ROCKET))
    cat_1, cat_2, rocket = (e["embeddings"] for e in out.elements)
    assert cosine(cat_1, cat_2) > cosine(cat_1, rocket) + 0.2


def test_batched_across_documents_equals_one_at_a_time(stage: EmbedStage) -> None:
    texts = [CAT_1, CAT_2, ROCKET, "Bread is baked from flour.", "Yeast makes dough rise."]
    small_batches = embedder(embed_batch_size=2)
    small_batches.open()
    together = small_batches.process_many(
        [doc(*texts[:2], name="a"), doc(*texts[2:3], name="b"), doc(*texts[3:], name="c")]
    )
    alone = [stage.process(doc(t, name="x")).elements[0]["embeddings"] for t in texts]
    batched = [e["embeddings"] for d in together for e in d.elements]
    assert [d.filename for d in together] == ["a", "b", "c"]
    assert all(cosine(a, b) > 0.9999 for a, b in zip(alone, batched, strict=True))


def test_a_repeated_text_is_embedded_once_and_every_copy_gets_its_vector(
    stage: EmbedStage, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestflow.stages import embed

    seen: list[list[str]] = []
    real = embed.encode

    def counting(texts: list[str], batch_size: int = 32) -> Any:
        seen.append(list(texts))
        return real(texts, batch_size)

    monkeypatch.setattr(embed, "encode", counting)
    a, b = stage.process_many([doc(CAT_1, ROCKET, CAT_1), doc(ROCKET, CAT_2, name="b.txt")])
    assert seen == [[CAT_1, ROCKET, CAT_2]]
    vectors = [e["embeddings"] for d in (a, b) for e in d.elements]
    assert vectors[0] == vectors[2] and vectors[1] == vectors[3]
    alone = stage.process(doc(CAT_2, name="x")).elements[0]["embeddings"]
    assert cosine(vectors[4], alone) > 0.9999


def test_elements_without_text_get_no_vector_and_a_warning(stage: EmbedStage) -> None:
    source = doc(CAT_1, "", "   ")
    original = [dict(e) for e in source.elements]
    out = stage.process(source)
    assert [("embeddings" in e) for e in out.elements] == [True, False, False]
    assert out.warnings == ["embedder: 2 element(s) with empty text were not embedded"]
    assert [{k: v for k, v in e.items() if k != "embeddings"} for e in out.elements] == original


def test_the_input_element_dicts_are_not_mutated(stage: EmbedStage) -> None:
    source = doc(CAT_1)
    before = source.elements[0]
    stage.process(source)
    assert "embeddings" not in before


def test_chunker_and_embedder_share_one_model(stage: EmbedStage) -> None:
    assert local_model() is local_model()


def test_dimension_comes_from_the_catalog() -> None:
    assert embedder("voyageai", "voyage-3-lite").dimension == 512
    assert embedder("azure_openai", "text-embedding-3-large").dimension == 3072


def test_remote_model_without_endpoint_fails_at_precheck() -> None:
    st = embedder("voyageai", "voyage-3")
    with pytest.raises(
        EnvironmentProblem,
        match=r"model `voyage-3` of provider `voyageai` runs on a model server.*"
        r"set INGESTFLOW_VOYAGEAI_BASE_URL",
    ):
        st.precheck()


def remote(server: Any, subtype: str, model: str, **extra: str) -> EmbedStage:
    from ingestflow.providers.config import endpoints_from_env

    name = subtype.upper()
    environ = {f"INGESTFLOW_{name}_BASE_URL": server.openai_url, **extra}
    ctx = RunContext(
        endpoints=endpoints_from_env(environ), options=RuntimeOptions(embed_batch_size=2)
    )
    st = EmbedStage("embedder", subtype, EmbedSettings(model_name=model), ctx)
    st.open()
    return st


def test_remote_embeddings_are_batched_and_land_on_every_element() -> None:
    from tests.fakes.models import FakeModelServer, vector

    with FakeModelServer(dimension=512) as server:
        st = remote(server, "voyageai", "voyage-3-lite")
        a, b = st.process_many([doc(CAT_1, CAT_2, ROCKET), doc(" ", CAT_1, name="b.txt")])
    # CAT_1 comes twice and is sent once; both of its elements get its vector
    assert [r.json["input"] for r in server.requests] == [[CAT_1, CAT_2], [ROCKET]]
    assert {r.model for r in server.requests} == {"voyage-3-lite"}
    assert [e["embeddings"] for e in a.elements] == [vector(t, 512) for t in (CAT_1, CAT_2, ROCKET)]
    assert "embeddings" not in b.elements[0] and b.elements[1]["embeddings"] == vector(CAT_1, 512)


def test_a_wrong_dimension_fails_at_the_first_batch_and_then_at_once() -> None:
    from ingestflow.errors import StageError
    from tests.fakes.models import FakeModelServer

    with FakeModelServer(dimension=384) as server:
        st = remote(server, "azure_openai", "text-embedding-3-small")
        with pytest.raises(
            StageError,
            match=r"returned 384-dimension vectors for "
            r"`text-embedding-3-small`, which has 1536",
        ):
            st.process_many([doc(CAT_1, CAT_2, ROCKET)])
        assert len(server.requests) == 1
        with pytest.raises(StageError, match="which has 1536"):
            st.process_many([doc(CAT_1, name="b.txt")])
        assert len(server.requests) == 1  # no more requests once the mismatch is known


def test_unknown_model_is_invalid() -> None:
    st = embedder("ibm", "no-such-model")
    with pytest.raises(WorkflowInvalid, match="`no-such-model` is not a model of embedder `ibm`"):
        st.precheck()
    with pytest.raises(WorkflowInvalid, match="not a model of embedder"):
        _ = st.dimension


def test_torch_threads_follow_the_options() -> None:
    assert torch_threads(RuntimeOptions(torch_threads=3)) == 3
    assert torch_threads(RuntimeOptions(workers=10_000)) == 1
    assert torch_threads(RuntimeOptions()) >= 1


def test_only_minilm_runs_locally(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    facts = {"dimension": 768, "max_chunk": 900, "local": True}
    extra = {"embedders": {"ibm": {"my-model": facts}}}
    (tmp_path / "catalog.json").write_text(json.dumps(extra), encoding="utf-8")
    monkeypatch.setenv("INGESTFLOW_CATALOG", str(tmp_path / "catalog.json"))
    catalog.cache_clear()
    try:
        st = embedder("ibm", "my-model")
        assert st.dimension == 768
        with pytest.raises(EnvironmentProblem, match="only model that ships offline"):
            st.precheck()
    finally:
        monkeypatch.delenv("INGESTFLOW_CATALOG")
        catalog.cache_clear()


def corpus_texts(limit: int = 400) -> list[str]:
    """Element texts of the fixture documents and, when present, the corpus's published outputs."""
    from tests.conftest import CORPUS, FIXTURES

    texts = [
        line
        for p in sorted((FIXTURES / "docs").iterdir())
        if p.suffix in (".md", ".txt", ".csv", ".html", ".xml", ".eml")
        for line in p.read_text().splitlines()
        if line.strip()
    ]
    for path in sorted((CORPUS / "expected").rglob("*.json"))[:60] if CORPUS.exists() else []:
        try:
            items = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        texts += [
            str(e["text"]) for e in items if isinstance(e, dict) and str(e.get("text", "")).strip()
        ]
    return texts[:limit]


def test_onnx_vectors_match_the_torch_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from ingestflow.stages import minilm_onnx

    texts = corpus_texts()
    assert len(texts) >= 20  # the fixture documents alone give more than that
    onnx = minilm_onnx.load().encode(texts, 16)
    reference = local_model().encode(
        list(texts),
        batch_size=16,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    cosine = (onnx * reference).sum(axis=1)
    assert cosine.min() >= 0.999, float(cosine.min())
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-4)
    # order is kept though batches are sorted by length
    single = minilm_onnx.load().encode([texts[5]], 1)[0]
    assert float(single @ onnx[5]) > 0.9999


def test_the_onnx_export_is_cached_and_atomic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestflow.stages import minilm_onnx

    monkeypatch.setenv("INGESTFLOW_CACHE", str(tmp_path))
    path = minilm_onnx.export()
    assert path.parent == tmp_path and path.stat().st_size > 50_000_000
    stamp = path.stat().st_mtime_ns
    assert minilm_onnx.export() == path and path.stat().st_mtime_ns == stamp  # kept, not redone
    assert not list(tmp_path.glob("*.part"))


def test_onnx_batches_keep_to_the_token_budget_and_cover_every_text() -> None:
    from ingestflow.stages.minilm_onnx import TOKEN_BUDGET, batches

    lengths = [5, 256, 12, 12, 40, 3, 200, 90, 7, 128, 64, 64, 64, 64, 64, 64, 64, 64, 64]
    found = batches(lengths, 4)
    assert sorted(i for b in found for i in b) == list(range(len(lengths)))
    for batch in found:
        width = max(lengths[i] for i in batch)
        assert len(batch) <= 4
        assert len(batch) == 1 or len(batch) * width <= TOKEN_BUDGET
        assert [lengths[i] for i in batch] == sorted(lengths[i] for i in batch)
    assert [256] in [[lengths[i] for i in b] for b in found]  # a long text goes alone
    assert max(len(b) for b in found) == 4  # short texts still share a call
    assert batches([], 8) == []
