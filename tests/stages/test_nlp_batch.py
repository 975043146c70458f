"""spaCy in batches (`stages/partition/nlp_batch.py`): the partitioner's output is the same with and
without it, on Word files, plain text and PDFs, and the library's one-by-one spaCy calls are what
it saves."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingestflow.elements import Document
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.base import RunContext
from ingestflow.stages.partition import UnstructuredPartitionStage, nlp_batch, text_narrative

WORDS = [
    "the",
    "harbour",
    "committee",
    "agreed",
    "that",
    "ship",
    "budget",
    "meeting",
    "was",
    "held",
    "in",
    "spring",
    "with",
    "all",
    "members",
    "present",
    "and",
    "THE",
    "REPORT",
    "said",
    "nothing",
    "new",
    "about",
    "Lisbon",
    "or",
    "the",
    "keepers",
    "of",
    "lights",
]


def sentences(rng: random.Random, count: int) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 14))).capitalize() + "."
        for _ in range(count)
    )


def paragraphs(n: int = 300) -> list[str]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        if i % 25 == 0:
            out.append(f"SECTION {i // 25 + 1}")
        elif i % 11 == 0:
            out.append("- " + sentences(rng, 1))
        else:
            out.append(sentences(rng, rng.randint(1, 4)))
    return out


def make_docx(path: Path) -> None:
    from docx import Document as Docx

    doc = Docx()
    for i, text in enumerate(paragraphs()):
        if i % 25 == 0:
            doc.add_heading(text, level=1)
        elif i % 40 == 3:
            table = doc.add_table(rows=1, cols=2)
            table.rows[0].cells[0].text, table.rows[0].cells[1].text = "a cell", text
        else:
            doc.add_paragraph(text)
    doc.save(str(path))


@pytest.fixture
def pipeline_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts the library runs through spaCy one at a time."""
    from unstructured.nlp import tokenize

    ran: list[str] = []
    original = tokenize._run_pipeline

    def counted(text: str) -> object:
        ran.append(text)
        return original(text)

    monkeypatch.setattr(tokenize, "_run_pipeline", counted)
    yield ran


def partitioned(path: Path) -> str:
    from unstructured.nlp import tokenize

    for cached in (tokenize._process_cached, tokenize._tokenize_for_cache, tokenize.pos_tag):
        cached.cache_clear()
    tokenize.word_tokenize.cache_clear()
    settings = UnstructuredPartitionSettings(strategy="fast", unique_element_ids=False)
    stage = UnstructuredPartitionStage("P", "unstructured_api", settings, RunContext())
    doc = stage.process(Document("d", "r", path.name, path=path))
    return json.dumps(doc.elements, sort_keys=True)


@pytest.mark.parametrize("kind", ["docx", "txt"])
@pytest.mark.slow
def test_the_same_elements_with_fewer_one_by_one_calls(
    tmp_path: Path, kind: str, pipeline_runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"doc.{kind}"
    if kind == "docx":
        make_docx(path)
    else:
        path.write_text("\n\n".join(paragraphs()))
    monkeypatch.setattr(nlp_batch, "MIN_TEXTS", 10**9)  # the library alone
    monkeypatch.setattr(text_narrative, "ROUNDS", ())  # every paragraph through its own check
    alone = partitioned(path)
    one_by_one = len(pipeline_runs)
    monkeypatch.setattr(nlp_batch, "MIN_TEXTS", 64)
    monkeypatch.setattr(nlp_batch, "WINDOW", 50)  # several windows
    pipeline_runs.clear()
    assert partitioned(path) == alone
    assert one_by_one > 100
    assert len(pipeline_runs) < one_by_one // 10  # foreseen texts came from the batches


def test_the_foreseen_texts_are_those_the_library_classifies(tmp_path: Path) -> None:
    path = tmp_path / "doc.txt"
    path.write_text("\n\n".join(paragraphs()))
    foreseen = nlp_batch.text_paragraphs(path, "utf-8")
    assert foreseen[:2] == paragraphs()[:2]
    assert len(foreseen) == len(paragraphs())
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Caf\xe9 au lait.\n\nOne more paragraph.".encode("latin-1"))
    assert nlp_batch.text_paragraphs(latin, "utf-8") == []  # does not decode: nothing foreseen
    (tmp_path / "bad.docx").write_bytes(b"not a zip")
    assert nlp_batch.docx_paragraphs(tmp_path / "bad.docx") == []


def test_a_pdf_gives_the_same_elements_with_fewer_one_by_one_calls(
    tmp_path: Path, pipeline_runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.stages.test_partition import make_pdf

    texts = paragraphs(120)
    pages = ["\n".join(texts[i : i + 6]) for i in range(0, len(texts), 6)]
    path = tmp_path / "doc.pdf"
    path.write_bytes(make_pdf(pages))
    with monkeypatch.context() as patched:  # the library alone
        patched.setattr(nlp_batch, "pdf_prefetched", contextlib.nullcontext)
        alone = partitioned(path)
    one_by_one = len(pipeline_runs)
    monkeypatch.setattr(nlp_batch, "PAGES_AHEAD", 3)  # several look-aheads, and a short last one
    pipeline_runs.clear()
    assert partitioned(path) == alone
    assert len(json.loads(alone)) >= 100 and one_by_one > 50
    assert len(pipeline_runs) < one_by_one // 10  # foreseen texts came from the batches


def make_html(path: Path, n: int = 1200) -> None:
    """An HTML page over the batching threshold: headings, paragraphs with inline markup, list
    items, a table, an address and an e-mail address."""
    from html import escape

    body = []
    for i, text in enumerate(paragraphs(n)):
        if i % 25 == 0:
            body.append(f"<h2>{escape(text)}</h2>")
        elif i % 11 == 0:
            body.append(f"<ul><li>{escape(text.removeprefix('- '))}</li></ul>")
        elif i % 97 == 5:
            body.append(f"<table><tr><td>a cell</td><td>{escape(text)}</td></tr></table>")
        elif i % 89 == 7:
            body.append("<p>Lisbon, OH 44432</p><p>keeper@lights.example</p>")
        else:
            first, _, rest = text.partition(" ")
            body.append(f"<p><b>{escape(first)}</b> {escape(rest)}</p>")
    path.write_text(f"<html><body>{''.join(body)}</body></html>")


@pytest.mark.slow
def test_an_html_file_gives_the_same_elements_with_fewer_one_by_one_calls(
    tmp_path: Path, pipeline_runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestflow.stages.partition import reader as partition

    path = tmp_path / "page.html"
    make_html(path)
    assert path.stat().st_size >= partition.HTML_PREFETCH_BYTES
    with monkeypatch.context() as patched:  # the library alone
        patched.setattr(partition, "HTML_PREFETCH_BYTES", 10**12)
        alone = partitioned(path)
    one_by_one = len(pipeline_runs)
    monkeypatch.setattr(nlp_batch, "WINDOW", 200)  # several windows
    pipeline_runs.clear()
    assert partitioned(path) == alone
    kinds = {e["type"] for e in json.loads(alone)}
    assert {"Title", "NarrativeText", "ListItem", "Table", "Address", "EmailAddress"} <= kinds
    assert one_by_one > 300
    assert len(pipeline_runs) < one_by_one // 5  # foreseen texts came from the batches
    # the listing pass leaves the library's classifier as it was for later calls
    assert partitioned(path) == alone


@pytest.mark.slow
def test_corpus_html_gives_the_same_elements_in_batches(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestflow.stages.partition import reader as partition

    path = next(corpus.rglob("example-10k.html"))
    with monkeypatch.context() as patched:
        patched.setattr(partition, "HTML_PREFETCH_BYTES", 10**12)
        alone = partitioned(path)
    assert partitioned(path) == alone


@pytest.mark.slow
def test_corpus_pdfs_give_the_same_elements_in_batches(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("multi-column.pdf", "layout-parser-paper-fast.pdf", "korean-text-with-tables.pdf"):
        path = next(corpus.rglob(name))
        with monkeypatch.context() as patched:
            patched.setattr(nlp_batch, "pdf_prefetched", contextlib.nullcontext)
            alone = partitioned(path)
        assert partitioned(path) == alone, name


@pytest.mark.slow
def test_threads_partitioning_at_once_get_what_each_gets_alone(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from tests.stages.test_partition import make_pdf

    texts = paragraphs(90)
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes(make_pdf(["\n".join(texts[i : i + 6]) for i in range(0, len(texts), 6)]))
    docx = tmp_path / "doc.docx"
    make_docx(docx)
    txt = tmp_path / "doc.txt"
    txt.write_text("\n\n".join(reversed(paragraphs())))
    paths = [pdf, docx, txt]
    alone = [partitioned(p) for p in paths]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(partitioned, paths * 2))
    assert together == alone * 2


def test_one_threads_batches_are_not_consulted_by_another() -> None:
    import threading

    from unstructured.nlp import tokenize

    asked: list[str] = []
    inside, done = threading.Event(), threading.Event()

    def lookup(text: str) -> None:
        asked.append(text)
        return None

    def holder() -> None:
        with nlp_batch._serving(lookup):
            inside.set()
            done.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert inside.wait(10)
    try:
        tokenize._process("A text from another thread.")
        assert asked == []
    finally:
        done.set()
        thread.join()
    with nlp_batch._serving(lookup):
        tokenize._process("A text from this thread.")
    assert asked == ["A text from this thread."]
