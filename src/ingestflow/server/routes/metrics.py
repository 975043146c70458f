"""`GET /metrics`: the workspace's jobs for Prometheus, behind the same API keys as the API.

Prometheus sends a key as `Authorization: Bearer <key>` (its scrape config's `authorization`
block); the API's own key headers work too.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ingestflow.server.deps import ServiceDep, require_key

router = APIRouter()
bearer = HTTPBearer(auto_error=False, scheme_name="MetricsBearer")


def require_key_or_bearer(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)] = None,
) -> None:
    """401 unless the request carries an active key, in a key header or as a bearer token."""
    presented = credentials.credentials if credentials is not None else None
    require_key(
        request,
        request.headers.get("service-api-key") or presented,
        request.headers.get("unstructured-api-key"),
    )


@router.get(
    "/metrics",
    dependencies=[Depends(require_key_or_bearer)],
    response_class=Response,
    summary="Prometheus metrics: jobs by status, documents, pages, node time, failures.",
)
def metrics(service: ServiceDep) -> Response:
    """The workspace's metrics in Prometheus' text format."""
    from ingestflow.service.metrics import CONTENT_TYPE

    return Response(service.metrics(), media_type=CONTENT_TYPE)
