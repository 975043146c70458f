"""`ingestflow providers check`: call every configured endpoint once and report what answers."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from ingestflow.providers.config import EMBEDDERS, Endpoint


@dataclass(frozen=True)
class CheckResult:
    """How one endpoint answered."""

    name: str
    protocol: str
    base_url: str
    model: str
    ok: bool
    detail: str  # "answered in 0.12 s", "384-dimension vectors …", or the error
    seconds: float


def check_all(endpoints: Mapping[str, Endpoint]) -> list[CheckResult]:
    """One request to each endpoint (a one-word chat, or one embedding)."""
    return [check_one(endpoint) for endpoint in endpoints.values()]


def check_one(endpoint: Endpoint) -> CheckResult:
    """Call one endpoint once."""
    from ingestflow.providers.client import ModelClient, ProviderError

    model = _model(endpoint)
    started = time.perf_counter()
    try:
        if endpoint.protocol == "local":
            detail = _check_local()
        elif endpoint.name in EMBEDDERS:
            (vector,) = ModelClient(endpoint, model).embed(["ingestflow connection check"])
            detail = f"{len(vector)}-dimension vectors"
        else:
            answer = ModelClient(endpoint, model).chat("Reply with the word OK.", max_tokens=32)
            detail = f"answered {' '.join(answer.split())[:30]!r}"
        ok = True
    except ProviderError as exc:
        ok, detail = False, str(exc)
        if "answered with no text" in detail:  # a thinking model may use its tokens to think
            ok, detail = True, "answered (with no text in 32 tokens)"
    except Exception as exc:  # an offline backend that does not load
        ok, detail = False, f"{exc.__class__.__name__}: {exc}"
    seconds = time.perf_counter() - started
    return CheckResult(
        endpoint.name, endpoint.protocol, endpoint.shown_url, model, ok, detail, seconds
    )


def _model(endpoint: Endpoint) -> str:
    if endpoint.model:
        return endpoint.model
    if endpoint.name in EMBEDDERS:
        from ingestflow.spec.catalog import catalog

        models = catalog().embed_models_of(endpoint.name)
        return models[0] if models else ""
    from ingestflow.providers.config import DEFAULT_MODELS

    return DEFAULT_MODELS.get(endpoint.name, "")


def _check_local() -> str:
    from ingestflow.providers import local

    local.load_ner()
    import shutil

    if shutil.which("tesseract") is None:
        return "spaCy NER loads; tesseract is missing (install tesseract-ocr for OCR)"
    return "offline backends load (spaCy NER, tesseract OCR)"
