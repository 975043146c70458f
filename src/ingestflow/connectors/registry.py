"""The connector registry: every connector type's entry, registered once, looked up by name.

Each type's module (`connectors/local.py`, `wiki.py`, `vectordb.py`) exports its `ENTRY` (a
`ConnectorType`: config model, secret fields, rules, identity, source/destination, check); the
lines at the end of this module register them. Validation, the store, the runs and `connectors
check` all read this table. Adding a connector type is one module and one `register` line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ingestflow.connectors import local, vectordb, wiki
from ingestflow.connectors.entry import ConnectorType
from ingestflow.spec.models import SECRET_FIELDS, ConnectorCreate
from ingestflow.spec.names import name_problem
from ingestflow.spec.parsing import parse_model, shape_problems
from ingestflow.spec.problems import Problem

CONNECTOR_TYPES: dict[str, ConnectorType] = {}
_ALIASES: dict[str, str] = {}


def register(entry: ConnectorType) -> ConnectorType:
    """Add a connector type; a type name or alias already taken is refused (ValueError)."""
    names = (entry.type, *entry.aliases)
    taken = [name for name in names if name in _ALIASES]
    if taken:
        raise ValueError(
            f"cannot register connector type {entry.type!r}: "
            + ", ".join(f"{name!r} already names type {_ALIASES[name]!r}" for name in taken)
            + "; give the new type a name and aliases of its own"
        )
    if any(name != name.strip().lower() for name in names) or not entry.roles:
        raise ValueError(
            f"cannot register connector type {entry.type!r}: its name and aliases must be "
            "lowercase without surrounding blanks (names are matched so), and it needs a source "
            f"or a destination (it has {entry.roles or 'neither'})"
        )
    CONNECTOR_TYPES[entry.type] = entry
    _ALIASES.update(dict.fromkeys(names, entry.type))
    SECRET_FIELDS.update(entry.secret_fields)  # masked in every record from now on
    return entry


def canonical_type(name: str) -> str:
    """The registered type a name or vendor alias stands for (unknown names returned as given)."""
    low = name.strip().lower()
    return _ALIASES.get(low, low)


def connector_type(name: str) -> ConnectorType | None:
    """The registry entry of a type name or alias, or None."""
    return CONNECTOR_TYPES.get(canonical_type(name))


def types_of(role: str | None) -> list[str]:
    """Types a stored connector of one role can have (all roles with None)."""
    return [e.type for e in CONNECTOR_TYPES.values() if e.stored and (not role or role in e.roles)]


def local_file(config: Any) -> str | None:
    """The local file a parsed connector config makes its connector open or create (a Milvus
    Lite database), or None (`ConnectorType.local_file`)."""
    for entry in CONNECTOR_TYPES.values():
        if entry.local_file is not None and isinstance(config, entry.config_model):
            return entry.local_file(config)
    return None


@dataclass
class CheckedConnector:
    """The outcome of validating a connector body."""

    connector: ConnectorCreate | None
    config: Any = None
    problems: list[Problem] = field(default_factory=list)
    type_entry: ConnectorType | None = None
    #: the role it is used in: a stored type's one role, or the role a run gave local files
    role: str = ""

    @property
    def valid(self) -> bool:
        """True when no rule is broken."""
        return not self.problems

    @property
    def entry(self) -> ConnectorType:
        """The registry entry (call only on a valid result)."""
        assert self.type_entry is not None
        return self.type_entry


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
        aliases = [a for t in allowed for a in CONNECTOR_TYPES[t].aliases]
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
    return CheckedConnector(connector, config, problems, entry, entry.role)


def local_files(role: str, **config: Any) -> CheckedConnector:
    """The `local` connector of a run's own files as a `role` (a source's `inputs`, `exclude`,
    `identity`; a destination's `output`): made by the run, never stored or validated."""
    entry = CONNECTOR_TYPES["local"]
    return CheckedConnector(None, entry.config_model(**config), [], entry, role)


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


# One line per connector type: its module exports the entry.
register(local.ENTRY)
register(wiki.ENTRY)
register(vectordb.ENTRY)
