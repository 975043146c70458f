"""/jobs: list, get, details, failed files, download, cancel, resume, and on-demand jobs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from ingestflow.server.deps import ServiceDep, StateDep, both
from ingestflow.server.errors import responses
from ingestflow.server.uploads import MULTIPART_DOC, read_form
from ingestflow.service import Service
from ingestflow.service.jobs import PAGE_SIZE, DownloadFormat, information
from ingestflow.service.records import JobCancel, JobDetails, JobFailedFiles, JobInformation

router = APIRouter(tags=["jobs"])
_ON_DEMAND_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["request_data"],
                    "properties": {
                        "request_data": {
                            "type": "string",
                            "description": '{"template_id": ...} or {"job_nodes": [...]}',
                        },
                        **MULTIPART_DOC["requestBody"]["content"]["multipart/form-data"]["schema"][
                            "properties"
                        ],
                    },
                }
            }
        },
    }
}


_PAGED_DOC = {
    200: {
        "headers": {
            "X-Total-Count": {
                "description": "How many jobs match the filters, over all pages.",
                "schema": {"type": "integer"},
            },
            "Link": {
                "description": 'The next page, `<URL>; rel="next"`; absent on the last page.',
                "schema": {"type": "string"},
            },
        }
    }
}


@both(router, "GET", "/jobs", responses=_PAGED_DOC)
def list_jobs(
    svc: ServiceDep,
    request: Request,
    response: Response,
    workflow_id: str | None = None,
    status: str | None = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=1000)] = PAGE_SIZE,
) -> list[JobInformation]:
    """Jobs, newest first, of one workflow and/or in one status, a page at a time; the body is
    the list the SDK reads, the headers say how many there are and where the next page is."""
    found = svc.jobs.page(workflow_id, status, page, page_size)
    response.headers["X-Total-Count"] = str(found.total)
    if found.more:
        following = request.url.include_query_params(page=page + 1, page_size=page_size)
        response.headers["Link"] = f'<{following}>; rel="next"'
    return [information(r) for r in found.records]


@both(router, "POST", "/jobs", openapi_extra=_ON_DEMAND_DOC, responses=responses(413, 422))
async def create_job(request: Request, state: StateDep) -> JobInformation:
    """An on-demand job: `request_data` names a template or lists the nodes; files are its input."""
    files, fields = await read_form(request, state.limits, extra_fields=1)

    def submit() -> JobInformation:
        with Service(state.workspace) as svc:
            return information(svc.runs.on_demand(fields.get("request_data"), files, state.limits))

    record = await run_in_threadpool(submit)
    state.submitted()
    return record


@both(router, "GET", "/jobs/{job_id}", responses=responses(404))
def get_job(job_id: str, svc: ServiceDep) -> JobInformation:
    """One job."""
    return svc.jobs.information(job_id)


@both(router, "GET", "/jobs/{job_id}/details", responses=responses(404))
def job_details(job_id: str, svc: ServiceDep) -> JobDetails:
    """Processing status and per-node counts."""
    return svc.jobs.details(job_id)


@both(router, "GET", "/jobs/{job_id}/failed-files", responses=responses(404))
def failed_files(job_id: str, svc: ServiceDep) -> JobFailedFiles:
    """The documents that failed, each with its reason."""
    return svc.jobs.failed_files(job_id)


_MARKDOWN_DOC = {
    200: {
        "description": "The elements (JSON), or with `format=markdown` the document as "
        "Markdown (`text/markdown`).",
        "content": {"text/markdown": {"schema": {"type": "string"}}},
    }
}


@both(
    router,
    "GET",
    "/jobs/{job_id}/download",
    response_model=list[dict[str, Any]],  # the JSON answer; Markdown is a Response of its own
    responses={**_MARKDOWN_DOC, **responses(404)},
)
def download(
    job_id: str,
    file_id: str,
    svc: ServiceDep,
    node_id: str | None = None,
    as_format: Annotated[
        DownloadFormat,
        Query(
            alias="format",
            description="json: the elements; markdown: the document as a reader wants it "
            "(headings, lists, tables as HTML, formulas; running heads left out).",
        ),
    ] = "json",
) -> Any:
    """The elements of one file after one node (no node_id: the last node's), or that file as
    Markdown (`format=markdown`)."""
    if as_format == "markdown":
        text = svc.jobs.markdown(job_id, file_id, node_id)
        return Response(text, media_type="text/markdown; charset=utf-8")
    return svc.jobs.download(job_id, file_id, node_id)


@both(router, "POST", "/jobs/{job_id}/cancel", responses=responses(404, 409))
def cancel(job_id: str, svc: ServiceDep) -> JobCancel:
    """Stop a job (finished documents are kept)."""
    return svc.jobs.cancel(job_id)


@both(router, "POST", "/jobs/{job_id}/resume", status_code=202, responses=responses(404, 409))
def resume(job_id: str, svc: ServiceDep, state: StateDep) -> JobInformation:
    """Continue a stopped or interrupted job in place: the same job, SCHEDULED again, runs only
    the documents it had not written yet. 409 for a job still running, one that finished, or
    one whose workflow changed since."""
    from ingestflow.service.resume import schedule

    record = information(schedule(svc.runs, job_id))
    state.submitted()
    return record
