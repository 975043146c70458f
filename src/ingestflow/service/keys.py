"""API keys of a workspace: made here, shown once, stored only as a digest, checked in constant
time on every request."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from ingestflow.errors import NotFound
from ingestflow.service.records import KeyRecord
from ingestflow.store import Workspace, now

PREFIX = "ifk_"


class Keys:
    """Create, list, revoke and verify API keys."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def create(self, name: str | None = None) -> tuple[KeyRecord, str]:
        """A new key: its record, and the key itself (the only time it is ever available)."""
        key = PREFIX + secrets.token_urlsafe(32)
        key_id = self.ws.keys.insert(name=name or "", digest=_digest(key), hint=key[-4:])
        return self.record(key_id), key

    def list(self) -> list[KeyRecord]:
        """Every key's record (never the key): id, name, last four characters, dates."""
        return [self._record(r) for r in self.ws.keys.select()]

    def record(self, ref: str) -> KeyRecord:
        """One key's record."""
        return self._record(self._row(ref))

    def revoke(self, ref: str) -> KeyRecord:
        """Revoke a key: requests carrying it are refused from now on."""
        row = self._row(ref)
        if not row["revoked_at"]:
            self.ws.keys.update(row["id"], revoked_at=now())
        return self.record(row["id"])

    def active(self) -> int:
        """How many keys are not revoked."""
        return len(self.ws.keys.select("revoked_at IS NULL"))

    def verify(self, presented: str | None) -> bool:
        """True when `presented` is an active key."""
        return self.identify(presented) is not None

    def identify(self, presented: str | None) -> str | None:
        """The id of the active key `presented` is, else None; every stored digest is compared
        in constant time, so the answer's timing says nothing about which key came close."""
        if not presented:
            return None
        wanted = _digest(presented)
        found = None
        for row in self.ws.keys.select("revoked_at IS NULL"):
            if hmac.compare_digest(row["digest"], wanted):
                found = row["id"]
        return found

    def is_active(self, key_id: str) -> bool:
        """True while the key with this id exists and is not revoked."""
        row = self.ws.keys.get(key_id)
        return row is not None and not row["revoked_at"]

    def _row(self, ref: str) -> dict[str, Any]:
        rows = self.ws.keys.find(ref)
        if len(rows) != 1:
            raise NotFound(
                f"key {ref!r} "
                + ("is ambiguous" if rows else "not found; `ingestflow keys list` shows the keys")
            )
        return rows[0]

    @staticmethod
    def _record(row: dict[str, Any]) -> KeyRecord:
        return KeyRecord(
            id=row["id"],
            name=row["name"],
            ends_with=row["hint"],
            created_at=row["created_at"],
            revoked_at=row["revoked_at"],
        )


def _digest(key: str) -> str:
    # keys are 256 random bits: a plain SHA-256 is enough (no password stretching needed)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
