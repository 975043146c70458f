"""How the `wiki` source talks HTTP to a Confluence instance, and how it explains what went wrong.

One `requests` session carries the auth of the config (API token and password: HTTP Basic;
personal access token: Bearer) and a urllib3 `Retry`: 429 (honouring Retry-After, capped), 5xx,
timeouts and refused connections are retried with bounded exponential backoff (`HttpPolicy`). The
atlassian-python-api v1 REST class is built over that session whatever `cloud` says (its Cloud
class lacks `get_page_by_id` and the restriction calls); v1 list calls are read page by page
(`paged`). A failure becomes one plain sentence (`describe`, `connect_failure`): the HTTP status
and its retries, a timeout, a refused connection, or a body that is not the expected JSON
(`Malformed`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout
from urllib3.util import Retry

from ingestflow.connectors import wiki_permissions as perms

if TYPE_CHECKING:
    from atlassian import ConfluenceServer

    from ingestflow.connectors.wiki import WikiConfig

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_AUTH_LABELS = {
    "api_token": "API token (username + token)",
    "pat": "personal access token",
    "basic": "username + password",
}
_STATUS_WORDS = {401: "unauthorized", 403: "forbidden", 404: "not found", 429: "too many requests"}


@dataclass(frozen=True)
class HttpPolicy:
    """How the source talks HTTP: timeouts, retries and listing page size."""

    timeout: float = 30.0  # seconds to connect, and to wait for each read
    retries: int = 4  # retries after the first try, for 429, 5xx, timeouts, refused connections
    backoff_factor: float = 0.5  # sleep factor * 2**(n-1) between retries (first retry: none)
    backoff_max: float = 30.0
    retry_after_max: int = 120  # a longer Retry-After is cut to this
    page_size: int = 50  # `limit` asked of list calls; the server may cap it

    def retry(self) -> Retry:
        """The urllib3 retry rule mounted on the session."""
        return Retry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            other=0,
            allowed_methods=frozenset({"GET", "HEAD"}),
            status_forcelist=RETRY_STATUSES,
            backoff_factor=self.backoff_factor,
            backoff_max=self.backoff_max,
            respect_retry_after_header=True,
            retry_after_max=self.retry_after_max,
            raise_on_status=False,
        )


class Malformed(ValueError):
    """The wiki answered with something that is not the expected JSON."""


def open_client(
    config: WikiConfig, policy: HttpPolicy
) -> tuple[requests.Session, ConfluenceServer]:
    """A retrying session with the config's auth, and the atlassian v1 REST client over it."""
    from atlassian import ConfluenceServer

    session = requests.Session()
    adapter = HTTPAdapter(max_retries=policy.retry())
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    auth: dict[str, Any]
    if config.auth_mode == "pat":
        auth = {"token": config.token.get_secret_value() if config.token else None}
    else:
        secret = config.token if config.auth_mode == "api_token" else config.password
        auth = {
            "username": config.username,
            "password": secret.get_secret_value() if secret else None,
        }
    client = ConfluenceServer(
        config.url,
        cloud=config.cloud,
        session=session,
        backoff_and_retry=False,
        retry_with_header=False,  # the session's Retry honours Retry-After
        **auth,
    )
    client.timeout = policy.timeout  # the library truncates it to whole seconds
    return session, client


def paged(fetch: Callable[[int, int], Any], total: int, page_size: int) -> Iterator[dict[str, Any]]:
    """Items of a v1 list call, page by page (`_links.next` says there is more), up to total."""
    start = seen = 0
    while seen < total:
        body = fetch(start, min(page_size, total - seen))
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise Malformed("a list response is not a JSON object with `results`")
        results = body["results"]
        for item in results[: total - seen]:
            if isinstance(item, dict):
                yield item
        seen += len(results)
        start += len(results)
        if not results or not (body.get("_links") or {}).get("next"):
            return


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries, if any."""
    response = getattr(exc, "response", None)
    if response is None:  # atlassian's ApiError keeps the HTTPError in `reason`
        response = getattr(getattr(exc, "reason", None), "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _timed_out(exc: BaseException) -> bool:
    if isinstance(exc, requests.Timeout):
        return True
    cause = getattr(exc.args[0] if exc.args else None, "reason", None)
    # urllib3's NewConnectionError (refused, unknown host) subclasses its TimeoutError
    return isinstance(cause, Urllib3Timeout) and not isinstance(cause, NewConnectionError)


def _connection_cause(exc: BaseException) -> str:
    match = re.search(r"\[Errno -?\d+\] [^'\")]+", str(exc))
    return match.group(0).strip() if match else type(exc).__name__


def describe(exc: BaseException, policy: HttpPolicy) -> str:
    """What went wrong with a call, in words (status and retries, timeout, connection, body)."""
    status = http_status(exc)
    if status is not None:
        word = _STATUS_WORDS.get(status)
        text = f"HTTP {status}" + (f" ({word})" if word else "")
        retried = status in RETRY_STATUSES
        return text + (f" after {policy.retries} retries" if retried else "")
    if _timed_out(exc):
        return f"no answer within {policy.timeout:g}s ({policy.retries + 1} tries)"
    if isinstance(exc, requests.ConnectionError):
        return f"connection failed: {_connection_cause(exc)}"
    if isinstance(exc, Malformed | perms.PermissionsUnreadable):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def connect_failure(exc: BaseException, url: str, auth_mode: str, policy: HttpPolicy) -> str:
    """Why the first call to the wiki at `url` failed, with what to check."""
    status = http_status(exc)
    mode = _AUTH_LABELS.get(auth_mode, auth_mode)
    if status == 401:
        return (
            f"the wiki at {url} rejected the credentials (HTTP 401, auth mode: {mode}); "
            "check `username` and `token`/`password`"
        )
    if status == 403:
        return f"the wiki at {url} accepted the credentials ({mode}) but may not list spaces"
    if status == 404:
        return (
            f"no wiki REST API at {url}/rest/api (HTTP 404); check `url` (a Cloud site's "
            "URL ends in /wiki)"
        )
    return f"cannot use the wiki at {url}: {describe(exc, policy)}"
