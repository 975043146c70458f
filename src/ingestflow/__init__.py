"""ingestflow: document-ingestion workflows, run locally and offline.

The Python API (nothing heavy is imported until it is used):

    import ingestflow
    wf = ingestflow.load_workflow("workflow.json")
    result = ingestflow.run(wf, ["docs/"])
    ingestflow.elements_frame(result.elements)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "IngestflowError",
    "NotFound",
    "RunResult",
    "Workflow",
    "WorkflowInvalid",
    "elements_frame",
    "load_workflow",
    "run",
    "run_node",
    "validate",
]


def __getattr__(name: str) -> Any:
    if name in ("IngestflowError", "NotFound", "WorkflowInvalid"):
        from ingestflow import errors

        return getattr(errors, name)
    if name in __all__:
        from ingestflow import api

        return getattr(api, name)
    raise AttributeError(f"module 'ingestflow' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
