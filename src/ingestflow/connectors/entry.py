"""What a connector type declares: one `ConnectorType` per type, exported by its own module.

A connector module (`connectors/local.py`, `wiki.py`, `vectordb.py`) defines its config model,
its validation rules, its identity and an `ENTRY`; `connectors/registry.py` registers the entries.
The source, destination and check are named by import path ("module:attr"), so that validating
a connector body never imports an HTTP or database client.
"""

from __future__ import annotations

import builtins
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, SecretStr

from ingestflow.spec.problems import Problem

ROLES = ("source", "destination")


def _no_rules(config: Any) -> list[Problem]:
    return []


@dataclass(frozen=True)
class ConnectorType:
    """One connector type: its names, config, rules, identity, and how it is built and checked."""

    type: str
    config_model: builtins.type[BaseModel]
    #: Where a config's data is: no secrets, stable across runs (it keys processed documents).
    identity: Callable[[Any], str]
    source: str | None = None  # "module:Class" built with the parsed config
    destination: str | None = None  # "module:Class" built with the parsed config
    checker: str | None = None  # "module:function" taking the parsed config -> ConnectionCheck
    aliases: tuple[str, ...] = ()
    config_rules: Callable[[Any], list[Problem]] = _no_rules
    #: A source's identity with what its config lets it list (a wiki's spaces): a run that lists
    #: less by configuration is another source for removals (`runner.deletions`). None: what
    #: it lists is all of `identity`. It may answer None (nothing to remove by: uploads).
    source_identity: Callable[[Any], str | None] | None = None
    #: Fields naming where the secrets go (endpoint) or whose they are (identity): changing one
    #: of them on update needs the secrets sent again, so a stored secret never follows a new host.
    endpoint_fields: tuple[str, ...] = ()
    #: False for a type the run itself makes (local files): no stored connector has it.
    stored: bool = True
    #: The local file a config makes the connector open or create (Milvus Lite's database), or
    #: None; a type that may name one declares it (the API server confines such files to its
    #: folders: `service.lite_paths`).
    local_file: Callable[[Any], str | None] | None = None

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles this type can take: source, destination or both."""
        return tuple(r for r in ROLES if getattr(self, r) is not None)

    @property
    def role(self) -> str:
        """The one role of a stored connector type (the store keeps it beside the connector)."""
        return self.roles[0]

    @property
    def secret_fields(self) -> tuple[str, ...]:
        """The config fields holding secrets: those typed `SecretStr` in the config model."""
        return tuple(
            name
            for name, info in self.config_model.model_fields.items()
            if _holds_secret(info.annotation)
        )

    def build(self, config: Any, role: str, **options: Any) -> Any:
        """The Source or Destination object for a parsed config (heavy imports happen here)."""
        dotted = getattr(self, role, None) if role in ROLES else None
        if dotted is None:
            raise ValueError(
                f"a {self.type} connector cannot be a {role}: it is a " + " or a ".join(self.roles)
            )
        return _load(dotted)(config, **options)

    def check(self, config: Any, **options: Any) -> Any:
        """Connect, authenticate and look (no crawl, no write): a ConnectionCheck."""
        if self.checker is None:
            raise ValueError(f"the {self.type} connector type has no connection check")
        return _load(self.checker)(config, **options)

    def source_key(self, config: Any) -> str | None:
        """A source's identity with what it lists: the key of what an incremental run removes."""
        if self.source_identity is not None:
            return self.source_identity(config)
        return self.identity(config)


def _holds_secret(annotation: Any) -> bool:
    """True for `SecretStr` and `SecretStr | None`."""
    return annotation is SecretStr or SecretStr in getattr(annotation, "__args__", ())


def _load(dotted: str) -> Any:
    module, _, attr = dotted.partition(":")
    return getattr(importlib.import_module(module), attr)
