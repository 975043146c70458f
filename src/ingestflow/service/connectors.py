"""Connectors stored in the workspace (the service's /sources and /destinations).

Configs are kept in the workspace's SQLite file (created 0600) with their secrets, since a run
needs them; every record that leaves this module has its secrets masked.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from ingestflow.errors import NotFound, WorkflowInvalid
from ingestflow.runner.job import by_prefix, connect_db, now
from ingestflow.spec.parsing import load_json_file
from ingestflow.spec.problems import Problem
from ingestflow.spec.record import mask_secrets
from ingestflow.spec.validate import CheckedConnector, validate_connector

ROLE_OF_TYPE = {"wiki": "source", "vectordb": "destination"}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS connectors (
    id TEXT PRIMARY KEY, name TEXT UNIQUE, type TEXT, role TEXT, config TEXT,
    created_at TEXT, updated_at TEXT
);
"""


class ConnectorStore:
    """Create, read, update and delete connectors in a workspace."""

    def __init__(self, workspace: Path) -> None:
        self.db = connect_db(Path(workspace))
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    def create(self, body: Any) -> dict[str, Any]:
        """Validate and store a connector body; returns its (masked) record."""
        checked = _checked(body)
        assert checked.connector is not None
        connector_id = str(uuid.uuid4())
        try:
            self.db.execute(
                "INSERT INTO connectors VALUES (?,?,?,?,?,?,?)",
                (
                    connector_id,
                    checked.connector.name,
                    checked.connector.type,
                    ROLE_OF_TYPE[checked.connector.type],
                    json.dumps(checked.connector.config),
                    now(),
                    None,
                ),
            )
        except sqlite3.IntegrityError:
            raise WorkflowInvalid(
                [
                    Problem(
                        "name",
                        "a connector with this name already exists",
                        found=checked.connector.name,
                        hint="connector names are unique: pick another",
                    )
                ],
                what="connector",
            ) from None
        return self.record(connector_id)

    def row(self, ref: str) -> sqlite3.Row:
        """A connector by id, unique id prefix, or name; NotFound otherwise."""
        rows = by_prefix(self.db, "connectors", ref, name_column="name")
        if len(rows) != 1:
            raise NotFound(
                f"connector {ref!r} not found"
                + (
                    " (ambiguous)"
                    if rows
                    else "; `ingestflow connectors list` shows the stored ones"
                )
            )
        return rows[0]

    def body(self, ref: str) -> dict[str, Any]:
        """The stored create body (with secrets: for running only)."""
        row = self.row(ref)
        return {"name": row["name"], "type": row["type"], "config": json.loads(row["config"])}

    def record(self, ref: str) -> dict[str, Any]:
        """The connector record: id, name, type, config (secrets masked), dates."""
        row = self.row(ref)
        record = {
            "id": row["id"],
            "name": row["name"],
            "type": row["type"],
            "config": mask_secrets(json.loads(row["config"])),
            "created_at": row["created_at"],
        }
        if row["updated_at"]:
            record["updated_at"] = row["updated_at"]
        return record

    def list(self, role: str | None = None) -> list[dict[str, Any]]:
        """Records of every connector, or of one role (`source` or `destination`)."""
        if role not in (None, "source", "destination"):
            raise WorkflowInvalid(
                [Problem("--role", "unknown role", found=role, allowed=["source", "destination"])],
                what="request",
            )
        rows = self.db.execute(
            "SELECT id FROM connectors WHERE ? IS NULL OR role = ? ORDER BY created_at",
            (role, role),
        ).fetchall()
        return [self.record(r["id"]) for r in rows]

    def delete(self, ref: str) -> None:
        """Delete a connector."""
        self.db.execute("DELETE FROM connectors WHERE id = ?", (self.row(ref)["id"],))


def _checked(body: Any) -> CheckedConnector:
    checked = validate_connector(body)
    if not checked.valid:
        raise WorkflowInvalid(checked.problems, what="connector")
    return checked


def resolve_connector(ref: str | Path, workspace: Path, role: str) -> CheckedConnector:
    """A connector from a JSON file, or stored in the workspace (by id or name)."""
    path = Path(ref)
    if path.suffix == ".json" or path.exists():
        data, problems = load_json_file(path)
        if problems:
            raise WorkflowInvalid(problems, what="connector")
    else:
        store = ConnectorStore(workspace)
        try:
            data = store.body(str(ref))
        finally:
            store.close()
    checked = validate_connector(data, role=role)
    if not checked.valid:
        raise WorkflowInvalid(checked.problems, what=f"{role} connector")
    return checked


def open_source(checked: CheckedConnector) -> Any:
    """The Source object of a validated source connector."""
    if checked.connector is not None and checked.connector.type == "wiki":
        from ingestflow.connectors.wiki import WikiSource

        return WikiSource(checked.config)  # type: ignore[arg-type]
    raise NotFound(f"no source for connector type {checked.connector and checked.connector.type}")


def open_destination(checked: CheckedConnector, options: dict[str, Any] | None = None) -> Any:
    """The Destination object of a validated destination connector."""
    if checked.connector is not None and checked.connector.type == "vectordb":
        from ingestflow.connectors.vectordb import VectorDBDestination

        return VectorDBDestination(checked.config, **(options or {}))  # type: ignore[arg-type]
    raise NotFound(
        f"no destination for connector type {checked.connector and checked.connector.type}"
    )
