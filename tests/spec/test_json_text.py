"""The one JSON parse that `ingestflow validate` and the API share: UTF-8, a byte order mark
ignored, duplicate keys refused at their JSON path, an empty text named as such."""

from __future__ import annotations

import json

import pytest

from ingestflow.spec.parsing import load_json_bytes, load_json_text
from ingestflow.spec.problems import Problem


def paths(problems: list[Problem]) -> list[str]:
    return [p.path for p in problems if "appears twice" in p.message]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1, "a": 2}', ["a"]),
        ('{"n": [{"x": 1}, {"k": {"s": 1, "s": 2}}]}', ["n[1].k.s"]),
        ('[{"a": 1, "b": 2, "a": 3, "b": 4}]', ["[0].a", "[0].b"]),
        ('{"a": {"x": 1, "x": 2}, "a": 3}', ["a"]),  # the inner object was replaced
        ('{"a": {"x": 1, "x": 2}, "b": {"y": 1, "y": 2}}', ["a.x", "b.y"]),
    ],
)
def test_a_duplicate_key_is_reported_at_its_json_path(text: str, where: list[str]) -> None:
    data, problems = load_json_text(text)
    assert data is None and paths(problems) == where


def test_a_byte_order_mark_is_ignored() -> None:
    body = {"name": "w", "workflow_type": "custom"}
    raw = b"\xef\xbb\xbf" + json.dumps(body).encode()
    assert load_json_bytes(raw) == (body, [])
    assert load_json_text(raw.decode("utf-8")) == (body, [])


def test_bytes_that_are_not_utf8_are_a_problem_naming_the_byte() -> None:
    data, (problem,) = load_json_bytes('{"name": "café"}'.encode("latin-1"))
    assert data is None and problem.path == "$"
    assert "not UTF-8: byte 13 is 0xe9" in problem.message


@pytest.mark.parametrize("text", ["", "  \n", "\ufeff"])
def test_an_empty_text_is_named_empty(text: str) -> None:
    data, (problem,) = load_json_text(text)
    assert data is None and problem.message == "the JSON text is empty"


def test_a_raw_nul_in_an_excerpt_is_shown_not_taken_for_a_mask() -> None:
    _, (problem,) = load_json_text('{"name": "a\x00b", "token": "s3cr3t"}')
    assert "Invalid control character" in problem.message
    assert "a\x00b" in problem.found and "s3cr3t" not in problem.found
    assert problem.found.count("********") == 1


def test_a_text_of_many_broken_keys_lists_a_bounded_number_of_problems() -> None:
    text = "{" + ", ".join(f'"k{i}": 1, "k{i}": 2' for i in range(20_000)) + "}"
    data, problems = load_json_text(text)
    assert data is None and len(problems) == 51
    assert problems[-1].message == "and 19950 more problem(s) of the kinds above"
