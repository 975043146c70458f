"""The spec layer: SPEC.md's resources as models, and its rules as functions returning problems.

Connector bodies are validated by `ingestflow.connectors.registry`, the one list of connector
types.
"""

from ingestflow.spec.problems import Problem
from ingestflow.spec.validate import CheckedWorkflow, validate_workflow

__all__ = ["CheckedWorkflow", "Problem", "validate_workflow"]
