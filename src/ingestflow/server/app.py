"""The REST server: the service's API under /api/v1, over the service layer.

`create_app(workspace)` builds the app; `ingestflow serve` runs it with uvicorn. At start-up it
marks jobs whose process died as FAILED (interrupted), then starts the launcher (background jobs),
the schedules and, when asked, the retention of finished jobs; at shutdown it stops them, asking
running jobs to stop cleanly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends, FastAPI

from ingestflow.server import docs_pages, errors, ui
from ingestflow.server.access_log import AccessLog
from ingestflow.server.deps import ServerState, require_key
from ingestflow.server.routes import connectors, jobs, metrics, templates, workflows
from ingestflow.service import LitePaths, Service, UploadLimits

if TYPE_CHECKING:
    from ingestflow.service.schedules import ScheduleClock

API_PREFIX = "/api/v1"


def create_app(
    workspace: Path,
    limits: UploadLimits | None = None,
    max_running: int = 2,
    background: bool = True,
    allow_dirs: Sequence[Path] = (),
    clock: ScheduleClock | None = None,
    keep_jobs_days: float | None = None,
    access_log: Callable[[str], None] | None = None,
) -> FastAPI:
    """The FastAPI app of a workspace. With `background` false no jobs are launched and no
    schedule fires (for tests of the API alone). Milvus Lite paths may lie in the workspace or
    in `allow_dirs` (`serve --allow-dir`); `clock` is the schedules' clock (default: the wall
    clock; tests pass a faster one). With `keep_jobs_days`, finished jobs are removed that many
    days after they end (at start, then hourly). `access_log` takes one line per request
    (default: the `ingestflow.server.access` logger)."""
    from ingestflow.service.retention import Retention

    root = Path(workspace).resolve()
    state = ServerState(root, limits or UploadLimits(), LitePaths.served(root, allow_dirs))
    retention = None if keep_jobs_days is None else Retention(state.workspace, keep_jobs_days)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with Service(state.workspace) as service:
            service.sweep()
        if background:
            from ingestflow.service.launcher import Launcher
            from ingestflow.service.schedules import Schedules

            state.launcher = Launcher(state.workspace, max_running, state.lite.allow_dirs)
            state.schedules = Schedules(state.workspace, state.submitted, clock)
            state.launcher.start()
            state.schedules.start()
        if retention is not None:
            retention.start()
        try:
            yield
        finally:
            if retention is not None:
                retention.stop()
            if state.schedules is not None:
                state.schedules.stop()
            if state.launcher is not None:
                state.launcher.stop()

    app = FastAPI(
        title="ingestflow",
        summary="Document-ingestion workflows, served locally.",
        version=_version(),
        lifespan=lifespan,
        redirect_slashes=False,
        docs_url=None,  # FastAPI's pages load from a CDN: docs_pages serves them offline
        redoc_url=None,
    )
    app.state.ingestflow = state
    api = APIRouter(prefix=API_PREFIX, dependencies=[Depends(require_key)])
    for module in (workflows, jobs, connectors, templates):
        api.include_router(module.router)
    app.include_router(api)
    app.include_router(metrics.router)
    docs_pages.install(app)
    ui.install(app)  # the web UI under /ui (its own sign-in: a one-time token or an API key)
    errors.install(app)
    app.add_middleware(errors.CatchAll)
    app.add_middleware(AccessLog, write=access_log)  # outermost: it logs the status the client gets
    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ingestflow")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"
