"""Pydantic models of SPEC.md's resources: connectors, workflows and workflow nodes.

Node settings and connector configs are kept as raw objects here and parsed by type (see
`validate.py`), so that every problem carries its full JSON path.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ingestflow.spec.catalog import canonical_subtype

#: Field names whose values are secrets wherever they appear (records, messages, parse errors):
#: the node settings' keys and every registered connector type's secret fields (registering a
#: type adds its own). `password` and `token` are here from the start, so that they are masked
#: even in a process that never imported the connector registry.
SECRET_FIELDS: set[str] = {
    "password",
    "token",
    "provider_api_key",
    "unstructured_api_key",
    "api_key",
}
MASK = "********"


class Model(BaseModel):
    """Base of the resource models: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _bool_or_word(value: Any) -> Any:
    """Accept the REST examples' "true"/"false" strings for a boolean."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


class ConnectorCreate(Model):
    """Body that creates a source or destination connector."""

    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    config: dict[str, Any]

    @field_validator("type", mode="before")
    @classmethod
    def _canonical_type(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower()
        return value


class WorkflowNode(Model):
    """One node of a workflow's DAG; `settings` is parsed by (type, subtype)."""

    id: str | None = None
    name: str
    type: str
    subtype: str
    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _canonical(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if isinstance(data.get("type"), str):
                data["type"] = data["type"].strip().lower()
            if isinstance(data.get("subtype"), str):
                data["subtype"] = canonical_subtype(data["subtype"].strip())
            if data.get("settings") is None and "settings" in data:
                data["settings"] = {}
        return data


class WorkflowCreate(Model):
    """Body that creates a workflow (SPEC.md: Workflow, create request)."""

    name: str
    source_id: str | None = None
    destination_id: str | None = None
    workflow_type: str
    template_id: str | None = None
    workflow_nodes: list[WorkflowNode] | None = None
    reprocess_all: bool = True
    schedule: str | None = None

    _reprocess = field_validator("reprocess_all", mode="before")(_bool_or_word)

    @field_validator("workflow_type", mode="before")
    @classmethod
    def _lower_type(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("schedule", mode="before")
    @classmethod
    def _lower_schedule(cls, value: Any) -> Any:
        return " ".join(value.lower().split()) if isinstance(value, str) else value

    @property
    def local_source(self) -> bool:
        """True when the workflow reads local files (no source connector)."""
        return self.source_id is None

    @property
    def local_destination(self) -> bool:
        """True when the workflow writes local files (no destination connector)."""
        return self.destination_id is None


class WorkflowUpdate(Model):
    """Body that updates a workflow: the create fields, each optional."""

    name: str | None = None
    source_id: str | None = None
    destination_id: str | None = None
    workflow_type: str | None = None
    template_id: str | None = None
    workflow_nodes: list[WorkflowNode] | None = None
    reprocess_all: bool | None = None
    schedule: str | None = None

    _reprocess = field_validator("reprocess_all", mode="before")(_bool_or_word)
