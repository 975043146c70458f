"""Offline backends (protocol `local`): model-free methods that do the task's real work.

- NER with the spaCy model the partitioner already loads (`en_core_web_sm`, from PyPI): its
  entity labels mapped to SPEC.md's types; it finds no relationships.
- Generative OCR with tesseract on the element's image.

Each result says what produced it (`metadata.enriched_by`): these are not a language model's
answers and are never presented as one.
"""

from __future__ import annotations

import base64
import io
import threading
from typing import Any

#: spaCy's labels -> SPEC.md's entity types (labels without a counterpart are left out).
SPACY_TO_SPEC = {
    "PERSON": "PERSON",
    "ORG": "ORGANIZATION",
    "GPE": "LOCATION",
    "LOC": "LOCATION",
    "DATE": "DATE",
    "TIME": "TIME",
    "EVENT": "EVENT",
    "MONEY": "MONEY",
    "PERCENT": "PERCENT",
    "FAC": "FACILITY",
    "PRODUCT": "PRODUCT",
    "WORK_OF_ART": "DOCUMENT",
    "LAW": "DOCUMENT",
}
NER_BACKEND = "local: spaCy en_core_web_sm (statistical NER, no language model)"
OCR_BACKEND = "local: tesseract OCR (no language model)"

_nlp: Any = None
_nlp_lock = threading.Lock()


def _spacy() -> Any:
    global _nlp
    with _nlp_lock:
        if _nlp is None:
            import spacy

            from ingestflow.offline import SPACY_MODEL, set_offline_env

            set_offline_env()
            _nlp = spacy.load(SPACY_MODEL, disable=["parser", "lemmatizer"])
        return _nlp


def load_ner() -> None:
    """Load the spaCy model now (a worker's `open()`)."""
    _spacy()


def ner(text: str) -> dict[str, list[dict[str, str]]]:
    """Entities of `text` with SPEC.md's types; no relationships (spaCy does not find them)."""
    seen: set[tuple[str, str]] = set()
    items = []
    for ent in _spacy()(text).ents:
        kind = SPACY_TO_SPEC.get(ent.label_)
        name = " ".join(ent.text.split())
        if kind and name and (name, kind) not in seen:
            seen.add((name, kind))
            items.append({"entity": name, "type": kind})
    return {"items": items, "relationships": []}


def ocr(image_base64: str, languages: str = "eng") -> str:
    """The text tesseract reads in a Base64 image (`languages` in tesseract's `eng+kor` form)."""
    import unstructured_pytesseract
    from PIL import Image

    image = Image.open(io.BytesIO(base64.b64decode(image_base64)))
    return str(unstructured_pytesseract.image_to_string(image, lang=languages)).strip()
