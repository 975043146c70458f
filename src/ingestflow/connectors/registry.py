"""The connector registry: one entry per connector type, the only list of them.

An entry names the type, its vendor aliases, its role (source or destination), its config model,
the class that reads or writes it and its connection check. Validation, the store, the runner's
connector factory and `connectors check` all read this table.
"""

from __future__ import annotations

import builtins
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ingestflow.spec.models import (
    SECRET_FIELDS,
    ConnectorCreate,
    Model,
    VectorDBConfig,
    WikiConfig,
)
from ingestflow.spec.names import name_problem
from ingestflow.spec.parsing import parse_model, shape_problems
from ingestflow.spec.problems import Problem
from ingestflow.spec.validate import url_credential_problems, wiki_auth_problems


@dataclass(frozen=True)
class ConnectorType:
    """One connector type: what it is called, what it does, how it is built and checked."""

    type: str
    role: str  # "source" | "destination"
    config_model: builtins.type[Model]
    factory: str  # "module:Class" built with the parsed config
    checker: str  # "module:function" taking the parsed config, returning a ConnectionCheck
    aliases: tuple[str, ...] = ()
    config_rules: Callable[[Any], list[Problem]] = field(default=lambda config: [])
    # Fields naming where the secrets go (endpoint) or whose they are (identity): changing one
    # of them on update needs the secrets sent again, so a stored secret never follows a new host.
    endpoint_fields: tuple[str, ...] = ()

    def build(self, config: Any, **options: Any) -> Any:
        """The Source or Destination object for a parsed config (heavy imports happen here)."""
        return _load(self.factory)(config, **options)

    def check(self, config: Any, **options: Any) -> Any:
        """Connect, authenticate and look (no crawl, no write): a ConnectionCheck."""
        return _load(self.checker)(config, **options)

    def identity(self, config: Any) -> str:
        """What the destination is, for fingerprints of processed documents (no secrets)."""
        if isinstance(config, VectorDBConfig):
            return f"{self.type}:{config.uri}:{config.db_name}:{config.collection_name}"
        return f"{self.type}:{getattr(config, 'url', '')}"


CONNECTOR_TYPES: dict[str, ConnectorType] = {
    entry.type: entry
    for entry in (
        ConnectorType(
            "wiki",
            "source",
            WikiConfig,
            "ingestflow.connectors.wiki:WikiSource",
            "ingestflow.connectors.wiki:check_connection",
            aliases=("confluence",),
            config_rules=lambda config: (
                url_credential_problems(config) + wiki_auth_problems(config)
            ),
            endpoint_fields=("url", "username"),
        ),
        ConnectorType(
            "vectordb",
            "destination",
            VectorDBConfig,
            "ingestflow.connectors.vectordb:VectorDBDestination",
            "ingestflow.connectors.vectordb_admin:check_connection",
            aliases=("milvus",),
            config_rules=url_credential_problems,
            endpoint_fields=("uri", "user"),
        ),
    )
}
_ALIASES = {alias: e.type for e in CONNECTOR_TYPES.values() for alias in (e.type, *e.aliases)}


def canonical_type(name: str) -> str:
    """The registered type a name or vendor alias stands for (unknown names returned as given)."""
    low = name.strip().lower()
    return _ALIASES.get(low, low)


def connector_type(name: str) -> ConnectorType | None:
    """The registry entry of a type name or alias, or None."""
    return CONNECTOR_TYPES.get(canonical_type(name))


def types_of(role: str | None) -> list[str]:
    """Registered types of one role (all with None)."""
    return [e.type for e in CONNECTOR_TYPES.values() if role in (None, "", e.role)]


@dataclass
class CheckedConnector:
    """The outcome of validating a connector body."""

    connector: ConnectorCreate | None
    config: Any = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """True when no rule is broken."""
        return not self.problems

    @property
    def entry(self) -> ConnectorType:
        """The registry entry (call only on a valid result)."""
        assert self.connector is not None
        entry = connector_type(self.connector.type)
        assert entry is not None
        return entry


def validate_connector(data: Any, role: str | None = None) -> CheckedConnector:
    """Check a connector create body; `role` ('source' or 'destination') narrows allowed types."""
    shape = shape_problems(data)  # bodies from an API arrive without load_json_text's checks
    if shape:
        return CheckedConnector(None, None, shape)
    connector, problems = parse_model(ConnectorCreate, data, what="connector")
    if connector is None:
        return CheckedConnector(None, None, problems)
    entry = connector_type(connector.type)
    allowed = types_of(role)
    if entry is None or entry.type not in allowed:
        aliases = [a for e in CONNECTOR_TYPES.values() if e.type in allowed for a in e.aliases]
        problems.append(
            Problem(
                "type",
                "unknown connector type" + (f" for a {role}" if role else ""),
                found=connector.type,
                allowed=allowed,
                hint="vendor spellings "
                + " and ".join(f"`{a}`" for a in aliases)
                + " are accepted too",
            )
        )
        return CheckedConnector(connector, None, problems)
    connector = connector.model_copy(update={"type": entry.type})
    problems.extend(_placeholders(connector.config))
    config, config_problems = parse_model(
        entry.config_model, connector.config, prefix=("config",), what=f"{entry.type} config"
    )
    problems.extend(config_problems)
    if not connector.name.strip():
        problems.append(
            Problem("name", "the connector name must not be empty", found=connector.name)
        )
    unprintable = name_problem("name", connector.name, "connector")
    if unprintable is not None:
        problems.append(unprintable)
    if config is not None:
        problems.extend(entry.config_rules(config))
    return CheckedConnector(connector, config, problems)


_PLACEHOLDER = re.compile(r"^\s*<[A-Za-z][A-Za-z0-9_ -]*>\s*$")


def _placeholders(config: Any) -> list[Problem]:
    """Secrets still holding a documentation placeholder such as `<API_TOKEN>`."""
    if not isinstance(config, dict):
        return []
    return [
        Problem(
            f"config.{key}",
            f"`{key}` still holds a placeholder, not a real value",
            found=value.strip(),
            hint=f"put the real {key} in place of {value.strip()} (it is stored in the "
            "workspace, and never shown in records or messages)",
        )
        for key, value in config.items()
        if key in SECRET_FIELDS and isinstance(value, str) and _PLACEHOLDER.match(value)
    ]


def _load(dotted: str) -> Any:
    module, _, attr = dotted.partition(":")
    return getattr(importlib.import_module(module), attr)
