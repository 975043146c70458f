"""Workflows stored in the workspace: create, read, update, delete, with every rule applied.

A workflow is checked whole on create and update (the same problems `ingestflow validate`
reports), plus what only a store can tell: its name is unique, its connectors exist with the
right role, its template exists. On-demand workflows (made for one API job) cannot be updated.
"""

from __future__ import annotations

import builtins
import re
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ingestflow.errors import Conflict, NotFound, WorkflowInvalid
from ingestflow.service.records import Deleted, WorkflowInformation
from ingestflow.spec.problems import Problem
from ingestflow.spec.record import workflow_record
from ingestflow.spec.secrets import keep_masked_node_secrets
from ingestflow.spec.validate import CheckedWorkflow, validate_workflow
from ingestflow.store import Workspace, now
from ingestflow.store.resources import Conflict as RowConflict

PERSISTENT = "persistent"
ON_DEMAND = "on_demand"
SORT_FIELDS = ("id", "name", "created_at", "updated_at", "status")
_NODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


#: Hears a workflow's create or update (its record) or delete (None), by workflow id.
WorkflowListener = Callable[[str, WorkflowInformation | None], None]


class Workflows:
    """The workflows of a workspace. `on_change` hears each change made through it (a server's
    schedules follow them at once; changes made elsewhere, by the CLI or another server, reach
    them when they read the store again)."""

    def __init__(
        self, ws: Workspace, connectors: Any, on_change: WorkflowListener | None = None
    ) -> None:
        self.ws = ws
        self.connectors = connectors
        self.on_change = on_change or (lambda workflow_id, record: None)

    # --- writes ---------------------------------------------------------------------------
    def create(self, body: Any, kind: str = PERSISTENT) -> WorkflowInformation:
        """Check a create body against every rule and store it; returns its record."""
        masked: builtins.list[Problem] = []
        if isinstance(body, dict):  # a masked secret here has nothing stored to stand for
            body, masked = keep_masked_node_secrets(body, None)
        checked = self._check(body, masked)
        assert checked.workflow is not None
        stored = _with_node_ids(checked.workflow.model_dump(mode="json", exclude_none=True), None)
        stored = self._canonical_connectors(stored)
        try:
            workflow_id = self.ws.workflows.insert(
                name=checked.workflow.name, kind=kind, status="active", body=stored
            )
        except RowConflict:
            raise _name_taken(checked.workflow.name) from None
        record = self.get(workflow_id)
        self.on_change(workflow_id, record)
        return record

    def update(self, ref: str, body: Any) -> WorkflowInformation:
        """Change a long-lived workflow: the fields given replace the stored ones, then the whole
        workflow is checked again."""
        row = self.row(ref)
        if row["kind"] != PERSISTENT:
            raise WorkflowInvalid(
                [
                    Problem(
                        "workflow_id",
                        "an on-demand workflow cannot be updated: it exists only for its job",
                        found=row["id"],
                        hint="create a long-lived workflow (POST /workflows) to keep and change",
                    )
                ],
                what="workflow update",
            )
        if not isinstance(body, dict):
            raise WorkflowInvalid(
                [Problem("$", "an update body must be an object", found=type(body).__name__)],
                what="workflow update",
            )
        merged = {**row["body"], **body}
        new_type = str(body.get("workflow_type") or "").lower()
        if new_type == "custom" and "template_id" not in body:
            merged.pop("template_id", None)  # switching to custom drops the template
        if new_type == "template" and "workflow_nodes" not in body:
            merged.pop("workflow_nodes", None)
        merged = {k: v for k, v in merged.items() if v is not None}
        # a record read, changed and sent back holds `********` for each secret
        merged, masked = keep_masked_node_secrets(merged, row["body"].get("workflow_nodes"))
        checked = self._check(merged, masked)
        assert checked.workflow is not None
        stored = _with_node_ids(
            checked.workflow.model_dump(mode="json", exclude_none=True),
            row["body"].get("workflow_nodes"),
        )
        stored = self._canonical_connectors(stored)
        try:
            self.ws.workflows.update(
                row["id"], name=checked.workflow.name, body=stored, updated_at=now()
            )
        except RowConflict:
            raise _name_taken(checked.workflow.name) from None
        record = self.get(row["id"])
        self.on_change(row["id"], record)
        return record

    def delete(self, ref: str) -> Deleted:
        """Delete a workflow that has no job scheduled or running (its jobs' records stay)."""
        row = self.row(ref)
        with self.ws.transaction():  # a run submitted meanwhile waits, then finds no workflow
            active = self.ws.active_jobs(row["id"])
            if active:
                raise Conflict(
                    f"workflow {row['name']!r} has a job scheduled or running ({active[0]}): "
                    "cancel it or wait for it to finish"
                )
            self.ws.workflows.delete(row["id"])
        self.on_change(row["id"], None)
        return Deleted(detail=f"workflow {row['id']} deleted", id=row["id"])

    # --- reads ----------------------------------------------------------------------------
    def row(self, ref: str) -> dict[str, Any]:
        """A workflow's row by id, unique id prefix or name; NotFound otherwise."""
        rows = self.ws.workflows.find(ref)
        exact = [r for r in rows if r["id"] == ref]
        if exact:
            return exact[0]
        if len(rows) != 1:
            raise NotFound(
                f"workflow {ref!r} "
                + (
                    "is ambiguous: give more of its id"
                    if rows
                    else "not found; `ingestflow workflows list` shows the stored ones"
                )
            )
        return rows[0]

    def get(self, ref: str) -> WorkflowInformation:
        """The workflow record (secrets in node settings masked)."""
        return _record(self.row(ref))

    def body(self, ref: str) -> dict[str, Any]:
        """The stored create body with node ids and secrets: for running only."""
        return dict(self.row(ref)["body"])

    def list(
        self,
        *,
        source_id: str | None = None,
        destination_id: str | None = None,
        status: str | None = None,
        name: str | None = None,
        created_since: str | None = None,
        created_before: str | None = None,
        sort_by: str = "id",
        sort_direction: str = "asc",
        page: int = 1,
        page_size: int = 20,
    ) -> builtins.list[WorkflowInformation]:
        """Long-lived workflows matching the filters, sorted and paged (pages count from 1)."""
        problems = []
        if sort_by not in SORT_FIELDS:
            problems.append(Problem("sort_by", "unknown sort field", sort_by, list(SORT_FIELDS)))
        if sort_direction not in ("asc", "desc"):
            problems.append(
                Problem("sort_direction", "unknown direction", sort_direction, ["asc", "desc"])
            )
        if status is not None and status not in ("active", "inactive"):
            problems.append(Problem("status", "unknown status", status, ["active", "inactive"]))
        if page < 1 or not 1 <= page_size <= 1000:
            problems.append(
                Problem("page", "page counts from 1; page_size is 1 to 1000", [page, page_size])
            )
        since, before = (
            _instant("created_since", created_since, problems),
            _instant("created_before", created_before, problems),
        )
        if problems:
            raise WorkflowInvalid(problems, what="list request")
        records = [_record(r) for r in self.ws.workflows.select("kind = ?", (PERSISTENT,))]
        records = [
            r
            for r in records
            if (source_id is None or source_id in r.sources)
            and (destination_id is None or destination_id in r.destinations)
            and (status is None or r.status == status)
            and (name is None or name.lower() in r.name.lower())
            and (since is None or _in_terms_of(r.created_at, since) >= since)
            and (before is None or _in_terms_of(r.created_at, before) < before)
        ]
        records.sort(key=lambda r: str(getattr(r, sort_by) or ""), reverse=sort_direction == "desc")
        start = (page - 1) * page_size
        return records[start : start + page_size]

    def scheduled(self) -> builtins.list[WorkflowInformation]:
        """Records of the long-lived workflows that have a schedule (read every few seconds by
        each server: only those rows are decoded)."""
        where = "kind = ? AND json_extract(body, '$.schedule') IS NOT NULL"
        return [_record(r) for r in self.ws.workflows.select(where, (PERSISTENT,))]

    # --- rules only a store can check ---------------------------------------------------
    def _check(self, body: Any, more: builtins.list[Problem] | None = None) -> CheckedWorkflow:
        checked = validate_workflow(body)
        problems = [*(more or []), *checked.problems]
        workflow = checked.workflow
        if workflow is not None:
            for field, role in (("source_id", "source"), ("destination_id", "destination")):
                ref = getattr(workflow, field)
                if ref and ref.strip():
                    try:
                        self.connectors.row(ref, role)
                    except NotFound:
                        problems.append(
                            Problem(
                                field,
                                f"no stored {role} connector has this id",
                                found=ref,
                                hint=f"create it first (POST /{role}s or `ingestflow {role}s "
                                f"create`), or omit {field} for local files",
                            )
                        )
            if workflow.workflow_type == "template" and workflow.template_id:
                from ingestflow.spec.templates import template_problem

                if (problem := template_problem(workflow.template_id)) is not None:
                    problems.append(problem)
        if problems:
            raise WorkflowInvalid(problems)
        return checked

    def _canonical_connectors(self, stored: dict[str, Any]) -> dict[str, Any]:
        """Connector references stored as full ids (a name or id prefix is resolved once)."""
        for field, role in (("source_id", "source"), ("destination_id", "destination")):
            if stored.get(field):
                stored[field] = self.connectors.row(stored[field], role)["id"]
        return stored


def _record(row: dict[str, Any]) -> WorkflowInformation:
    from ingestflow.spec.models import WorkflowCreate

    workflow = WorkflowCreate.model_validate(row["body"])
    record = workflow_record(
        workflow,
        row["id"],
        status=row["status"],
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]) if row["updated_at"] else None,
    )
    if row["kind"] != PERSISTENT:
        record["on_demand"] = True
    return WorkflowInformation.model_validate(record)


def _with_node_ids(
    body: dict[str, Any], old: builtins.list[dict[str, Any]] | None
) -> dict[str, Any]:
    """Every node with an id: a safe id the client gave (or the node had) is kept, else a new
    one."""
    taken: set[str] = set()
    previous = {n.get("name"): n.get("id") for n in old or []}
    for node in body.get("workflow_nodes") or []:
        given = node.get("id") or previous.get(node.get("name"))
        if not (isinstance(given, str) and _NODE_ID.match(given)) or given in taken:
            given = str(uuid.uuid4())
        node["id"] = given
        taken.add(given)
    return body


def _instant(field: str, value: str | None, problems: builtins.list[Problem]) -> datetime | None:
    """A filter's date or time; naive means local time (see `_in_terms_of`)."""
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        problems.append(Problem(field, "not an ISO 8601 date or time", found=value))
        return None


def _in_terms_of(created_at: str, bound: datetime) -> datetime:
    """A record's creation time, comparable with `bound`: as local wall time when the bound is
    naive. The record is converted, never the bound: year 1 or 9999 local time is outside what
    a datetime holds once moved to UTC (that was a 500)."""
    moment = datetime.fromisoformat(created_at)
    return moment if bound.tzinfo else moment.astimezone().replace(tzinfo=None)


def _name_taken(name: str) -> WorkflowInvalid:
    return WorkflowInvalid(
        [
            Problem(
                "name",
                "a workflow with this name already exists",
                found=name,
                hint="workflow names are unique: pick another, or update the existing one",
            )
        ]
    )
