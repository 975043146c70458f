"""Rows of the stored resources: connectors, workflows, API keys and connection checks.

Plain reads and writes of JSON columns; the rules (unique names, roles, masking, what may change)
belong to the service layer above.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Any

from ingestflow.store.db import by_prefix, now


class Conflict(sqlite3.IntegrityError):
    """A unique constraint refused the write (a name already taken)."""


class Rows:
    """Create, read, update and delete the rows of one resource table."""

    table = ""
    json_columns: tuple[str, ...] = ()
    name_column: str | None = "name"

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def insert(self, **values: Any) -> str:
        """Store a new row (an id and created_at are added); Conflict on a taken unique value."""
        values = {"id": str(uuid.uuid4()), "created_at": now(), **values}
        cols = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        try:
            self.db.execute(
                f"INSERT INTO {self.table} ({cols}) VALUES ({marks})", self._encode(values)
            )
        except sqlite3.IntegrityError as exc:
            raise Conflict(str(exc)) from None
        return values["id"]

    def update(self, row_id: str, **values: Any) -> None:
        """Change some columns of a row; Conflict on a taken unique value."""
        assign = ", ".join(f"{k} = ?" for k in values)
        try:
            self.db.execute(
                f"UPDATE {self.table} SET {assign} WHERE id = ?", (*self._encode(values), row_id)
            )
        except sqlite3.IntegrityError as exc:
            raise Conflict(str(exc)) from None

    def delete(self, row_id: str) -> None:
        """Remove a row."""
        self.db.execute(f"DELETE FROM {self.table} WHERE id = ?", (row_id,))

    def find(self, ref: str) -> list[dict[str, Any]]:
        """Rows whose id is `ref` or starts with it, or whose name is `ref`."""
        return [self._decode(r) for r in by_prefix(self.db, self.table, ref, self.name_column)]

    def get(self, row_id: str) -> dict[str, Any] | None:
        """The row with exactly this id."""
        row = self.db.execute(f"SELECT * FROM {self.table} WHERE id = ?", (row_id,)).fetchone()
        return None if row is None else self._decode(row)

    def select(self, where: str = "1", args: tuple[Any, ...] = (), order: str = "created_at"):
        """Rows matching an SQL condition (written by this package's callers, never by users)."""
        rows = self.db.execute(
            f"SELECT * FROM {self.table} WHERE {where} ORDER BY {order}", args
        ).fetchall()
        return [self._decode(r) for r in rows]

    def _encode(self, values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(
            json.dumps(v) if k in self.json_columns and v is not None else v
            for k, v in values.items()
        )

    def _decode(self, row: sqlite3.Row) -> dict[str, Any]:
        out = dict(row)
        for column in self.json_columns:
            if out.get(column) is not None:
                out[column] = json.loads(out[column])
        return out


class ConnectorRows(Rows):
    """Stored connectors (config with its secrets: the file is readable by its owner only)."""

    table = "connectors"
    json_columns = ("config",)


class WorkflowRows(Rows):
    """Stored workflows: the create body (node ids added), kind, status."""

    table = "workflows"
    json_columns = ("body",)


class KeyRows(Rows):
    """API keys: only a digest of each key is kept."""

    table = "api_keys"


class CheckRows(Rows):
    """Connection checks of stored connectors."""

    table = "connection_checks"
    name_column = None
