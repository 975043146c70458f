"""Enrichment results survive chunking: a chunk carries its elements' `entities` (items and
relationships, each once, in order) and `enriched_by`, whatever the chunker."""

from __future__ import annotations

from typing import Any

import pytest

from tests.stages.test_chunk import CATS, LONG, ROCKETS, SETTINGS, narrative, run, title

pytestmark = pytest.mark.slow  # loads unstructured


def enriched(
    element: dict[str, Any], items: list[Any], rels: tuple[Any, ...] | list[Any] = ()
) -> dict[str, Any]:
    element["metadata"]["entities"] = {"items": list(items), "relationships": list(rels)}
    element["metadata"]["enriched_by"] = {"Entities": "spacy en_core_web_sm (offline NER)"}
    return element


ADA = {"entity": "Ada Lovelace", "type": "PERSON"}
BABBAGE = {"entity": "Charles Babbage", "type": "PERSON"}
WORKED = {"from": "Ada Lovelace", "relationship": "works_with", "to": "Charles Babbage"}


@pytest.mark.parametrize("subtype", [s for s in SETTINGS if s != "chunk_by_similarity"])
def test_a_chunk_carries_the_union_of_its_elements_entities(subtype: str) -> None:
    elements = [
        enriched(title("People"), [ADA]),
        enriched(narrative(CATS[0]), [BABBAGE, ADA], [WORKED]),
        enriched(narrative(CATS[1]), [ADA], [WORKED]),
        narrative(CATS[2]),
    ]
    (chunk,) = run(subtype, elements, max_characters=2000)
    assert chunk["metadata"]["entities"] == {"items": [ADA, BABBAGE], "relationships": [WORKED]}
    assert chunk["metadata"]["enriched_by"] == {"Entities": "spacy en_core_web_sm (offline NER)"}
    assert "orig_elements" not in chunk["metadata"]  # asked for by the chunker, not written


def test_each_chunk_carries_only_its_own_elements_entities() -> None:
    elements = [
        enriched(title("Cats"), [ADA]),
        narrative(" ".join(CATS)),
        enriched(title("Rockets"), [BABBAGE]),
        narrative(" ".join(ROCKETS)),
    ]
    chunks = run("chunk_by_title", elements, max_characters=1000, combine_text_under_n_chars=0)
    assert [c["metadata"]["entities"]["items"] for c in chunks] == [[ADA], [BABBAGE]]


def test_a_split_element_gives_its_entities_to_every_piece() -> None:
    chunks = run("chunk_by_character", [enriched(narrative(LONG), [ADA])], max_characters=300)
    assert len(chunks) > 1
    assert all(c["metadata"]["entities"]["items"] == [ADA] for c in chunks)


def test_include_orig_elements_still_writes_them_with_entities() -> None:
    (chunk,) = run(
        "chunk_by_character",
        [enriched(narrative(CATS[0]), [ADA])],
        include_orig_elements=True,
    )
    assert isinstance(chunk["metadata"]["orig_elements"], str)
    assert chunk["metadata"]["entities"]["items"] == [ADA]


def test_chunks_of_unenriched_elements_have_no_entities_field() -> None:
    (chunk,) = run("chunk_by_character", [narrative(CATS[0])])
    assert "entities" not in chunk["metadata"] and "enriched_by" not in chunk["metadata"]
