"""The Python API: load and check a workflow, run it over paths, run one node on elements, and
look at elements as a table. A front end over the service layer, like the CLI (whose `run` and
`jobs` commands do the same through `ingestflow.service`).

    import ingestflow
    wf = ingestflow.load_workflow("workflow.json")      # WorkflowInvalid lists every problem
    result = ingestflow.run(wf, ["docs/"])              # a job in ./.ingestflow
    result.elements["notes.txt"]                        # the output elements of one file
    chunks = ingestflow.run_node(wf, "Chunker", result.after("Partitioner")["notes.txt"])
    ingestflow.elements_frame(chunks)                   # a pandas DataFrame
    result.markdown()["notes.txt"]                      # the document as Markdown
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.errors import IngestflowError, NotFound, WorkflowInvalid

if TYPE_CHECKING:  # types only: nothing imported at run time
    from ingestflow.service.validation import CheckedWorkflow
    from ingestflow.spec.problems import Problem

DEFAULT_WORKSPACE = Path(".ingestflow")
Element = dict[str, Any]


@dataclass(frozen=True)
class Workflow:
    """A checked workflow: its body (the service's create body), any warnings, and the check's
    result (`checked`: a run builds its plan from it, not from the body again)."""

    body: dict[str, Any]
    warnings: tuple[str, ...] = ()
    checked: CheckedWorkflow | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        """The workflow's name."""
        return str(self.body.get("name", ""))

    @property
    def nodes(self) -> list[str]:
        """The node names, in order."""
        return [str(n.get("name")) for n in self.body.get("workflow_nodes") or []]


@dataclass
class RunResult:
    """A finished run: its job record, and (read when first asked for) its output elements per
    file."""

    job: dict[str, Any]
    workspace: Path
    _elements: dict[str, list[Element]] | None = field(default=None, repr=False)

    @property
    def elements(self) -> dict[str, list[Element]]:
        """Each successful file's output elements (local outputs), by file name."""
        if self._elements is None:
            self._elements = {
                entry["filename"]: json.loads(Path(entry["output"]).read_text(encoding="utf-8"))
                for entry in self.job["files"]
                if entry["status"] == "SUCCESS" and entry.get("output")
            }
        return self._elements

    @property
    def ok(self) -> bool:
        """True when every document succeeded."""
        return self.job["status"] == "COMPLETED" and not self.job["failed_files"]

    def markdown(self, node: str | None = None) -> dict[str, str]:
        """Each successful file's output (or its elements after `node`, kept because the run was
        traced) as Markdown, by file name: the document as a reader wants it (`to_markdown`)."""
        from ingestflow.service.jobs import markdown_of

        by_file = self.elements if node is None else self.after(node)
        return {name: markdown_of(elements) for name, elements in by_file.items()}

    def after(self, node: str) -> dict[str, list[Element]]:
        """Each file's elements after one node (kept because the run was traced)."""
        from ingestflow.service import Service

        with Service(self.workspace) as service:
            return {
                f["filename"]: service.jobs.download(self.job["id"], f["file_id"], node)
                for f in self.job["files"]
                if f["status"] == "SUCCESS"
            }


def load_workflow(source: str | os.PathLike[str] | dict[str, Any]) -> Workflow:
    """A workflow from a JSON file (a path) or a body, checked against every rule
    (WorkflowInvalid lists every problem found, each with its JSON path; a body that is not an
    object, or a file that cannot be read, is a problem too)."""
    from ingestflow.service.validation import checked_body, load_json

    if isinstance(source, (str, os.PathLike)):
        body, problems = load_json(Path(source))
        if problems:
            raise WorkflowInvalid(problems)
    else:
        body = source
    checked = checked_body(body)
    return Workflow(body, tuple(w.one_line() for w in checked.warnings), checked)


def validate(source: Any) -> list[Problem]:
    """The problems of a workflow or connector, as a JSON file (a path) or a body (empty when it
    is valid): exactly what `ingestflow validate` reports for the same file. Never raises for
    bad input: a value that is not a body, or a file that cannot be read, is a problem."""
    from ingestflow.service.validation import check_data, check_file

    if isinstance(source, (str, os.PathLike)):
        return list(check_file(Path(source)).problems)
    return list(check_data(source).problems)


def run(
    workflow: Workflow | dict[str, Any] | str | Path,
    inputs: Iterable[str | Path],
    *,
    output: str | Path | None = None,
    workspace: str | Path = DEFAULT_WORKSPACE,
    workers: int = 0,
    trace: bool = True,
    source: str | None = None,
    destination: str | None = None,
    from_job: str | None = None,
    start_at: str | None = None,
    cache: bool = True,
    on_oversize: Mapping[str, str] | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    ray_shared_fs: bool = False,
    doc_timeout: float | None = 1800.0,
    keep_deleted: bool = False,
    progress: Callable[[Any], None] | None = None,
    **unknown: Any,
) -> RunResult:
    """Run a workflow over files and folders (or its source connector) in this process, as a
    job of `workspace`. Traced by default, so each node's output can be read back
    (`RunResult.after`) and an unchanged step is reused next time. Local output goes to
    `output` (default: a new folder under the workspace's `outputs/`). `on_oversize` maps a
    vectordb field to `fail`, `drop` or `truncate` (a value over its VARCHAR limit);
    `executor` is `local` or `ray` (`ray_shared_fs`: every machine of the cluster sees the input
    and output folders, `docs/ray.md`). `progress(event)` hears the run's typed events
    (`ingestflow.service.progress`: `JobPrepared` with the document count when known,
    `JobStarted`, `DocumentWritten`, `NodeProgress` ... `JobFinished`). WorkflowInvalid names
    a wrong argument by its name here."""
    from ingestflow.service import Service
    from ingestflow.service.requests import ExecutionOptions, RequestInvalid, RunRequest, relabel

    if unknown:
        raise _unknown_arguments(unknown)
    wf = workflow if isinstance(workflow, Workflow) else load_workflow(workflow)
    root = Path(workspace)
    if isinstance(inputs, (str, os.PathLike)):  # one path, not its characters
        inputs = [inputs]
    request = RunRequest(
        wf.body,
        checked=wf.checked,
        inputs=tuple(Path(p) if isinstance(p, (str, os.PathLike)) else p for p in inputs),
        output=Path(output) if output is not None else None,
        output_default=_fresh_output(root),
        source=source,
        destination=destination,
        on_oversize=dict(on_oversize or {}),  # type: ignore[arg-type]  # checked by the service
        trace=trace,
        cache=cache,
        from_job=from_job,
        start_at=start_at,
        workflow_id=f"api:{wf.name}",
        keep_deleted=keep_deleted,
        execution=ExecutionOptions(
            workers, executor, ray_address, doc_timeout, ray_shared_fs=ray_shared_fs
        ),
    )
    with Service(root) as service:
        try:
            record = service.runs.run_here(request, progress, wf.warnings)
        except RequestInvalid as exc:
            raise relabel(exc, ARGUMENTS, quote="`") from None
    return RunResult(record, root)


#: The run request's fields as `run` names its arguments (the others are named alike).
ARGUMENTS = {
    "inputs": "inputs",
    "execution.workers": "workers",
    "execution.executor": "executor",
    "execution.ray_address": "ray_address",
    "execution.ray_shared_fs": "ray_shared_fs",
    "execution.doc_timeout": "doc_timeout",
}


def _unknown_arguments(unknown: Mapping[str, Any]) -> WorkflowInvalid:
    """WorkflowInvalid naming each keyword argument `run` does not take, with the closest it
    does (a typo such as `worker=2` is said, not a bare TypeError)."""
    import difflib
    import inspect

    from ingestflow.service.requests import request_problem

    known = [
        name
        for name, parameter in inspect.signature(run).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean `{close[0]}`?" if close else "drop it"
        message = f"run() takes no argument `{name}`"
        problems += request_problem(name, message, allowed=known, hint=hint).problems
    return WorkflowInvalid(problems, what="run request")


def run_node(
    workflow: Workflow | dict[str, Any] | str | Path,
    node: str,
    elements: Sequence[Element] | None = None,
    *,
    path: str | Path | None = None,
    filename: str = "elements",
) -> list[Element]:
    """Run one node of a workflow, in this process: a partitioner on a file (`path`), any other
    node on elements (e.g. a chunker on a partitioner's output). Nothing is recorded."""
    from ingestflow.service.nodes import run_node as run_one

    wf = workflow if isinstance(workflow, Workflow) else load_workflow(workflow)
    return run_one(wf.body, node, list(elements or []), Path(path) if path else None, filename)


def to_markdown(elements: Iterable[Element]) -> str:
    """One document's elements as Markdown, as a reader wants it: Titles as headings by
    `metadata.category_depth`, list items as a list, tables as their HTML, formulas as
    `$$…$$` (their LaTeX when known); headers, footers, page numbers and pictures left out;
    chunks written as the elements they kept (`include_orig_elements`), else as paragraphs."""
    from ingestflow.service.jobs import markdown_of

    return markdown_of(elements)


def elements_frame(elements: Iterable[Element] | dict[str, list[Element]]) -> Any:
    """Elements as a pandas DataFrame (one row per element: file, type, element_id, text,
    text_length, page_number, parent_id, metadata). Needs pandas (`pip install pandas`)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            "elements_frame needs pandas: `pip install pandas` (the rest of ingestflow works "
            "without it)"
        ) from None
    by_file = elements if isinstance(elements, dict) else {None: list(elements)}
    rows = []
    for file, items in by_file.items():
        for element in items:
            metadata = element.get("metadata") or {}
            text = element.get("text") or ""
            rows.append(
                {
                    "file": file or metadata.get("filename"),
                    "type": element.get("type"),
                    "element_id": element.get("element_id"),
                    "text": text,
                    "text_length": len(text),
                    "page_number": metadata.get("page_number"),
                    "parent_id": metadata.get("parent_id"),
                    "metadata": metadata,
                }
            )
    columns = ["file", "type", "element_id", "text", "text_length", "page_number", "parent_id"]
    return pd.DataFrame(rows, columns=[*columns, "metadata"])


def _fresh_output(root: Path) -> Path:
    import uuid

    return root / "outputs" / str(uuid.uuid4())


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
    "to_markdown",
    "validate",
]
