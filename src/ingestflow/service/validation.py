"""Checking files on their own (what `ingestflow validate` does): a workflow or a connector body,
judged without a workspace (connector and template ids are resolved when stored or run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.spec.problems import Problem, short

if TYPE_CHECKING:
    from ingestflow.spec.validate import CheckedWorkflow

__all__ = [
    "FileCheck",
    "Problem",
    "check_body",
    "check_data",
    "check_file",
    "checked_body",
    "load_body",
    "load_json",
    "short",
]

_LABELS = {
    "partition": "Partitioner",
    "prompter": "Enrichment",
    "chunk": "Chunker",
    "embed": "Embedder",
}


@dataclass
class FileCheck:
    """The outcome of checking a file: what it is, its problems and warnings, a summary."""

    kind: str = "workflow"
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    summary: str = ""

    @property
    def valid(self) -> bool:
        """True when no rule is broken."""
        return not self.problems


def load_json(path: Path) -> tuple[Any, list[Problem]]:
    """A JSON file's content, or the problems that kept it from being read (duplicate keys,
    syntax, encoding, a missing file, not a regular file, too large)."""
    from ingestflow.spec.parsing import load_json_file

    return load_json_file(path)


def load_body(path: Path, what: str = "workflow") -> Any:
    """A workflow (or connector) body from the JSON file the user named: InputFileError when
    the file cannot be read (one line), WorkflowInvalid with every problem of its JSON."""
    from ingestflow.errors import WorkflowInvalid
    from ingestflow.spec.input_file import read_input_file
    from ingestflow.spec.parsing import load_json_text

    data, problems = load_json_text(read_input_file(path, what))
    if problems:
        raise WorkflowInvalid(problems, what=what)
    return data


def check_file(path: Path, today: date | None = None) -> FileCheck:
    """Check a workflow file (or a connector body: name, type, config) against every rule; a
    file that cannot be read is one problem of kind `file`."""
    from ingestflow.errors import InputFileError
    from ingestflow.spec.input_file import read_input_file
    from ingestflow.spec.parsing import load_json_text

    try:
        text = read_input_file(path)
    except InputFileError as exc:
        return FileCheck("file", [Problem("$", str(exc))])
    data, problems = load_json_text(text)
    if problems:
        return FileCheck(problems=problems)
    return check_data(data, today)


def check_data(data: Any, today: date | None = None) -> FileCheck:
    """Check a workflow body (or a connector body: name, type, config) against every rule; any
    value at all (a number, a list) gets problems, never an exception."""
    from ingestflow.connectors.registry import validate_connector
    from ingestflow.spec.validate import looks_like_connector

    if looks_like_connector(data):
        checked_c = validate_connector(data)
        summary = f"{checked_c.connector.type} connector" if checked_c.connector else ""
        return FileCheck("connector", checked_c.problems, [], summary)
    return _check_workflow(data, today)


def checked_body(body: Any) -> CheckedWorkflow:
    """A workflow body checked as it will run (templates expanded): the check a run's plan is
    built from (`RunRequest.checked`); WorkflowInvalid with every problem when it breaks one."""
    from ingestflow.errors import WorkflowInvalid
    from ingestflow.spec.validate import check_runnable

    checked = check_runnable(body)
    if checked.problems:
        raise WorkflowInvalid(checked.problems)
    return checked


def check_body(body: Any) -> list[str]:
    """Check a workflow body against every rule (templates expanded); WorkflowInvalid with every
    problem when it breaks one, else its warnings as lines."""
    from ingestflow.errors import WorkflowInvalid

    checked = _check_workflow(body, None)
    if checked.problems:
        raise WorkflowInvalid(checked.problems)
    return [w.one_line() for w in checked.warnings]


def _check_workflow(data: Any, today: date | None) -> FileCheck:
    """A workflow body against every rule; a template's nodes checked too (its id must be a
    built-in template's: they are known without a workspace)."""
    from ingestflow.spec.validate import check_runnable

    checked = check_runnable(data, today=today)
    summary = ""  # said of a valid workflow only
    if checked.workflow is not None and checked.valid:
        chain = " → ".join(_LABELS.get(n.type, n.type) for n in checked.nodes)
        summary = checked.named_type + (f": {chain}" if chain else "")
    return FileCheck("workflow", checked.problems, checked.warnings, summary)
