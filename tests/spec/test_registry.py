"""The registry cannot point at nothing: every registered node kind resolves to a stage class."""

from __future__ import annotations

import pytest

from ingestflow.spec import registry
from ingestflow.stages.base import RunContext, Stage

KINDS = sorted(registry._REGISTRY.values(), key=lambda k: (k.type, k.subtype))


@pytest.mark.parametrize("kind", KINDS, ids=[f"{k.type}/{k.subtype}" for k in KINDS])
def test_every_registered_kind_resolves_to_a_stage_class(kind: registry.NodeKind) -> None:
    cls = registry.stage_class(kind)
    assert isinstance(cls, type) and issubclass(cls, Stage)
    fields = kind.settings.model_fields
    required = {name for name, f in fields.items() if f.is_required()}
    sample = {"strategy": "fast", "is_dynamic": True, "allow_fast": True, "model_name": "m"}
    settings = kind.settings.model_validate({k: sample[k] for k in required})
    stage = cls("Node", kind.subtype, settings, RunContext())  # the constructor stays cheap
    assert stage.name == "Node" and stage.subtype == kind.subtype


def test_every_node_type_has_kinds() -> None:
    assert {k.type for k in KINDS} == set(registry.NODE_TYPES)
    assert len([k for k in KINDS if k.type == "prompter"]) == 12
