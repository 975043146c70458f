"""Connectors: the service's /sources and /destinations.

Configs are stored with their secrets (a run needs them) in the owner-only workspace file; every
record that leaves this module has its secrets masked, and an update that sends a masked value
back keeps the stored secret.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

from ingestflow.connectors.registry import (
    CheckedConnector,
    connector_type,
    local_files,
    validate_connector,
)
from ingestflow.errors import Conflict, NotFound, WorkflowInvalid
from ingestflow.service.lite_paths import LitePaths
from ingestflow.service.records import ConnectionCheck, ConnectorInformation, Deleted
from ingestflow.service.validation import load_body
from ingestflow.spec.problems import Problem
from ingestflow.spec.record import mask_secrets
from ingestflow.spec.secrets import keep_masked
from ingestflow.store import Workspace, now
from ingestflow.store.resources import Conflict as RowConflict


class Connectors:
    """Create, read, update, delete and check connectors in a workspace."""

    def __init__(self, ws: Workspace, lite: LitePaths | None = None) -> None:
        self.ws = ws
        self.lite = lite or LitePaths()

    def create(self, body: Any, role: str | None = None) -> ConnectorInformation:
        """Validate and store a connector body; returns its record (secrets masked)."""
        checked = self._checked(body, role)
        assert checked.connector is not None
        try:
            connector_id = self.ws.connectors.insert(
                name=checked.connector.name,
                type=checked.connector.type,
                role=checked.entry.role,
                config=checked.connector.config,
            )
        except RowConflict:
            raise _name_taken(checked.connector.name) from None
        return self.get(connector_id)

    def row(self, ref: str, role: str | None = None) -> dict[str, Any]:
        """A connector's row by id, unique id prefix, or name; NotFound otherwise."""
        rows = [r for r in self.ws.connectors.find(ref) if role in (None, r["role"])]
        exact = [r for r in rows if r["id"] == ref]
        if exact:
            return exact[0]
        if len(rows) != 1:
            what = role or "connector"
            raise NotFound(
                f"{what} {ref!r} "
                + ("is ambiguous: give more of its id" if rows else "not found")
                + (f"; `ingestflow {what}s list` shows the stored ones" if not rows else "")
            )
        return rows[0]

    def get(self, ref: str, role: str | None = None) -> ConnectorInformation:
        """The connector record: id, name, type, config (secrets masked), dates."""
        row = self.row(ref, role)
        record = {
            "id": row["id"],
            "name": row["name"],
            "type": row["type"],
            "config": mask_secrets(row["config"]),
            "created_at": row["created_at"],
        }
        if row["updated_at"]:
            record["updated_at"] = row["updated_at"]
        return ConnectorInformation.model_validate(record)

    def list(
        self, role: str | None = None, type_: str | None = None
    ) -> builtins.list[ConnectorInformation]:
        """Records of every connector, or of one role and/or type."""
        if role not in (None, "source", "destination"):
            raise WorkflowInvalid(
                [Problem("role", "unknown role", found=role, allowed=["source", "destination"])],
                what="request",
            )
        wanted = None
        if type_:
            entry = connector_type(type_)
            wanted = entry.type if entry else type_.strip().lower()
        rows = self.ws.connectors.select(
            "(? IS NULL OR role = ?) AND (? IS NULL OR type = ?)", (role, role, wanted, wanted)
        )
        return [self.get(r["id"]) for r in rows]

    def update(self, ref: str, body: Any, role: str | None = None) -> ConnectorInformation:
        """Replace a connector's config (the body is `{"config": {...}}`); masked secrets kept."""
        row = self.row(ref, role)
        if not isinstance(body, dict) or set(body) - {"config", "name", "type"}:
            raise WorkflowInvalid(
                [
                    Problem(
                        "body",
                        'an update body is `{"config": {...}}`',
                        found=sorted(body) if isinstance(body, dict) else type(body).__name__,
                    )
                ],
                what="connector update",
            )
        if body.get("type") not in (None, row["type"]) and (
            connector_type(str(body.get("type"))) is None
            or connector_type(str(body["type"])).type != row["type"]  # type: ignore[union-attr]
        ):
            raise WorkflowInvalid(
                [Problem("type", "a connector's type cannot change", found=body["type"])],
                what="connector update",
            )
        config = body.get("config", row["config"])
        kept: builtins.list[Problem] = []
        if isinstance(config, dict):
            entry = connector_type(row["type"])
            endpoint = entry.endpoint_fields if entry else ()
            config, kept = keep_masked(config, row["config"], endpoint)
        name = body.get("name", row["name"])
        self._checked({"name": name, "type": row["type"], "config": config}, row["role"], kept)
        try:
            self.ws.connectors.update(row["id"], name=name, config=config, updated_at=now())
        except RowConflict:
            raise _name_taken(name) from None
        return self.get(row["id"])

    def delete(self, ref: str, role: str | None = None) -> Deleted:
        """Delete a connector no stored workflow uses."""
        row = self.row(ref, role)
        users = [
            w["name"]
            for w in self.ws.workflows.select()
            if row["id"] in (w["body"].get("source_id"), w["body"].get("destination_id"))
        ]
        if users:
            raise Conflict(
                f"{row['role']} {row['name']!r} is used by workflow(s) {', '.join(users)}: "
                "delete or change them first"
            )
        self.ws.connectors.delete(row["id"])
        return Deleted(detail=f"{row['role']} {row['id']} deleted", id=row["id"])

    def body(self, ref: str, role: str | None = None) -> dict[str, Any]:
        """The stored create body, with secrets: for running only, never for a record."""
        row = self.row(ref, role)
        return {"name": row["name"], "type": row["type"], "config": row["config"]}

    def resolve(self, ref: str | Path, role: str) -> CheckedConnector:
        """A connector from a JSON file, or stored in the workspace (by id or name)."""
        path = Path(ref)
        if path.suffix == ".json" or path.exists():
            data = load_body(path, what="connector")
        else:
            data = self.body(str(ref), role or None)
        return self._checked(data, role or None, what=f"{role or 'the'} connector")

    def build(self, checked: CheckedConnector, **options: Any) -> Any:
        """The Source or Destination of a resolved connector, under this service's Lite rule."""
        lite = self.lite.options(checked.config)
        return checked.entry.build(checked.config, checked.role, **options, **lite)

    def local(self, role: str, **config: Any) -> CheckedConnector:
        """The run's own local files as a `role`: see `registry.local_files`."""
        return local_files(role, **config)

    # --- connection checks ------------------------------------------------------------------
    def check_now(self, ref: str | Path, role: str = "") -> dict[str, Any]:
        """Check a connector (a JSON file, or a stored one) now: ok, status, reason."""
        from ingestflow.connectors.check import check_connector

        checked = self.resolve(ref, role)
        assert checked.connector is not None
        options = self.lite.options(checked.config)
        return check_connector(checked.connector.type, checked.config, **options).as_dict()

    def start_check(self, ref: str, role: str | None = None) -> ConnectionCheck:
        """Record a SCHEDULED connection check of a stored connector; `run_check` does it."""
        row = self.row(ref, role)
        check_id = self.ws.checks.insert(connector_id=row["id"], status="SCHEDULED")
        return self._check_record(check_id)

    def run_check(self, check_id: str) -> ConnectionCheck:
        """Do a recorded check: connect, authenticate, look (no crawl, no write)."""
        check = self.ws.checks.get(check_id)
        if check is None:
            raise NotFound(f"connection check {check_id!r} not found")
        row = self.row(check["connector_id"])
        try:
            result = self._check(row)
            status, reason = result.status, result.reason
        except Exception as exc:  # a broken install or a bug: the check says so in one line
            from ingestflow.errors import one_line

            status, reason = "FAILURE", f"the check stopped: {one_line(exc)}"
        self.ws.checks.update(check_id, status=status, reason=reason, reported_at=now())
        return self._check_record(check_id)

    def last_check(self, ref: str, role: str | None = None) -> ConnectionCheck:
        """The latest connection check of a connector; NotFound when none was made."""
        row = self.row(ref, role)
        checks = self.ws.checks.select(
            "connector_id = ?", (row["id"],), order="created_at DESC, rowid DESC"
        )
        if not checks:
            raise NotFound(
                f"no connection check of {row['name']!r} yet: POST to the same path starts one"
            )
        return self._check_record(checks[0]["id"])

    def _check(self, row: dict[str, Any]) -> Any:
        """Check a stored connector under this service's Lite path rule (nothing is created)."""
        from ingestflow.connectors.check import ConnectionCheck, check_connector

        body = {"name": row["name"], "type": row["type"], "config": row["config"]}
        try:
            checked = self._checked(body, None)
        except WorkflowInvalid as exc:
            said = "; ".join(p.one_line() for p in exc.problems)
            return ConnectionCheck.failure(f"the {row['type']} config is invalid: {said}")
        return check_connector(row["type"], checked.config, **self.lite.options(checked.config))

    def _checked(
        self,
        body: Any,
        role: str | None,
        more: builtins.list[Problem] | None = None,
        what: str = "",
    ) -> CheckedConnector:
        """A valid connector body whose Lite path (if any) this service may open; else 422 with
        every problem (`more`: those already found)."""
        checked = validate_connector(body, role=role)
        if checked.valid:
            refused = self.lite.problem(checked.config)
            if refused is not None:
                checked.problems.append(refused)
        if more or not checked.valid:
            problems = [*(more or []), *checked.problems]
            raise WorkflowInvalid(problems, what=what or f"{role or 'connector'}")
        return checked

    def _check_record(self, check_id: str) -> ConnectionCheck:
        check = self.ws.checks.get(check_id)
        assert check is not None
        return ConnectionCheck(
            id=check["id"],
            status=check["status"],
            created_at=check["created_at"],
            reason=check["reason"],
            reported_at=check["reported_at"],
        )


def _name_taken(name: str) -> WorkflowInvalid:
    return WorkflowInvalid(
        [
            Problem(
                "name",
                "a connector with this name already exists",
                found=name,
                hint="connector names are unique: pick another",
            )
        ],
        what="connector",
    )
