"""Run requests as typed values, and their problems named by the request's fields.

A front end (the CLI, the Python API, the REST server) builds a `RunRequest` from its own flags or
fields; the service checks it and names what is wrong by the request's field (`inputs`,
`on_oversize`, `execution.executor`), writing a field it mentions in a message as `` `field` ``.
Each front end says the fields in its own words with `relabel` and a table of its own (the CLI:
`--input`; the REST API: `input_files`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ingestflow.errors import WorkflowInvalid
from ingestflow.spec.problems import Problem

if TYPE_CHECKING:
    from ingestflow.spec.validate import CheckedWorkflow

OversizePolicy = Literal["fail", "drop", "truncate"]
#: What a vectordb destination may do with a value over its VARCHAR limit.
OVERSIZE_POLICIES: tuple[OversizePolicy, ...] = ("fail", "drop", "truncate")
JobType = Literal["ephemeral", "persistent", "template", "scheduled"]


@dataclass(frozen=True)
class ExecutionOptions:
    """How a run's documents are processed: where, by how many workers, how long each may take.

    `preload`: this process runs this one job, so its workers may be forked from a server that
    loads their libraries once (`runner.preload`). `ray_shared_fs`: on a Ray cluster, every
    machine sees the local input and output folders at the same paths (the actors read and
    write them; `docs/ray.md`)."""

    workers: int = 0
    executor: str = "local"
    ray_address: str | None = None
    doc_timeout: float | None = 1800.0
    preload: bool = False
    ray_shared_fs: bool = False  # Ray: every machine sees the local input and output folders


@dataclass(frozen=True)
class RunRequest:
    """One run of a workflow body, as a front end asks for it.

    `inputs`: local files and folders (a workflow without a source connector); `output`: the
    folder asked for (an error with a destination connector); `output_default`: where local
    output goes when none is asked for (default ./output). `source`, `destination`: a connector
    (a JSON file, or a stored id or name) instead of the workflow's. `on_oversize`: a vectordb
    destination's policy per field for values over their VARCHAR limit. With `trace` (and
    `cache`), documents start from the node-output cache; with `from_job`, from that job's
    stored outputs (at the first node whose settings changed, or `start_at`). `identity`: the
    local files' record ids come from it and their names, not their paths (uploads).
    `keep_deleted`: keep what left the source in the destination (`runner.deletions`);
    `resume`: `job_id` is a job continued in place (`service.resume`). `checked`: the body as
    the front end checked it (`spec.validate.check_runnable`), which the plan is built from;
    without it the body is checked when the run is prepared."""

    body: Any
    checked: CheckedWorkflow | None = field(default=None, repr=False, compare=False)
    inputs: tuple[Path, ...] = ()
    output: Path | None = None
    output_default: Path | None = None
    source: str | None = None
    destination: str | None = None
    on_oversize: Mapping[str, OversizePolicy] = field(default_factory=dict)
    trace: bool = False
    cache: bool = True
    from_job: str | None = None
    start_at: str | None = None
    workflow_id: str = "local"
    job_type: JobType = "ephemeral"
    job_id: str | None = None
    identity: str | None = None
    keep_deleted: bool = False
    resume: bool = False
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)


class RequestInvalid(WorkflowInvalid):
    """A run request broke one or more rules; each problem's path is a field of the request."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems, what="run request")


def request_problem(path: str, message: str, **details: Any) -> RequestInvalid:
    """A RequestInvalid of one problem at the request field `path`."""
    return RequestInvalid([Problem(path, message, **details)])


def relabel(exc: RequestInvalid, names: Mapping[str, str], quote: str = "") -> WorkflowInvalid:
    """The same problems, each field said as a front end says it: `names` maps a request field
    to the front end's flag or field; a path is replaced whole and a `` `field` `` in a message
    or hint by the name, between `quote`s. A field the table lacks stays as it is."""

    def said(text: str | None) -> str | None:
        if text is None:
            return None
        for name, own in names.items():
            text = text.replace(f"`{name}`", f"{quote}{own}{quote}")
        return text

    problems = [
        replace(p, path=names.get(p.path, p.path), message=said(p.message) or "", hint=said(p.hint))
        for p in exc.problems
    ]
    return WorkflowInvalid(problems, what="run request")


def job_type_of(row: Mapping[str, Any]) -> JobType:
    """The type of a job run from a stored workflow's row: an on-demand workflow's jobs are
    ephemeral, a template's are `template`, any other's `persistent` (a schedule's firing says
    `scheduled` itself)."""
    if row["kind"] != "persistent":
        return "ephemeral"
    return "template" if row["body"].get("workflow_type") == "template" else "persistent"


def check_policies(policies: Mapping[str, str]) -> None:
    """RequestInvalid when a field's oversize policy is not one the destination knows."""
    wrong = {name: policy for name, policy in policies.items() if policy not in OVERSIZE_POLICIES}
    if wrong:
        raise request_problem(
            "on_oversize",
            "each field maps to what to do with a value over its VARCHAR limit",
            found=wrong,
            allowed=list(OVERSIZE_POLICIES),
        )


def value_problems(request: RunRequest) -> list[Problem]:
    """The request's option values of the wrong type or out of range, each at its field (a
    front end's own checks may miss them: a Python caller passes anything): a worker count is
    a whole number from 0 (0: one per core), a document timeout a number of seconds from 0 (0
    or none: no limit), the switches true or false, the inputs paths."""
    problems: list[Problem] = []
    run = request.execution

    def number(value: Any, whole: bool) -> bool:
        kinds = (int,) if whole else (int, float)
        return isinstance(value, kinds) and not isinstance(value, bool) and value >= 0

    if not number(run.workers, whole=True):
        problems.append(
            Problem(
                "execution.workers", "a whole number from 0 (0: one per core)", found=run.workers
            )
        )
    if run.doc_timeout is not None and not number(run.doc_timeout, whole=False):
        problems.append(
            Problem(
                "execution.doc_timeout",
                "a number of seconds from 0 (0 or none: no limit)",
                found=run.doc_timeout,
            )
        )
    switches = {
        "trace": request.trace,
        "cache": request.cache,
        "keep_deleted": request.keep_deleted,
        "execution.ray_shared_fs": run.ray_shared_fs,
    }
    for name, value in switches.items():
        if not isinstance(value, bool):
            problems.append(Problem(name, "true or false", found=value))
    for index, path in enumerate(request.inputs):
        if not isinstance(path, (str, Path)):
            problems.append(Problem(f"inputs[{index}]", "a file or folder path", found=path))
    return problems
