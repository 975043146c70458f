"""What every route shares: the per-request Service, the API key check, both slash spellings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request, Security
from fastapi.security import APIKeyHeader

from ingestflow.service import LitePaths, Service, UploadLimits
from ingestflow.service.records import WorkflowInformation

service_key = APIKeyHeader(name="service-api-key", auto_error=False, scheme_name="ServiceApiKey")
sdk_key = APIKeyHeader(name="unstructured-api-key", auto_error=False, scheme_name="SdkApiKey")


@dataclass
class ServerState:
    """What the app holds between requests."""

    workspace: Path
    limits: UploadLimits = field(default_factory=UploadLimits)
    lite: LitePaths = field(default_factory=LitePaths)
    launcher: Any = None
    schedules: Any = None

    def submitted(self) -> None:
        """A job was recorded: let the launcher start it now."""
        if self.launcher is not None:
            self.launcher.wake()

    def workflow_changed(self, workflow_id: str, record: WorkflowInformation | None) -> None:
        """The service changed a workflow (`record`; None: deleted): its schedule follows."""
        if self.schedules is not None:
            self.schedules.sync(record, workflow_id)


def state(request: Request) -> ServerState:
    """The app's state."""
    return request.app.state.ingestflow


def service(request: Request) -> Iterator[Service]:
    """A Service on the app's workspace for one request (checked whole at start-up), whose
    workflow changes the schedules follow."""
    held = state(request)
    with Service(
        held.workspace, lite=held.lite, check=False, on_workflow_change=held.workflow_changed
    ) as opened:
        yield opened


def require_key(
    request: Request,
    key_a: Annotated[str | None, Security(service_key)] = None,
    key_b: Annotated[str | None, Security(sdk_key)] = None,
) -> None:
    """401 unless the request carries an active key (`service-api-key` or
    `unstructured-api-key`, the header the official SDK sends)."""
    with Service(state(request).workspace, check=False) as opened:
        ok = opened.keys.verify(key_a) or opened.keys.verify(key_b)
    if not ok:
        raise HTTPException(
            401,
            "missing or wrong API key: send it in the `service-api-key` header "
            "(`ingestflow keys create` makes one)",
        )


ServiceDep = Annotated[Service, Depends(service)]
StateDep = Annotated[ServerState, Depends(state)]


def both(router: APIRouter, method: str, path: str, **kwargs: Any) -> Callable[[Any], Any]:
    """Register a route at `path` and at `path/` (no redirect); only the first is documented.
    A record's unset fields stay out of the JSON (a job's `runtime` before it ran), its nulls in."""
    kwargs.setdefault("response_model_exclude_unset", True)

    def decorate(func: Any) -> Any:
        router.add_api_route(path, func, methods=[method], **kwargs)
        router.add_api_route(path + "/", func, methods=[method], include_in_schema=False, **kwargs)
        return func

    return decorate
