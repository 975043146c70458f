"""A plain text's narrative paragraphs found from a verb among their first words
(`stages/partition/text_narrative.py`): the elements are those of the library's own check,
paragraph for paragraph, while most paragraphs never go through spaCy's whole pipeline."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from ingestflow.stages.partition import nlp_batch, text_narrative
from tests.stages.test_nlp_batch import WORDS, partitioned, pipeline_runs  # noqa: F401

#: Paragraphs the check must get right: a verb first, late (past the first round), in capitals
#: only, or none; contractions (the tokenizer's own norms), dialogue, headings, mostly
#: capitalised words, figures, non-letters, bullets and one-word lines.
SHAPES = [
    "Chapter {n}",
    "BOOK {n}: THE HARBOUR",
    "THE KEEPER LIT THE LAMP AT DUSK.",
    "The Harbour Committee Of The Northern Lights Report",
    "{n} 4,500 17.25 88",
    "-- ** == {n} == ** --",
    "Well?",
    "\"Don't, I can't,\" she'd said, \"it isn't what we'd planned.\"",
    "In the spring of the year {n}, with all the members of the old harbour board, the budget "
    "of the northern keepers of lights and the ships of the long eastern coast, nothing new.",
    "In the spring of the year {n}, with all the members of the old harbour board and all the "
    "long summer evenings on the water, the keepers of the northern lights agreed at last.",
    "The keeper lit the lamp at dusk and watched the ships come in.",
    "Lisbon, Porto and the Harbour",
    "Yes.",
    "• the first of the harbour's lamps",
    "1. Lit the lamp at dusk",
    "keeper@lights.example",
]


def book(paragraphs: int = 320, seed: int = 3) -> str:
    rng = random.Random(seed)
    out = []
    for n in range(paragraphs):
        if n % 3:
            words = [rng.choice(WORDS) for _ in range(rng.randint(1, 40))]
            out.append(" ".join(words).capitalize() + rng.choice([".", "", "!", ","]))
        else:
            out.append(rng.choice(SHAPES).format(n=n))
    return "\n\n".join(out)


@pytest.mark.slow
def test_the_library_s_elements_with_most_paragraphs_never_parsed(
    tmp_path: Path,
    pipeline_runs: list[str],  # noqa: F811  # the fixture, imported
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from unstructured.partition.text import is_possible_narrative_text

    path = tmp_path / "book.txt"
    path.write_text(book())
    monkeypatch.setattr(nlp_batch, "MIN_TEXTS", 10**9)  # spaCy's runs one by one, counted
    with monkeypatch.context() as patched:  # the library's own check for every paragraph
        patched.setattr(text_narrative, "ROUNDS", ())
        alone = partitioned(path)
    parsed_alone = len(set(pipeline_runs))
    pipeline_runs.clear()
    assert partitioned(path) == alone
    types = {e["type"] for e in json.loads(alone)}
    assert {"NarrativeText", "Title", "UncategorizedText", "ListItem"} <= types
    assert parsed_alone > 200
    assert len(set(pipeline_runs)) < parsed_alone // 3  # the others: a verb among first words
    assert is_possible_narrative_text("The keeper lit the lamp.")  # outside: the library's


def test_every_paragraph_found_narrative_is_narrative_to_the_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from unstructured.partition.text_type import is_possible_narrative_text

    from ingestflow.stages.partition import configure_unstructured

    configure_unstructured()
    texts = book().split("\n\n")
    long_verb = SHAPES[9].format(n=7)  # its verb past the first round's words
    monkeypatch.setattr(text_narrative, "ROUNDS", (4, 8, 64))  # every round of the search
    found = text_narrative.narrative([*texts, long_verb])
    assert long_verb in found
    assert all(is_possible_narrative_text(text) for text in found)
    missed = [t for t in set(texts) - found if is_possible_narrative_text(t)]
    assert len(missed) < len(found) // 10  # a few: more than one sentence, no verb
    monkeypatch.setenv("UNSTRUCTURED_NARRATIVE_TEXT_CAP_THRESHOLD", "0.7")
    assert text_narrative.narrative(texts) == set()  # settings of the library's: its check


def test_a_model_of_another_shape_gets_no_shortcut() -> None:
    from unstructured.nlp import tokenize

    from ingestflow.stages.partition import configure_unstructured

    configure_unstructured()
    nlp = tokenize._get_nlp()
    assert text_narrative.receptive_field(nlp) == 4

    class Other:
        pipe_names = nlp.pipe_names
        config: dict[str, Any] = json.loads(json.dumps(nlp.config))

    Other.config["components"]["tok2vec"]["model"]["embed"]["include_static_vectors"] = True
    assert text_narrative.receptive_field(Other()) is None
    Other.pipe_names = ["tok2vec", "parser", "tagger"]
    assert text_narrative.receptive_field(Other()) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "Plain words here.",
        "12 345 67",
        "a1 b2 c3",
        "Ça va\u00a0très bien",
        "\t\n\u2003x",
        "—— !!",
        "Ünïcödé wörds, 42%",
        "x" * 3 + " 1" * 3,
    ],
)
def test_the_letter_share_is_the_librarys(text: str) -> None:
    from unstructured.partition.text_type import under_non_alpha_ratio

    for threshold in (0.3, 0.5, 0.75):
        assert text_narrative._under_non_alpha_ratio(text, threshold) == under_non_alpha_ratio(
            text, threshold
        )
