"""One client for a model server: chat (with images) and embeddings, over the `openai` or the
`anthropic` protocol, with bounded retries and bounded concurrency.

The official `openai` and `anthropic` client libraries make the requests (their own retries off:
one retry policy here, for both). Timeouts, connection failures, HTTP 429 (waiting what its
`Retry-After` says, at most `MAX_RETRY_AFTER` seconds) and 5xx are retried with exponential
backoff, `ATTEMPTS` tries in all (tenacity); anything else, or the last failure, raises
`ProviderError` with one line naming the provider and what it answered. The API key never
appears in an error (it is scrubbed from whatever the server echoed).

The endpoint's timeout bounds each try as a whole (connect, send, and the whole answer), not each
read: a server that trickles its answer fails the try when the timeout is up (`deadline`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, TypeVar

from ingestflow.errors import DocumentError
from ingestflow.providers.config import Endpoint

T = TypeVar("T")
R = TypeVar("R")

#: Tries per request, the first included.
ATTEMPTS = 4
#: Backoff between tries without a Retry-After: BACKOFF, 2×, 4× … seconds, at most BACKOFF_MAX.
BACKOFF = 0.5
BACKOFF_MAX = 10.0
#: A longer Retry-After is not waited for: the request fails instead.
MAX_RETRY_AFTER = 60.0
#: Output tokens asked for by default (the anthropic protocol requires a number).
DEFAULT_MAX_TOKENS = 2048

_LIMITS: dict[str, threading.BoundedSemaphore] = {}
_LIMITS_LOCK = threading.Lock()


class ProviderError(DocumentError):
    """A model server failed, or answered something unusable, for one document."""


@dataclass(frozen=True)
class Image:
    """An image sent with a prompt."""

    base64: str
    mime_type: str = "image/png"


class ModelClient:
    """Requests to one endpoint; safe to share between threads."""

    def __init__(self, endpoint: Endpoint, model: str | None = None) -> None:
        self.endpoint = endpoint
        self.model = endpoint.model or model or ""
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        """How errors name this endpoint: provider, protocol, URL (never the key)."""
        e = self.endpoint
        return f"{e.name} ({e.protocol} protocol at {e.shown_url})"

    # --- requests -------------------------------------------------------------------------------
    def chat(
        self,
        prompt: str,
        images: Sequence[Image] = (),
        system: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> str:
        """The model's text answer to `prompt` (with `images` before it); ProviderError when
        the server fails or the answer has no text."""
        if self.endpoint.protocol == "anthropic":
            answer = self._call(lambda: self._anthropic(prompt, images, system, max_tokens))
        else:
            answer = self._call(lambda: self._openai_chat(prompt, images, system, max_tokens))
        if not answer or not answer.strip():
            raise ProviderError(f"{self.label} answered with no text (model {self.model!r})")
        return answer

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text (the openai protocol's embeddings API)."""
        data = self._call(
            lambda: self._sdk().embeddings.create(model=self.model, input=list(texts))
        )
        try:
            vectors = [list(item.embedding) for item in sorted(data.data, key=lambda d: d.index)]
        except (AttributeError, TypeError) as exc:
            raise ProviderError(f"{self.label}: unusable embeddings answer ({exc})") from None
        if len(vectors) != len(texts):
            raise ProviderError(
                f"{self.label}: asked for {len(texts)} embeddings, got {len(vectors)}"
            )
        return vectors

    # --- protocols ------------------------------------------------------------------------------
    def _sdk(self) -> Any:
        """The official client of the endpoint's protocol, made on first use."""
        with self._lock:
            if self._client is None:
                if self.endpoint.protocol == "anthropic":
                    self._client = self._new_anthropic()
                else:
                    self._client = self._new_openai()
            return self._client

    def _new_openai(self) -> Any:
        import openai

        return openai.OpenAI(
            base_url=self.endpoint.base_url,
            api_key=self._key() or "not-needed",
            max_retries=0,
            timeout=self.endpoint.timeout,
            http_client=self._http_client(),
        )

    def _new_anthropic(self) -> Any:
        import warnings

        import anthropic

        # the client warns about model names it thinks retired; a local server's names are its
        # own, and the workflow's model list is checked by validation
        warnings.filterwarnings("ignore", message="The model .* is deprecated")
        return anthropic.Anthropic(
            base_url=self.endpoint.base_url,
            api_key=self._key() or "not-needed",
            max_retries=0,
            timeout=self.endpoint.timeout,
            http_client=self._http_client(),
        )

    def _http_client(self) -> Any:
        from ingestflow.providers.deadline import http_client

        return http_client(self.endpoint.timeout, self.endpoint.concurrency)

    def _openai_chat(
        self, prompt: str, images: Sequence[Image], system: str | None, max_tokens: int
    ) -> str:
        content: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": f"data:{i.mime_type};base64,{i.base64}"}}
            for i in images
        ]
        content.append({"type": "text", "text": prompt})
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        if system:
            messages.insert(0, {"role": "system", "content": system})
        client = self._sdk()
        try:
            response = client.chat.completions.create(
                model=self.model, messages=messages, max_tokens=max_tokens
            )
        except Exception as exc:  # newer hosted models take max_completion_tokens instead
            if getattr(exc, "status_code", None) != 400 or "max_tokens" not in str(exc):
                raise
            response = client.chat.completions.create(
                model=self.model, messages=messages, max_completion_tokens=max_tokens
            )
        try:
            return response.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError) as exc:
            raise ProviderError(f"{self.label}: unusable chat answer ({exc})") from None

    def _anthropic(
        self, prompt: str, images: Sequence[Image], system: str | None, max_tokens: int
    ) -> str:
        content: list[dict[str, Any]] = [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": i.mime_type, "data": i.base64},
            }
            for i in images
        ]
        content.append({"type": "text", "text": prompt})
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": content}],
        }
        if system:
            kwargs["system"] = system
        response = self._sdk().messages.create(**kwargs)
        try:
            return "".join(b.text for b in response.content if getattr(b, "type", "") == "text")
        except (AttributeError, TypeError) as exc:
            raise ProviderError(f"{self.label}: unusable messages answer ({exc})") from None

    # --- retries and errors ---------------------------------------------------------------------
    def _call(self, request: Callable[[], T]) -> T:
        from tenacity import Retrying, retry_if_exception, stop_after_attempt

        from ingestflow.providers.deadline import within

        limit = _limit(self.endpoint)
        try:
            self._sdk()  # made before the deadline starts: importing the library takes ~1 s
            for attempt in Retrying(
                stop=stop_after_attempt(ATTEMPTS),
                wait=_wait,
                retry=retry_if_exception(_transient),
                reraise=True,
            ):
                # the deadline starts once a slot is free: waiting for one is not the server's
                with attempt, limit, within(self.endpoint.timeout):
                    return request()
        except ProviderError:
            raise
        except Exception as exc:  # every client error becomes one line naming the provider
            if _timed_out(exc):
                raise ProviderError(f"{self.label}: {self._too_slow()}") from None
            raise ProviderError(f"{self.label}: {describe(exc, self._key())}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _too_slow(self) -> str:
        e = self.endpoint
        return (
            f"no complete answer within {e.timeout:g} s ({ATTEMPTS} tries); if the server "
            f"needs longer, raise {e.timeout_variable} (seconds per request, now {e.timeout:g})"
        )

    def _key(self) -> str | None:
        key = self.endpoint.api_key
        return key.get_secret_value() if key else None


class Skipped(Exception):
    """An item not run because an earlier one had failed (the document fails anyway)."""


def map_bounded(fn: Callable[[T], R], items: Iterable[T], limit: int) -> list[R | BaseException]:
    """`fn` over `items` with at most `limit` running at once, in order; an item whose call
    raised has the exception in its place. After the first failure the items not yet started
    are skipped (`Skipped`): one failure fails the document, so the rest need not wait for a
    server that times out."""
    items = list(items)
    if not items:
        return []
    failed = threading.Event()

    def safe(item: T) -> R | BaseException:
        if failed.is_set():
            return Skipped("skipped after an earlier failure")
        try:
            return fn(item)
        except Exception as exc:
            failed.set()
            return exc

    if limit <= 1 or len(items) == 1:
        return [safe(item) for item in items]
    # Daemon threads, not a ThreadPoolExecutor: a caller stopped by Ctrl-C (a run in this
    # process) must not wait for requests to a server that never answers, neither here nor
    # when the interpreter exits (it joins an executor's threads, never daemon threads).
    results: list[R | BaseException] = [Skipped("not run")] * len(items)
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(items)):
        todo.put(index)

    def work() -> None:
        with suppress(queue.Empty):
            while True:
                index = todo.get_nowait()
                results[index] = safe(items[index])

    threads = [
        threading.Thread(target=work, name=f"ingestflow-request-{n}", daemon=True)
        for n in range(min(limit, len(items)))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()  # interrupted by Ctrl-C in the main thread
    return results


def first_error(results: Iterable[object]) -> BaseException | None:
    """The failure among `map_bounded`'s results (not the items skipped after it)."""
    errors = [r for r in results if isinstance(r, BaseException)]
    return next((e for e in errors if not isinstance(e, Skipped)), errors[0] if errors else None)


def describe(exc: BaseException, secret: str | None = None) -> str:
    """One line for a client exception: the HTTP status and the server's message if any
    (`secret` scrubbed out before the line is cut to length). A timeout never comes here: the
    caller names the endpoint's own timeout variable."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        body = getattr(exc, "body", None)
        message = body.get("error", body) if isinstance(body, dict) else (body or str(exc))
        if isinstance(message, dict):
            message = message.get("message", message)
        text = f"HTTP {status}: {message}"
    elif exc.__class__.__name__ == "APIConnectionError":
        text = f"cannot connect ({exc.__cause__ or exc})"
    else:
        text = f"{exc.__class__.__name__}: {exc}"
    text = str(text)
    if secret:
        text = text.replace(secret, "***")
    return " ".join(text.split())[:400]


def _timed_out(exc: BaseException) -> bool:
    """The request ran out of time (either client's timeout, or httpx2's)."""
    return exc.__class__.__name__ in ("APITimeoutError", "TimeoutException", "ReadTimeout")


def _transient(exc: BaseException) -> bool:
    """Worth another try: a timeout, a lost connection, 429, or a 5xx."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        if status != 429 and status < 500:
            return False
        after = _retry_after(exc)  # a longer wait than MAX_RETRY_AFTER: fail now instead
        return after is None or after <= MAX_RETRY_AFTER
    return exc.__class__.__name__ in ("APITimeoutError", "APIConnectionError")


def _wait(state: Any) -> float:
    exc = state.outcome.exception() if state.outcome else None
    after = _retry_after(exc) if exc is not None else None
    if after is not None:
        return min(after, MAX_RETRY_AFTER)
    return min(BACKOFF_MAX, BACKOFF * 2 ** (state.attempt_number - 1))


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _limit(endpoint: Endpoint) -> threading.BoundedSemaphore:
    """The process-wide bound on requests in flight to one endpoint."""
    key = f"{endpoint.name} {endpoint.base_url} {endpoint.concurrency}"
    with _LIMITS_LOCK:
        if key not in _LIMITS:
            _LIMITS[key] = threading.BoundedSemaphore(endpoint.concurrency)
        return _LIMITS[key]
