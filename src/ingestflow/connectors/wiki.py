"""The `wiki` connector type (vendor spelling `confluence`): its config, rules and registry entry.

The crawl itself is `wiki_source.py`; this module stays light (pydantic only), since validating a
connector body imports it.
"""

from __future__ import annotations

import json
from urllib.parse import urlparse

from pydantic import ConfigDict, Field, SecretStr, field_validator

from ingestflow.connectors.entry import ConnectorType
from ingestflow.spec.models import Model
from ingestflow.spec.problems import Problem
from ingestflow.spec.validate import url_credential_problems


class WikiConfig(Model):
    """Config of a `wiki` source connector."""

    model_config = ConfigDict(extra="forbid", strict=True)

    url: str
    max_num_of_spaces: int = Field(default=500, gt=0)
    max_num_of_docs_from_each_space: int = Field(default=150, gt=0)
    spaces: list[str] | None = None
    extract_images: bool = False
    extract_files: bool = False
    username: str | None = None
    token: SecretStr | None = None
    password: SecretStr | None = None
    cloud: bool = False

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(
                "must be an http(s) URL with a host, e.g. https://example.atlassian.net/wiki"
            )
        return value.rstrip("/")

    @field_validator("spaces")
    @classmethod
    def _keys(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not key.strip() for key in value):
            raise ValueError("space keys must be non-empty strings")
        return value

    @property
    def auth_mode(self) -> str:
        """'api_token', 'pat' or 'basic' (call only on a validated config)."""
        if self.token is not None:
            return "api_token" if self.username else "pat"
        return "basic"


def wiki_auth_problems(config: WikiConfig) -> list[Problem]:
    """Exactly one auth mode: API token (username+token), PAT (token, cloud false), or password."""
    modes = [
        "API token: username + token (+ cloud)",
        "personal access token: token, cloud false",
        "username + password (+ cloud)",
    ]
    token = config.token.get_secret_value() if config.token else None
    password = config.password.get_secret_value() if config.password else None
    out: list[Problem] = []
    for name, value in (("username", config.username), ("token", token), ("password", password)):
        if value is not None and not value.strip():
            out.append(
                Problem(f"config.{name}", f"`{name}` is empty", hint="give a value or omit it")
            )
    if out:
        return out
    if token is not None and password is not None:
        out.append(
            Problem(
                "config",
                "give either `token` or `password`, not both: exactly one "
                "authentication mode per connector",
                found=["token", "password"],
                allowed=modes,
            )
        )
    elif token is None and password is None:
        out.append(
            Problem(
                "config",
                "no credentials: exactly one authentication mode is needed",
                found=["username"] if config.username else [],
                allowed=modes,
                hint="add `token` (with `username` for an API token) or `username` and `password`",
            )
        )
    elif password is not None and not config.username:
        out.append(Problem("config.username", "`password` needs `username`", allowed=modes))
    elif token is not None and not config.username and config.cloud:
        out.append(
            Problem(
                "config.cloud",
                "a personal access token (token without username) requires `cloud` to be false",
                found=True,
                allowed=[False],
                hint="set cloud to false, or add `username` to use an API token",
            )
        )
    return out


def _rules(config: WikiConfig) -> list[Problem]:
    return url_credential_problems(config) + wiki_auth_problems(config)


def _identity(config: WikiConfig) -> str:
    return f"wiki:{config.url}"


def _source_identity(config: WikiConfig) -> str:
    # the spaces it is told to list: a run over fewer spaces is another source for removals
    spaces = sorted(config.spaces) if config.spaces else None
    return f"{_identity(config)}:{json.dumps(spaces)}"


ENTRY = ConnectorType(
    "wiki",
    WikiConfig,
    _identity,
    source="ingestflow.connectors.wiki_source:WikiSource",
    checker="ingestflow.connectors.wiki_source:check_connection",
    aliases=("confluence",),
    config_rules=_rules,
    source_identity=_source_identity,
    endpoint_fields=("url", "username"),
)
