"""The error model: one root, a few subclasses, each carrying what failed."""

from __future__ import annotations

import os
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ingestflow.spec.problems import Problem


class IngestflowError(Exception):
    """Root of every error ingestflow raises on purpose."""

    exit_code = 1


class WorkflowInvalid(IngestflowError):
    """A workflow, connector or setting broke one or more rules; carries every problem found."""

    exit_code = 2

    def __init__(self, problems: list[Problem], what: str = "workflow") -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p.one_line()}" for p in self.problems)
        super().__init__(f"{what} is invalid ({len(self.problems)} problem(s)):\n{lines}")


class ConnectorError(IngestflowError):
    """A source or destination could not be reached or does not fit (found at precheck)."""

    exit_code = 3


class EnvironmentProblem(IngestflowError):
    """Something the machine lacks (a system package, a model, an endpoint)."""

    exit_code = 3


class WorkspaceDamaged(EnvironmentProblem):
    """The workspace database is damaged (empty, not SQLite, or failing its integrity check)."""


class DocumentError(IngestflowError):
    """One document failed; the job goes on with the others."""


class StageError(DocumentError):
    """A node failed on one document."""

    def __init__(self, node: str, document: str, reason: str) -> None:
        self.node = node
        self.document = document
        self.reason = reason
        super().__init__(f"{node}: {document}: {reason}")


class JobCancelled(IngestflowError):
    """A run's job was cancelled by another process (`jobs cancel`, the API, the web UI) before
    its first document; exit status 130, as for Ctrl-C."""

    exit_code = 130


class NotFound(IngestflowError):
    """A resource (workflow, connector, job, template, file) does not exist."""

    exit_code = 2


class Conflict(IngestflowError):
    """The request clashes with the resource's state (a name taken, a job running, in use)."""

    exit_code = 2


class InputFileError(IngestflowError):
    """A file the user named (a workflow, a connector) cannot be read: missing, not a regular
    file, too large, not UTF-8."""

    exit_code = 2


class TooLarge(IngestflowError):
    """An upload is over the size the workspace accepts."""

    exit_code = 2


#: The reason given for a document whose process ran out of memory.
OUT_OF_MEMORY = (
    "ran out of memory: the document needs more memory than the worker process could get "
    "(free memory, or run fewer workers with --workers)"
)


def printable(text: str, limit: int = 300) -> str:
    """`text` on one line and harmless on a terminal or in a log: each character that is not
    printable (a CR that rewrites the line, a BEL, an escape sequence, a newline that would forge
    a line) written as its escape (`\\r`, `\\x07`), bounded to `limit` characters. For names
    that come from outside: file names, request paths."""
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def one_line(exc: BaseException, where: bool = True, limit: int = 500) -> str:
    """One line that says what went wrong: the message of an ingestflow error; for anything
    else its class, message and (`where`) the file and line that raised it, never a whole
    traceback; at most `limit` characters."""
    if isinstance(exc, IngestflowError):
        text = str(exc)
    elif isinstance(exc, MemoryError):
        text = OUT_OF_MEMORY
    else:
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        at = f" (in {os.path.basename(frame.filename)}:{frame.lineno})" if frame and where else ""
        text = f"{exc.__class__.__name__}: {exc}{at}"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
