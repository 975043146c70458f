"""`Service`: one workspace's resources, with every rule applied (see the package's note)."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

from ingestflow.service.connectors import Connectors
from ingestflow.service.jobs import Jobs
from ingestflow.service.keys import Keys
from ingestflow.service.lite_paths import LitePaths
from ingestflow.service.runs import Runs
from ingestflow.service.sweep import sweep
from ingestflow.service.templates import Templates
from ingestflow.service.workflows import WorkflowListener, Workflows
from ingestflow.store import Workspace

DEFAULT_WORKSPACE = Path(".ingestflow")


class Service:
    """One workspace's resources. Cheap to open; close it (or use `with`) when done."""

    def __init__(
        self,
        workspace: Path = DEFAULT_WORKSPACE,
        create: bool = True,
        lite: LitePaths | None = None,
        check: bool = True,
        on_workflow_change: WorkflowListener | None = None,
    ) -> None:
        """Open the workspace's store. `lite`: where Milvus Lite paths may point (default:
        anywhere, relative to the current directory, as for the CLI; the server passes
        `LitePaths.served`). `check` false skips SQLite's integrity check (it reads every page)
        for opens repeated all the time after a first checked one (server requests).
        `on_workflow_change` hears each workflow created, updated or deleted through this
        Service (a server's schedules)."""
        self.root = Path(workspace)
        self.ws = Workspace(self.root, create, check)
        self.connectors = Connectors(self.ws, lite or LitePaths())
        self.workflows = Workflows(self.ws, self.connectors, on_workflow_change)
        self.templates = Templates()
        self.jobs = Jobs(self.ws)
        self.keys = Keys(self.ws)
        self.runs = Runs(self.ws, self.connectors, self.workflows)

    def sweep(self) -> list[str]:
        """Mark FAILED ("interrupted") the unfinished jobs whose process died; returns their ids.
        A background job accepted but never started stays SCHEDULED (the next launcher runs it)
        while it has what it needs."""
        return sweep(self.ws)

    def _cache(self):
        from ingestflow.runner.reuse import NodeCache

        return NodeCache(self.root / "cache" / "nodes")

    def cache_usage(self) -> dict[str, Any]:
        """The node-output cache: where, how many outputs, bytes, the bound."""
        cache = self._cache()
        files, size = cache.usage()
        return {
            "path": str(cache.root),
            "files": files,
            "bytes": size,
            "budget_bytes": cache.budget,
        }

    def clear_cache(self) -> tuple[int, int]:
        """Empty the node-output cache; (files, bytes) removed."""
        return self._cache().clear()

    def metrics(self) -> bytes:
        """The workspace's jobs as Prometheus exposition text."""
        from ingestflow.service.metrics import metrics_text

        return metrics_text(self.ws)

    def close(self) -> None:
        """Close the store."""
        self.ws.close()

    def __enter__(self) -> Service:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
