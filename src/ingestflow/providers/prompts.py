"""ingestflow's own prompts for the model-backed tasks, and the parsing of their answers."""

from __future__ import annotations

import json
import re
from typing import Any

ENTITY_TYPES = (
    "PERSON",
    "ORGANIZATION",
    "LOCATION",
    "DATE",
    "TIME",
    "EVENT",
    "MONEY",
    "PERCENT",
    "FACILITY",
    "PRODUCT",
    "ROLE",
    "DOCUMENT",
    "DATASET",
)
RELATIONSHIPS = (
    ("PERSON - ORGANIZATION", "works_for, affiliated_with, founded"),
    ("PERSON - LOCATION", "born_in, lives_in, traveled_to"),
    ("ORGANIZATION - LOCATION", "based_in, has_office_in"),
    ("any entity - DATE", "occurred_on, founded_on, died_on, published_in"),
    ("PERSON - PERSON", "married_to, parent_of, colleague_of"),
    ("PRODUCT - ORGANIZATION", "developed_by, owned_by"),
    ("EVENT - LOCATION", "held_in, occurred_in"),
    ("any entity - ROLE", "has_title, acts_as, has_role"),
    ("DATASET - PERSON", "mentions"),
    ("DATASET - DOCUMENT", "located_in"),
    ("PERSON - DATASET", "published"),
    ("DOCUMENT - DOCUMENT", "referenced_in, contains"),
    ("DOCUMENT - DATE", "dated"),
    ("PERSON - DOCUMENT", "published"),
)

NER_PROMPT = (
    "Extract the named entities and the relationships between them from the text below, and "
    "answer with structured JSON only.\n\n"
    "Entity types:\n"
    + "\n".join(ENTITY_TYPES)
    + "\n\nRelationship types, by the pair of entity types they join:\n"
    + "\n".join(f"{pair}: {names}" for pair, names in RELATIONSHIPS)
    + "\n\n[START OF TEXT]\n{{text}}\n[END OF TEXT]\n\n"
    "Answer with this JSON object and nothing else:\n"
    '{"items": [{"entity": "<the entity as written>", "type": "<one entity type>"}], '
    '"relationships": [{"from": "<entity>", "relationship": "<one relationship type>", '
    '"to": "<entity>"}]}'
)

IMAGE_DESCRIPTION_PROMPT = (
    "Describe this image from a document for someone who cannot see it. Answer with one JSON "
    'object and nothing else: {"type": "<the kind of image: photo, diagram, graph, chart, '
    'technical drawing, map, logo, screenshot, table, other>", "description": "<what it shows, '
    'in a few sentences>", "texts": ["<each text written in the image>"], "tables": ["<each '
    'table in the image as an HTML <table>>"], "data": "<for a graph or chart: the values it '
    'plots>"}. Leave out keys that do not apply.'
)

TABLE_DESCRIPTION_PROMPT = (
    "This is a table from a document. Summarise what it contains in a few sentences: what it "
    "compares, its columns, and its main figures. Answer with the summary only."
)

TABLE_TO_HTML_PROMPT = (
    "Transcribe this table image into one HTML <table> element: one <tr> per row, <th> or <td> "
    "per cell, rowspan and colspan for merged cells, the cell text exactly as written. Answer "
    "with the HTML only."
)

OCR_PROMPT = (
    "Transcribe all the text in this image exactly as written, in reading order. Keep line "
    "breaks between paragraphs. Answer with the text only, nothing else."
)

FORMULA_PROMPT = (
    "This image is a mathematical formula from a document. Transcribe it into LaTeX exactly as "
    "printed (its symbols, sub- and superscripts, fractions, matrices, and its equation number "
    "as \\tag{…} if it has one). Answer with the LaTeX only, without $ or $$ around it."
)

CONTEXT_PROMPT = (
    "<document>\n{document}\n</document>\n\nHere is a chunk of that document:\n<chunk>\n{chunk}\n"
    "</chunk>\n\nWrite one or two short sentences that situate this chunk within the document "
    "(what the document is, and what this part of it is about), to improve search retrieval of "
    "the chunk. Answer with those sentences only."
)

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.S)


class AnswerError(ValueError):
    """A model's answer is not in the form the prompt asked for."""


def unfence(text: str) -> str:
    """The answer without a Markdown code fence around it."""
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text.strip()


def json_object(text: str) -> dict[str, Any]:
    """The JSON object in an answer, fenced or not, with or without words around it."""
    body = unfence(text)
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            raise AnswerError(f"no JSON object in the answer: {excerpt(text)}") from None
        try:
            value = json.loads(body[start : end + 1])
        except json.JSONDecodeError as exc:
            raise AnswerError(
                f"the answer is not valid JSON ({exc.msg}): {excerpt(text)}"
            ) from None
    if not isinstance(value, dict):
        raise AnswerError(f"the answer is JSON but not an object: {excerpt(text)}")
    return value


def entities(text: str) -> dict[str, list[dict[str, str]]]:
    """`{"items": [...], "relationships": [...]}` from an NER answer; AnswerError otherwise."""
    value = json_object(text)
    items = value.get("items", [])
    relationships = value.get("relationships", [])
    if not isinstance(items, list) or not isinstance(relationships, list):
        raise AnswerError(f"`items` and `relationships` must be lists: {excerpt(text)}")
    clean_items = [
        {"entity": str(i["entity"]), "type": str(i["type"])}
        for i in items
        if isinstance(i, dict) and i.get("entity") and i.get("type")
    ]
    clean_relationships = [
        {"from": str(r["from"]), "relationship": str(r["relationship"]), "to": str(r["to"])}
        for r in relationships
        if isinstance(r, dict) and r.get("from") and r.get("relationship") and r.get("to")
    ]
    return {"items": clean_items, "relationships": clean_relationships}


def html_table(text: str) -> str:
    """The `<table>…</table>` in an answer; AnswerError when there is none."""
    body = unfence(text)
    match = re.search(r"<table\b.*?</table>", body, re.S | re.I)
    if not match:
        raise AnswerError(f"no HTML <table> in the answer: {excerpt(text)}")
    return match.group(0)


#: Math delimiters a model may put around its LaTeX although asked not to.
_MATH_DELIMITERS = re.compile(r"^\s*(?:\$\$(.*)\$\$|\\\[(.*)\\\]|\$([^$]*)\$)\s*$", re.S)


def latex(text: str) -> str:
    """The LaTeX of a formula answer, without a code fence or math delimiters around it;
    AnswerError when it is empty."""
    body = unfence(text)
    match = _MATH_DELIMITERS.match(body)
    if match:
        body = next(group for group in match.groups() if group is not None).strip()
    if not body:
        raise AnswerError(f"no LaTeX in the answer: {excerpt(text)}")
    return body


def excerpt(text: str, limit: int = 120) -> str:
    """The start of an answer, on one line, for an error message."""
    flat = " ".join(text.split())
    return repr(flat[:limit] + ("…" if len(flat) > limit else ""))
