"""Connection checks: does a connector's endpoint answer, and do its credentials work?

`check_connector(type, config)` is what `ingestflow connectors check CONNECTOR.json` calls. Each
connector module offers `check_connection(config) -> ConnectionCheck`; it is imported only when
asked for, so that this module stays cheap to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ingestflow.errors import IngestflowError

SUCCESS = "SUCCESS"
FAILURE = "FAILURE"


@dataclass(frozen=True)
class ConnectionCheck:
    """The outcome of a connection check; `reason` says what failed (never a secret)."""

    ok: bool
    status: str
    reason: str | None = None

    @classmethod
    def success(cls) -> ConnectionCheck:
        """The endpoint answered and accepted the credentials."""
        return cls(True, SUCCESS, None)

    @classmethod
    def failure(cls, reason: str) -> ConnectionCheck:
        """The check failed, for `reason`."""
        return cls(False, FAILURE, reason)

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape the CLI prints."""
        return {"ok": self.ok, "status": self.status, "reason": self.reason}


def check_connector(
    connector_type: str, config: Mapping[str, Any] | Any, **options: Any
) -> ConnectionCheck:
    """Check a connector of `connector_type` with `config` (a raw config object or a parsed one);
    `options` go to the type's check (a vectordb's `lite_root`).

    A raw config is validated first; an invalid one fails the check with every problem listed.
    """
    from ingestflow.connectors import registry

    entry = registry.connector_type(connector_type)
    if entry is None or not entry.stored or entry.checker is None:
        return ConnectionCheck.failure(
            f"no connection check for connector type {connector_type!r}; "
            f"known types: {', '.join(sorted(registry.types_of(None)))}"
        )
    if isinstance(config, Mapping):
        checked = registry.validate_connector(
            {"name": "check", "type": entry.type, "config": dict(config)}
        )
        if not checked.valid or checked.config is None:
            problems = "; ".join(p.one_line() for p in checked.problems)
            return ConnectionCheck.failure(f"the {entry.type} config is invalid: {problems}")
        config = checked.config
    try:
        return entry.check(config, **options)
    except IngestflowError as exc:
        return ConnectionCheck.failure(str(exc))
