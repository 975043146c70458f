"""Every workflow fixture is judged right, with the path and words it must report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestflow.connectors.registry import validate_connector
from ingestflow.spec.parsing import load_json_file
from ingestflow.spec.problems import Problem
from ingestflow.spec.validate import looks_like_connector, validate_workflow
from tests.conftest import FIXTURES

VALID = sorted((FIXTURES / "workflows" / "valid").glob("*.json"))
INVALID_DIR = FIXTURES / "workflows" / "invalid"
EXPECTED: dict[str, dict] = json.loads((INVALID_DIR / "expected.json").read_text())
INVALID = sorted(p for p in INVALID_DIR.glob("*.json") if p.name != "expected.json")


def judge(path: Path) -> list[Problem]:
    data, problems = load_json_file(path)
    if problems:
        return problems
    if looks_like_connector(data):
        return validate_connector(data).problems
    return validate_workflow(data).problems


def test_fixture_counts() -> None:
    assert len(VALID) >= 12
    assert len(INVALID) >= 40
    assert {p.name for p in INVALID} == set(EXPECTED), "every invalid fixture needs an expectation"


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_fixture(path: Path) -> None:
    assert judge(path) == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_fixture(path: Path) -> None:
    expected = EXPECTED[path.name]
    problems = judge(path)
    rendered = [p.one_line() for p in problems]
    matching = [
        p
        for p in problems
        if p.path == expected["path"] and all(word in p.one_line() for word in expected["words"])
    ]
    assert matching, f"expected {expected} among {rendered}"
    assert len(problems) == expected["count"], rendered


def test_valid_fixtures_cover_every_node_kind() -> None:
    from ingestflow.spec.registry import _REGISTRY

    seen: set[tuple[str, str]] = set()
    for path in VALID:
        checked = validate_workflow(json.loads(path.read_text()))
        seen |= {(n.type, n.subtype) for n in checked.nodes}
    assert set(_REGISTRY) - seen == set()


def test_valid_fixtures_cover_vendor_spellings_templates_and_connectors() -> None:
    texts = {p.stem: p.read_text() for p in VALID}
    joined = "\n".join(texts.values())
    for spelling in (
        "anthropic_ner",
        "openai_table2html",
        "vertexai_ocr",
        '"CUSTOM"',
        '"TEMPLATE"',
        '"confluence"',
        '"milvus"',
    ):
        assert spelling in joined
    kinds = [json.loads(t).get("workflow_type", "").lower() for t in texts.values()]
    assert "template" in kinds and "custom" in kinds


@pytest.mark.parametrize(
    "path", sorted((FIXTURES.parent / "examples").glob("*.json")), ids=lambda p: p.stem
)
def test_examples_are_valid(path: Path) -> None:
    problems = judge(path)
    if "<API_TOKEN>" in path.read_text():  # a template for users: refused until they fill it in
        assert [p.path for p in problems] == ["config.token"]
        assert "placeholder" in problems[0].message
    else:
        assert problems == []
