"""The spec layer: SPEC.md's resources as models, and its rules as functions returning problems.

Connector bodies are validated by `ingestflow.connectors.registry`, the one list of connector
types. The names below are loaded on first use: importing a light module of this package
(`problems`) does not import the validator (~0.35 s of pydantic models and networkx).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingestflow.spec.problems import Problem
    from ingestflow.spec.validate import CheckedWorkflow, validate_workflow

__all__ = ["CheckedWorkflow", "Problem", "validate_workflow"]


def __getattr__(name: str) -> Any:
    if name == "Problem":
        from ingestflow.spec.problems import Problem

        return Problem
    if name in ("CheckedWorkflow", "validate_workflow"):
        from ingestflow.spec import validate

        return getattr(validate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
