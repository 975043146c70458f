"""The records the service hands to front ends, as typed models (reference/service-api.md).

Field names, order and JSON types follow the official SDK's models (`unstructured_client.models.
shared`), so that `/openapi.json` documents what the SDK reads. Times stay the strings the store
keeps (ISO 8601, documented as `date-time`): a record is never re-formatted on its way out.

A key that a record leaves out (a job's `runtime` before it ends, a workflow's `updated_at` before
its first update) is left *unset*, not None: `wire()` and the REST routes drop unset fields and
keep explicit nulls, so the JSON is the one the service always answered.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

#: An ISO 8601 instant, kept as the string the store holds.
Instant = Annotated[str, Field(json_schema_extra={"format": "date-time"})]


class Record(BaseModel):
    """A record: known fields only, never re-validated on the way out."""

    model_config = ConfigDict(extra="forbid", revalidate_instances="never")

    def wire(self) -> dict[str, Any]:
        """The record as JSON-ready data: unset fields left out, explicit nulls kept."""
        return self.model_dump(mode="json", exclude_unset=True)


def wire(value: Any) -> Any:
    """`value` with every record in it (lists and dicts walked) as JSON-ready data."""
    if isinstance(value, Record):
        return value.wire()
    if isinstance(value, list | tuple):
        return [wire(v) for v in value]
    if isinstance(value, dict):
        return {k: wire(v) for k, v in value.items()}
    return value


# --- jobs ---------------------------------------------------------------------------------
class NodeFileMetadata(Record):
    """One file's output after one node (each of the four fields is required by the SDK)."""

    file_id: str
    node_id: str
    node_type: str
    node_subtype: str


class JobInformation(Record):
    """A job as GET /jobs/{id} answers it."""

    id: str
    workflow_id: str
    workflow_name: str
    status: str  # SCHEDULED | IN_PROGRESS | COMPLETED | STOPPED | FAILED
    created_at: Instant
    runtime: str | None = None  # ISO 8601 duration, set once the job has run
    input_file_ids: list[str] | None = None
    output_node_files: list[NodeFileMetadata] | None = None
    job_type: str | None = None  # ephemeral | persistent | scheduled | template


class JobNodeDetails(Record):
    """One node's document counts in a job, and what the job measured of it (extras)."""

    node_name: str | None = None
    node_type: str | None = None
    node_subtype: str | None = None
    ready: int
    in_progress: int
    success: int
    failure: int
    node_id: str | None = None
    elements_in: int | None = None
    elements_out: int | None = None
    seconds: float | None = None
    reused: int | None = None
    pages: int | None = None
    enriched: int | None = None
    pages_by_strategy: dict[str, int] | None = None


class JobDetails(Record):
    """A job's processing status and per-node counts."""

    id: str
    processing_status: str  # SCHEDULED | IN_PROGRESS | SUCCESS | COMPLETED_WITH_ERRORS | ...
    node_stats: list[JobNodeDetails]
    message: str | None = None
    deleted: int | None = None  # documents that left the source, removed (an extra)
    progress: dict[str, Any] | None = None  # live document counts (an extra)


class FailedFile(Record):
    """A document that failed, and why."""

    document: str
    error: str


class JobFailedFiles(Record):
    """The documents of a job that failed."""

    failed_files: list[FailedFile]


class JobCancel(Record):
    """The answer to a cancel."""

    id: str
    status: str
    message: str


# --- workflows ----------------------------------------------------------------------------
class WorkflowNode(Record):
    """A node as records show it: with an id, secrets masked."""

    id: str | None = None
    name: str
    type: str
    subtype: str
    settings: dict[str, Any] | None = None


class CronTabEntry(Record):
    """One cron expression."""

    cron_expression: str


class WorkflowSchedule(Record):
    """When a workflow runs on its own."""

    crontab_entries: list[CronTabEntry]


class WorkflowInformation(Record):
    """A workflow record (SPEC.md): create, update, get and list return it."""

    id: str
    name: str
    status: str  # active | inactive
    workflow_type: str | None = None
    sources: list[str]
    destinations: list[str]
    workflow_nodes: list[WorkflowNode]
    schedule: WorkflowSchedule | None = None
    reprocess_all: bool | None = False
    created_at: Instant
    template_id: str | None = None  # a template workflow's template (an extra)
    updated_at: Instant | None = None
    on_demand: bool | None = None  # made for one API job (an extra; never listed)


class Deleted(Record):
    """The answer to a delete (the service never answers 204)."""

    detail: str
    id: str


# --- connectors ---------------------------------------------------------------------------
class ConnectorInformation(Record):
    """A source or destination connector (secrets in `config` masked)."""

    id: str
    name: str
    type: str
    config: dict[str, Any]
    created_at: Instant
    updated_at: Instant | None = None


class ConnectionCheck(Record):
    """A connector's connection check (the SDK's DagNodeConnectionCheck)."""

    id: str
    status: str  # SCHEDULED | SUCCESS | FAILURE
    created_at: Instant
    reason: str | None = None
    reported_at: Instant | None = None


# --- templates ----------------------------------------------------------------------------
class TemplateListItem(Record):
    """A template as the list shows it."""

    id: str
    name: str
    description: str
    version: str
    last_updated: str


class TemplateNode(Record):
    """A template's node (its id is required)."""

    id: str
    name: str
    type: str
    subtype: str
    settings: dict[str, Any] | None = None


class TemplateDetail(TemplateListItem):
    """A template with its nodes."""

    nodes: list[TemplateNode]


# --- keys ---------------------------------------------------------------------------------
class KeyRecord(Record):
    """An API key's record: never the key, its last four characters."""

    id: str
    name: str
    ends_with: str
    created_at: Instant
    revoked_at: Instant | None
