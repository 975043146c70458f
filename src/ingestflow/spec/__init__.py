"""The spec layer: SPEC.md's resources as models, and its rules as functions returning problems."""

from ingestflow.spec.problems import Problem
from ingestflow.spec.validate import (
    CheckedConnector,
    CheckedWorkflow,
    validate_connector,
    validate_workflow,
)

__all__ = [
    "CheckedConnector",
    "CheckedWorkflow",
    "Problem",
    "validate_connector",
    "validate_workflow",
]
