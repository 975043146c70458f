"""Model-server endpoints, configured by environment variables.

One set of variables per provider (the enrichment, VLM and contextual-chunking providers
`PROVIDER_A` … `PROVIDER_D`) and per remote embedder (`AZURE_OPENAI`, `BEDROCK`, `IBM`,
`TOGETHERAI`, `VOYAGEAI`):

- `INGESTFLOW_<NAME>_BASE_URL` (required): the server, as the official client takes it — for the
  `openai` protocol with its version path (`http://127.0.0.1:8000/v1`), for `anthropic` without
  (`http://127.0.0.1:8080`);
- `INGESTFLOW_<NAME>_API_KEY`: sent as the protocol's key header (a node's `provider_api_key`
  overrides it);
- `INGESTFLOW_<NAME>_MODEL`: the model name sent instead of the workflow's (a local server serves
  its own names);
- `INGESTFLOW_<NAME>_PROTOCOL`: `openai`, `anthropic` or `local` (the offline backends: NER with
  spaCy, OCR with tesseract). Default: `anthropic` for PROVIDER_A, `openai` for the others;
- `INGESTFLOW_<NAME>_CONCURRENCY`: requests in flight at once per worker (default 8);
- `INGESTFLOW_<NAME>_TIMEOUT`: seconds per request, the whole answer included (default 60).

Vendor spellings name the same provider (`INGESTFLOW_OPENAI_BASE_URL` is PROVIDER_C's); all of
a provider's variables are read with one spelling, SPEC.md's when its BASE_URL is set. `bedrock`
names the embedder only (PROVIDER_B is configured as PROVIDER_B). Contextual chunking uses
PROVIDER_A unless `INGESTFLOW_CONTEXT_PROVIDER` names another.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import SecretStr

from ingestflow.errors import EnvironmentProblem
from ingestflow.spec.catalog import VENDOR_NAMES

#: The chat providers, in SPEC.md's spelling (`provider_a` …).
CHAT_PROVIDERS = ("provider_a", "provider_b", "provider_c", "provider_d")
#: The model named in requests when the endpoint does not set one (INGESTFLOW_<P>_MODEL).
DEFAULT_MODELS = {
    "provider_a": "claude-sonnet-4-20250514",
    "provider_b": "us.anthropic.claude-sonnet-4-20250514-v1:0",
    "provider_c": "gpt-4o",
    "provider_d": "gemini-2.0-flash-001",
}
#: Remote embedder subtypes.
EMBEDDERS = ("azure_openai", "bedrock", "ibm", "togetherai", "voyageai")
#: The order in which provider `auto` picks a configured provider.
AUTO_ORDER = ("provider_a", "provider_c", "provider_b", "provider_d")
PROTOCOLS = ("openai", "anthropic", "local")
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Endpoint:
    """Where and how to reach one provider's model server."""

    name: str  # "provider_c", "voyageai" …
    base_url: str
    protocol: str = "openai"
    api_key: SecretStr | None = None
    model: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT
    prefix: str = ""  # what its variables were read with ("INGESTFLOW_OPENAI_"); "": SPEC.md's

    @property
    def shown_url(self) -> str:
        """The base URL for messages: without credentials or a query string."""
        return display_url(self.base_url)

    @property
    def variable(self) -> str:
        """The environment variable that configures this endpoint's URL (the one it was read
        from: a vendor's alias, INGESTFLOW_OPENAI_BASE_URL, when that was set)."""
        return f"{self.prefix}BASE_URL" if self.prefix else base_url_variable(self.name)

    @property
    def timeout_variable(self) -> str:
        """The environment variable that sets this endpoint's timeout."""
        return f"{self.prefix or f'INGESTFLOW_{env_name(self.name)}_'}TIMEOUT"

    def with_key(self, key: SecretStr | None) -> Endpoint:
        """This endpoint with a node's own key (`provider_api_key`) when it has one."""
        if key is None or not key.get_secret_value():
            return self
        from dataclasses import replace

        return replace(self, api_key=key)


def display_url(url: str) -> str:
    """`url` without a user, password or query (either may carry a secret)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an unparsable URL>"
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def env_name(name: str) -> str:
    """`provider_c` -> `PROVIDER_C`, `azure_openai` -> `AZURE_OPENAI`."""
    return name.upper()


def base_url_variable(name: str) -> str:
    """The variable a user sets to configure `name`'s endpoint."""
    return f"INGESTFLOW_{env_name(name)}_BASE_URL"


def endpoints_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Endpoint]:
    """Every endpoint the environment configures, keyed by provider or embedder name; a bad
    setting (unknown protocol, a non-number) is an EnvironmentProblem naming the variable."""
    env = os.environ if environ is None else environ
    found: dict[str, Endpoint] = {}
    for name in (*CHAT_PROVIDERS, *EMBEDDERS):
        prefix = _prefix(env, name)

        def get(key: str, prefix: str = prefix) -> tuple[str, str | None]:
            value = env.get(prefix + key)
            return prefix + key, (value.strip() or None) if value is not None else None

        _, base_url = get("BASE_URL")
        if not base_url:
            continue
        variable, protocol = get("PROTOCOL")
        protocol = (protocol or ("anthropic" if name == "provider_a" else "openai")).lower()
        if protocol not in PROTOCOLS:
            raise EnvironmentProblem(
                f"{variable}={protocol!r} is not a protocol ingestflow speaks; use one of "
                f"{', '.join(PROTOCOLS)}"
            )
        if name in EMBEDDERS and protocol != "openai":
            raise EnvironmentProblem(
                f"{variable}={protocol!r}: remote embedders speak the openai protocol's "
                "embeddings API; set it to openai"
            )
        _, key = get("API_KEY")
        _, model = get("MODEL")
        found[name] = Endpoint(
            name=name,
            base_url=base_url.rstrip("/"),
            protocol=protocol,
            api_key=SecretStr(key) if key else None,
            model=model,
            concurrency=int(_number(get("CONCURRENCY"), DEFAULT_CONCURRENCY, minimum=1)),
            timeout=_number(get("TIMEOUT"), DEFAULT_TIMEOUT, minimum=0.1),
            prefix=prefix,
        )
    return found


def _prefix(env: Mapping[str, str], name: str) -> str:
    """The one prefix all of a provider's variables are read from: SPEC.md's name when its
    BASE_URL is set, else the vendor spelling's (never one that names an embedder: `bedrock`
    is an embedder subtype, so PROVIDER_B has no vendor-spelled variables)."""
    own = f"INGESTFLOW_{env_name(name)}_"
    vendor = VENDOR_NAMES.get(name)
    if vendor is None or vendor in EMBEDDERS or (env.get(own + "BASE_URL") or "").strip():
        return own
    return f"INGESTFLOW_{vendor.upper()}_"


def context_provider(environ: Mapping[str, str] | None = None) -> str:
    """The provider contextual chunking uses (`INGESTFLOW_CONTEXT_PROVIDER`, default A)."""
    env = os.environ if environ is None else environ
    value = (env.get("INGESTFLOW_CONTEXT_PROVIDER") or "provider_a").strip().lower()
    from ingestflow.spec.catalog import canonical_provider

    value = canonical_provider(value)
    if value not in CHAT_PROVIDERS:
        raise EnvironmentProblem(
            f"INGESTFLOW_CONTEXT_PROVIDER={value!r} is not a provider; use one of "
            f"{', '.join(CHAT_PROVIDERS)} (or a vendor spelling such as openai)"
        )
    return value


def resolve(provider: str, endpoints: Mapping[str, Endpoint]) -> Endpoint | None:
    """The endpoint of `provider` (`auto`: the first configured in A, C, B, D order)."""
    if provider == "auto":
        return next((endpoints[p] for p in AUTO_ORDER if p in endpoints), None)
    return endpoints.get(provider)


#: Seconds a precheck waits for a model server to accept a connection.
CONNECT_TIMEOUT = 3.0


def unreachable(what: str, endpoint: Endpoint) -> EnvironmentProblem | None:
    """The precheck error of a node whose model server accepts no connection (nothing listens
    at its host and port, or the host is unknown): found before any document is read, not
    after each one's partitioning. None when a connection is made (nothing is sent)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint.base_url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        return None  # the client reports a malformed URL in its own words
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT):
            return None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
    return EnvironmentProblem(
        f"{what}: no model server answers at {endpoint.shown_url} ({endpoint.name}, "
        f"{endpoint.protocol} protocol): cannot connect ({reason}); start it, or set "
        f"{endpoint.variable} to where it runs (see the README section on model servers)"
    )


def missing(what: str, provider: str) -> EnvironmentProblem:
    """The precheck error of a node whose provider has no endpoint."""
    name = "provider_a" if provider == "auto" else provider
    return EnvironmentProblem(
        f"{what} needs a model server for {provider}, and none is configured; set "
        f"{base_url_variable(name)} to the server's URL (and, if it needs one, "
        f"INGESTFLOW_{env_name(name)}_API_KEY); see the README section on model servers"
    )


def _number(found: tuple[str, str | None], default: float, minimum: float) -> float:
    variable, value = found
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise EnvironmentProblem(f"{variable}={value!r} is not a number") from None
    if not math.isfinite(number) or number > 1e6:
        raise EnvironmentProblem(f"{variable}={value!r} is not a usable number")
    if number < minimum:
        raise EnvironmentProblem(f"{variable}={value!r} must be at least {minimum:g}")
    return number
