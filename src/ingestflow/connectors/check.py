"""Connection checks: does a connector's endpoint answer, and do its credentials work?

`check_connector(type, config)` is what `ingestflow connectors check CONNECTOR.json` calls. Each
connector module offers `check_connection(config) -> ConnectionCheck`; it is imported only when
asked for, so that this module stays cheap to import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ingestflow.errors import IngestflowError
from ingestflow.spec.catalog import CONNECTOR_TYPE_ALIASES

SUCCESS = "SUCCESS"
FAILURE = "FAILURE"

# connector type -> (module, function) offering `check_connection(parsed_config)`
CHECKERS: dict[str, tuple[str, str]] = {
    "wiki": ("ingestflow.connectors.wiki", "check_connection"),
    "vectordb": ("ingestflow.connectors.vectordb_admin", "check_connection"),
}


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


def check_connector(connector_type: str, config: Mapping[str, Any] | Any) -> ConnectionCheck:
    """Check a connector of `connector_type` with `config` (a raw config object or a parsed one).

    A raw config is validated first; an invalid one fails the check with every problem listed.
    """
    kind = connector_type.strip().lower()
    kind = CONNECTOR_TYPE_ALIASES.get(kind, kind)
    if kind not in CHECKERS:
        return ConnectionCheck.failure(
            f"no connection check for connector type {connector_type!r}; "
            f"known types: {', '.join(sorted(CHECKERS))}"
        )
    if isinstance(config, Mapping):
        from ingestflow.spec.validate import validate_connector

        checked = validate_connector({"name": "check", "type": kind, "config": dict(config)})
        if not checked.valid or checked.config is None:
            problems = "; ".join(p.one_line() for p in checked.problems)
            return ConnectionCheck.failure(f"the {kind} config is invalid: {problems}")
        config = checked.config
    module_name, function_name = CHECKERS[kind]
    try:
        checker: Callable[[Any], ConnectionCheck] = getattr(
            importlib.import_module(module_name), function_name
        )
    except (ImportError, AttributeError):
        return ConnectionCheck.failure(f"the {kind} connector has no connection check yet")
    try:
        return checker(config)
    except IngestflowError as exc:
        return ConnectionCheck.failure(str(exc))
