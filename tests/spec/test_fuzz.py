"""Property-based: `validate` and the workflow loader meet arbitrary JSON and mutated valid
workflows, and answer with problems (the project's own errors), never anything else."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestflow.connectors.registry import validate_connector
from ingestflow.errors import IngestflowError
from ingestflow.service.validation import check_body
from ingestflow.spec.parsing import load_json_text
from ingestflow.spec.validate import validate_workflow

VALID = sorted(Path("fixtures/workflows/valid").glob("*.json"))
BODIES = [json.loads(p.read_text()) for p in VALID]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)
keys = st.sampled_from(
    [
        "name",
        "workflow_type",
        "workflow_nodes",
        "template_id",
        "source_id",
        "destination_id",
        "schedule",
        "reprocess_all",
        "type",
        "subtype",
        "settings",
        "config",
        "strategy",
        "max_characters",
        "model_name",
        "provider",
    ]
)


def _judge(value: Any) -> None:
    """Every entry point a file or request body reaches; only our own errors may come out."""
    for call in (validate_workflow, validate_connector):
        checked = call(value)
        assert isinstance(checked.problems, list)
    with contextlib.suppress(IngestflowError):
        check_body(value)
    _, problems = load_json_text(json.dumps(value, allow_nan=True))
    assert isinstance(problems, list)


@SETTINGS
@given(json_values)
def test_arbitrary_json(value: Any) -> None:
    _judge(value)


@SETTINGS
@given(st.dictionaries(keys, json_values, max_size=8))
def test_arbitrary_objects_with_workflow_keys(value: dict[str, Any]) -> None:
    _judge(value)


def _mutate(body: Any, path: list[Any], action: str, value: Any) -> Any:
    """A copy of `body` with one thing at `path` removed, replaced, or added."""
    body = json.loads(json.dumps(body))
    target = body
    for step in path[:-1]:
        target = target[step]
    last = path[-1]
    if action == "delete" and isinstance(target, dict):
        target.pop(last, None)
    elif action == "add" and isinstance(target, dict):
        target[f"{last}_extra"] = value
    else:
        target[last] = value
    return body


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(value, dict):
        for key, child in value.items():
            out.append((*prefix, key))
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.append((*prefix, index))
            out += _paths(child, (*prefix, index))
    return out


@SETTINGS
@given(st.data())
def test_mutated_valid_workflows(data: st.DataObject) -> None:
    body = data.draw(st.sampled_from(BODIES))
    paths = _paths(body)
    path = list(data.draw(st.sampled_from(paths)))
    action = data.draw(st.sampled_from(["delete", "replace", "add"]))
    value = data.draw(json_values)
    _judge(_mutate(body, path, action, value))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested more than 64 levels"),
        ('{"name": ' + "7" * 5000 + "}", "more digits than can be read"),
        ('{"name": "a", "name": "b"}', "appears twice"),
        ('{"name": "x\\udc80", "workflow_type": "custom"}', "not valid Unicode"),
    ],
    ids=["deep", "long-int", "duplicate-key", "lone-surrogate"],
)
def test_hostile_json_is_a_problem(text: str, words: str) -> None:
    data, problems = load_json_text(text)
    assert data is None and any(words in p.message for p in problems)


def test_a_huge_key_is_not_echoed_whole(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ingestflow.cli import app

    body = dict(BODIES[0])
    body["k" * 1_000_000] = 1
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(body))
    for args in (["validate", str(path)], ["validate", "--json", str(path)]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2
        assert len(result.output) < 5000, len(result.output)


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "w", "type": "wiki", "config": {"token": "se\\"cr3t-TOKEN" "url": 1}}',
        '{"name": "w", "type": "wiki", "config": {"token":\n "s3cr3t-TOKEN" "url": 1}}',
        '{"name": "w", "type": "wiki", "config": {"token": "s3cr3t-TOKEN\n}}',
        '{"name": "w", "type": "wiki", "config": {"password": s3cr3t-TOKEN, "x": }}',
    ],
    ids=["escaped-quote", "own-line", "unterminated", "bare"],
)
def test_a_malformed_connector_never_prints_its_secret(tmp_path: Path, text: str) -> None:
    from typer.testing import CliRunner

    from ingestflow.cli import app

    path = tmp_path / "c.json"
    path.write_text(text)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "malformed JSON" in result.output
    assert "cr3t-TOKEN" not in result.output
