"""/workflows: create, list, get, update, delete, run."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from ingestflow.server.bodies import JsonBody, json_doc
from ingestflow.server.deps import ServiceDep, StateDep, both
from ingestflow.server.errors import responses
from ingestflow.server.uploads import MULTIPART_DOC, read_form
from ingestflow.service import Service
from ingestflow.service.jobs import information
from ingestflow.service.records import Deleted, JobInformation, WorkflowInformation

router = APIRouter(tags=["workflows"])
_WORKFLOW_DOC = json_doc(
    "A workflow create body (the fields given replace the stored ones on update).",
    {
        "local files": {
            "value": {
                "name": "local fast",
                "workflow_type": "custom",
                "workflow_nodes": [
                    {
                        "name": "Partitioner",
                        "type": "partition",
                        "subtype": "unstructured_api",
                        "settings": {"strategy": "fast"},
                    }
                ],
            }
        }
    },
)


@both(router, "GET", "/workflows")
def list_workflows(
    svc: ServiceDep,
    source_id: str | None = None,
    destination_id: str | None = None,
    status: str | None = None,
    name: str | None = None,
    created_since: str | None = None,
    created_before: str | None = None,
    sort_by: str = "id",
    sort_direction: str = "asc",
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=1000)] = 20,
) -> list[WorkflowInformation]:
    """Long-lived workflows, filtered, sorted and paged."""
    return svc.workflows.list(
        source_id=source_id,
        destination_id=destination_id,
        status=status,
        name=name,
        created_since=created_since,
        created_before=created_before,
        sort_by=sort_by,
        sort_direction=sort_direction,
        page=page,
        page_size=page_size,
    )


@both(router, "POST", "/workflows", openapi_extra=_WORKFLOW_DOC, responses=responses(413, 422))
def create_workflow(body: JsonBody, svc: ServiceDep) -> WorkflowInformation:
    """Create a workflow; every rule is checked and every problem reported at once (422)."""
    return svc.workflows.create(body)


@both(router, "GET", "/workflows/{workflow_id}", responses=responses(404))
def get_workflow(workflow_id: str, svc: ServiceDep) -> WorkflowInformation:
    """One workflow."""
    return svc.workflows.get(workflow_id)


@both(
    router,
    "PUT",
    "/workflows/{workflow_id}",
    openapi_extra=_WORKFLOW_DOC,
    responses=responses(404, 413),
)
def update_workflow(workflow_id: str, body: JsonBody, svc: ServiceDep) -> WorkflowInformation:
    """Change a long-lived workflow (on-demand ones cannot be updated)."""
    return svc.workflows.update(workflow_id, body)


@both(router, "DELETE", "/workflows/{workflow_id}", responses=responses(404, 409))
def delete_workflow(workflow_id: str, svc: ServiceDep) -> Deleted:
    """Delete a workflow with no job scheduled or running."""
    return svc.workflows.delete(workflow_id)


@both(
    router,
    "POST",
    "/workflows/{workflow_id}/run",
    status_code=202,
    openapi_extra=MULTIPART_DOC,
    responses=responses(404, 413),
)
async def run_workflow(
    workflow_id: str, request: Request, state: StateDep, keep_deleted: bool = False
) -> JobInformation:
    """Run a workflow as a job (files in a multipart body for a local source); 202 with the
    job, which runs in the background: poll GET /jobs/{job_id}. `keep_deleted` (reprocess_all
    false): keep in the destination the documents that left the source."""
    files, _ = await read_form(request, state.limits)

    def submit() -> JobInformation:
        with Service(state.workspace) as svc:
            job = svc.runs.submit(workflow_id, files, state.limits, keep_deleted=keep_deleted)
            return information(job)

    record = await run_in_threadpool(submit)
    state.submitted()
    return record
