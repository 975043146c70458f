"""The service layer: the only thing the front ends (CLI, REST server) call.

`Service(workspace)` opens the workspace store and offers connectors, workflows, templates,
jobs, runs and keys, with every rule applied on create, update, delete and run. The names below
are loaded on first use, so that a front end can reach a light module of the service (`early`)
without importing all of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingestflow.service.core import DEFAULT_WORKSPACE, Service
    from ingestflow.service.lite_paths import LitePaths
    from ingestflow.service.uploads import Upload, UploadLimits

_WHERE = {
    "DEFAULT_WORKSPACE": "ingestflow.service.core",
    "Service": "ingestflow.service.core",
    "LitePaths": "ingestflow.service.lite_paths",
    "Upload": "ingestflow.service.uploads",
    "UploadLimits": "ingestflow.service.uploads",
}

__all__ = ["DEFAULT_WORKSPACE", "LitePaths", "Service", "Upload", "UploadLimits"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
