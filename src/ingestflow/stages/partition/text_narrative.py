"""A plain text's narrative paragraphs recognised from a verb among their first words, without
spaCy's whole pipeline over every paragraph.

The library's text partitioner types each paragraph (`element_from_text`), and most of its time
goes to `is_possible_narrative_text`: spaCy's tagger and parser over the whole paragraph (War and
Peace: three quarters of the time). With its default settings that check answers True when the
text is not empty, not a number, not upper case, its words are at most half capitalised (the
alphabetic tokens), at least half its other characters are letters, and it holds a verb (a token
tagged VB*); the sentence count it also reads only matters when one of those fails. So a
paragraph that passes the cheap checks is narrative as soon as one of its tokens is tagged a verb.

A token's tag depends on the tokens at most `receptive_field` (4) either side of it and no
further: the tagger reads the tok2vec layer, four convolutions of window one over embeddings of
each token alone (the model's config is checked for that shape; another model gets no
shortcut). The tags of a paragraph's first K tokens are therefore those of its first K + 4
tokens tagged alone: a verb there settles it (most prose has one in its first eight words, so a
third of the tokens is tagged, and nothing is parsed). Every other paragraph goes through the
library's own check, as before (`nlp_batch.prefetched`): the element types do not change, only
the time (tested on whole texts against the library alone).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ingestflow.patches import unstructured as unstructured_patches
from ingestflow.stages.partition import nlp_batch

#: First tokens searched for a verb, round by round, in the paragraphs still without one.
ROUNDS = (8, 32)
#: Paragraphs tokenized and tagged at a time (memory stays flat however long the text is).
CHUNK = 1024
#: Settings that change the library's check: when one is set, every paragraph goes to it.
_ENVIRONMENT = (
    "UNSTRUCTURED_LANGUAGE_CHECKS",
    "UNSTRUCTURED_NARRATIVE_TEXT_CAP_THRESHOLD",
    "UNSTRUCTURED_NARRATIVE_TEXT_NON_ALPHA_THRESHOLD",
)
#: The library's defaults for the capitalised-word and non-letter shares.
_CAP_THRESHOLD = 0.5
_NON_ALPHA_THRESHOLD = 0.5


@contextmanager
def prefetched(texts: list[str]) -> Iterator[None]:
    """While open, the library's narrative check of `texts` answers at once for those found
    narrative by a verb among their first words; the others are checked by the library with
    their spaCy runs in batches (`nlp_batch.prefetched`)."""
    found = narrative(texts)
    _install()
    saved = getattr(_here, "narrative", None)
    _here.narrative = found
    try:
        with nlp_batch.prefetched([t for t in texts if t not in found]):
            yield
    finally:
        _here.narrative = saved


def narrative(texts: list[str]) -> set[str]:
    """The texts that the library's `is_possible_narrative_text` (default settings) calls
    narrative because they pass its cheap checks and a verb is tagged among their first words;
    the others may be narrative too (the library decides)."""
    from unstructured.nlp import tokenize

    if any(name in os.environ for name in _ENVIRONMENT):
        return set()
    nlp = tokenize._get_nlp()
    field = receptive_field(nlp)
    if field is None:
        return set()
    unique = [t for t in dict.fromkeys(texts) if t and len(t) <= nlp_batch.MAX_CHARS]
    found: set[str] = set()
    for start in range(0, len(unique), CHUNK):
        chunk = unique[start : start + CHUNK]
        tokenized = zip(chunk, nlp.tokenizer.pipe(chunk), strict=True)
        pending = [(text, doc) for text, doc in tokenized if _cheap(text, doc)]
        for first in ROUNDS:
            pending = _verb_in_first(nlp, pending, first, field, found)
    return {text for text in found if not _under_non_alpha_ratio(text, _NON_ALPHA_THRESHOLD)}


def _under_non_alpha_ratio(text: str, threshold: float) -> bool:
    """The library's `under_non_alpha_ratio`, counted by str methods over the whole text at C
    speed instead of a Python loop a character (a quarter of what was left of a book's time):
    the share of letters among the characters that are not white space (`str.strip` removes
    exactly those `str.isspace` calls white space) is under `threshold`; no such character:
    False."""
    if not text:
        return False
    total = len(text) - sum(map(str.isspace, text))
    if not total:
        return False
    return sum(map(str.isalpha, text)) / total < threshold


def receptive_field(nlp: Any) -> int | None:
    """How many tokens either side of a token its tag depends on: window × depth of the tok2vec
    convolutions, when the tagger reads a tok2vec of per-token embeddings; None for a model of
    another shape (static vectors, another encoder or tagger)."""
    if nlp.pipe_names[:2] != ["tok2vec", "tagger"]:
        return None
    components = nlp.config["components"]
    model = components["tok2vec"]["model"]
    embed, encode = model.get("embed", {}), model.get("encode", {})
    tagger = components["tagger"]["model"]
    if (
        model.get("@architectures") != "spacy.Tok2Vec.v2"
        or embed.get("@architectures") != "spacy.MultiHashEmbed.v2"
        or embed.get("include_static_vectors")
        or encode.get("@architectures") != "spacy.MaxoutWindowEncoder.v2"
        or tagger.get("@architectures") != "spacy.Tagger.v2"
        or tagger.get("tok2vec", {}).get("@architectures") != "spacy.Tok2VecListener.v1"
    ):
        return None
    return int(encode["window_size"]) * int(encode["depth"])


def _cheap(text: str, doc: Any) -> bool:
    """The library's capitalisation checks, where they pass without a sentence count: not a
    number, not upper case, at most half the alphabetic tokens capitalised (spaCy's lexical
    flags are Python's `isalpha`, `istitle` and `isupper` of the token's text)."""
    from spacy.attrs import IS_ALPHA, IS_TITLE, IS_UPPER

    if not len(doc) or text.isnumeric() or text.isupper():
        return False
    flags = doc.to_array([IS_ALPHA, IS_TITLE, IS_UPPER]).astype(bool)
    words = int(flags[:, 0].sum())
    capitalised = int((flags[:, 0] & (flags[:, 1] | flags[:, 2])).sum())
    return words > 0 and capitalised / words <= _CAP_THRESHOLD


def _verb_in_first(
    nlp: Any, pending: list[tuple[str, Any]], first: int, field: int, found: set[str]
) -> list[tuple[str, Any]]:
    """Tag the first `first` + `field` tokens of each pending paragraph alone; add to `found`
    those with a verb among their first `first` tokens (among all, for a paragraph tagged
    whole); the paragraphs left to search further."""
    from unstructured.partition.text_type import POS_VERB_TAGS

    if not pending:
        return []
    verbs = frozenset(POS_VERB_TAGS)
    heads = [_head(nlp, doc, first + field) for _, doc in pending]
    left = []
    tagged = nlp.pipe(heads, batch_size=nlp_batch.BATCH, disable=["parser"])
    for (text, doc), head in zip(pending, tagged, strict=True):
        whole = len(doc) <= first + field
        if any(token.tag_ in verbs for token in (head if whole else head[:first])):
            found.add(text)
        elif not whole:
            left.append((text, doc))
    return left


def _head(nlp: Any, doc: Any, length: int) -> Any:
    """The first `length` tokens of `doc` as a Doc of their own (the whole `doc` when it is not
    longer): same texts, spaces and norms (the tokenizer's exceptions set a token's own norm,
    "n't" → "not"), so the tagger sees the same features."""
    from spacy.attrs import NORM
    from spacy.tokens import Doc

    if len(doc) <= length:
        return doc
    tokens = doc[:length]
    words = [token.text for token in tokens]
    head = Doc(nlp.vocab, words=words, spaces=[bool(token.whitespace_) for token in tokens])
    head.from_array([NORM], doc.to_array([NORM])[:length])
    return head


_here = threading.local()


def _install() -> None:
    """The library's narrative check replaced, once per process, by one that answers True for
    the texts the calling thread found narrative (in `prefetched`) and asks the library for
    any other."""
    unstructured_patches.installed("is_possible_narrative_text", _dispatch)


def _dispatch(check: Callable[..., bool]) -> Callable[..., bool]:
    def is_possible_narrative_text(text: str, *args: Any, **kwargs: Any) -> bool:
        found = getattr(_here, "narrative", None)
        if found is not None and not args and not kwargs and text in found:
            return True
        return check(text, *args, **kwargs)

    return is_possible_narrative_text
