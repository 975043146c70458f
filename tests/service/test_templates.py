"""Every built-in template is a valid workflow by the rules, and its nodes carry ids."""

from __future__ import annotations

import pytest

from ingestflow.spec.templates import TEMPLATES, expand_template
from ingestflow.spec.validate import validate_workflow


@pytest.mark.parametrize("template_id", list(TEMPLATES))
def test_template_is_valid(template_id: str) -> None:
    body = {"name": "t", "workflow_type": "template", "template_id": template_id}
    checked = validate_workflow(expand_template(body))
    assert checked.valid, [p.one_line() for p in checked.problems]
    detail = TEMPLATES[template_id].detail()
    assert len({n["id"] for n in detail["nodes"]}) == len(detail["nodes"])


def test_the_common_dags_are_covered() -> None:
    chains = {tuple(n["type"] for n in t.nodes) for t in TEMPLATES.values()}
    assert {("partition",), ("partition", "chunk"), ("partition", "chunk", "embed")} <= chains
    assert any("prompter" in chain for chain in chains)
    strategies = {
        t.nodes[0]["settings"].get("strategy", t.nodes[0]["subtype"]) for t in TEMPLATES.values()
    }
    assert {"fast", "hi_res", "vlm"} <= strategies
