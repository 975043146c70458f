"""The UI's pages: jobs, a job, a file over its pages, two jobs compared, workflows and
connectors. Each reads the service (as the REST API does) and renders; no rule of its own."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from starlette.responses import Response

from ingestflow.errors import IngestflowError, NotFound
from ingestflow.server.deps import ServiceDep
from ingestflow.server.ui.auth import PREFIX, signed_in
from ingestflow.server.ui.render import TYPES, page
from ingestflow.service.jobs import ACTIVE_STATUSES

router = APIRouter(prefix=PREFIX, dependencies=[Depends(signed_in)], include_in_schema=False)
JOBS_PER_PAGE = 50
ELEMENTS_SHOWN = 500  # per file and node (the counts are always whole)
HIDDEN_METADATA = ("orig_elements", "image_base64", "coordinates")  # long; drawn elsewhere


def failed_page(exc: IngestflowError) -> Response:
    """A service error as a page: 404 for what is not there, 400 for the rest."""
    status = 404 if isinstance(exc, NotFound) else 400
    heading = "Not found" if status == 404 else "Cannot show this"
    return page("error.html", status=status, heading=heading, message=str(exc), signed_in=True)


@router.get("")
@router.get("/")
def jobs_page(svc: ServiceDep, page_number: Annotated[int, Query(alias="page", ge=1)] = 1):
    """Every job, newest first, with live progress of the running ones."""
    found = svc.jobs.page(page=page_number, page_size=JOBS_PER_PAGE)
    return page(
        "jobs.html",
        jobs=found.records,
        total=found.total,
        page_number=page_number,
        active=ACTIVE_STATUSES,
        signed_in=True,
    )


@router.get("/jobs/{job_id}")
def job_page(job_id: str, svc: ServiceDep) -> Response:
    """One job: its nodes, files, warnings and failed files."""
    try:
        record = svc.jobs.get(job_id)
    except IngestflowError as exc:
        return failed_page(exc)
    nodes = (record.get("workflow") or {}).get("workflow_nodes") or []
    settings = [nodes[i].get("settings") if i < len(nodes) else {} for i in range(len(nodes))]
    settings += [{}] * (len(record["node_stats"]) - len(settings))
    others = [j for j in svc.jobs.list(limit=JOBS_PER_PAGE) if j["id"] != record["id"]]
    return page(
        "job.html",
        job=record,
        settings=settings,
        others=others,
        active=ACTIVE_STATUSES,
        signed_in=True,
    )


@router.get("/jobs/{job_id}/progress")
def job_progress(job_id: str, svc: ServiceDep) -> dict[str, Any]:
    """The job record's figures the pages refresh while it runs."""
    record = svc.jobs.get(job_id)  # NotFound: the API's 404 answer
    statuses = [f["status"] for f in record["files"]]
    return {
        "id": record["id"],
        "status": record["status"],
        "processing_status": record["processing_status"],
        "active": record["status"] in ACTIVE_STATUSES,
        "node_stats": record["node_stats"],
        "files": {"ok": statuses.count("SUCCESS"), "failed": statuses.count("FAILED")},
        "progress": [
            f"{n['node_name']}: {n['success'] + n['failure']} done"
            + (f", {n['in_progress']} running" if n["in_progress"] else "")
            + (f", {n['ready']} waiting" if n["ready"] else "")
            for n in record["node_stats"]
        ],
    }


@router.get("/diff")
def diff_page(
    svc: ServiceDep, a: str | None = None, b: str | None = None, node: str | None = None,
    file: str | None = None,
) -> Response:  # fmt: skip
    """Two jobs side by side: per node, the settings that differ and each file's changes."""
    jobs = svc.jobs.list(limit=JOBS_PER_PAGE)
    diff, message, status = None, "", 200
    if a and b:
        try:
            diff = svc.jobs.diff(a, b, node, file)
        except IngestflowError as exc:
            message, status = str(exc), 404 if isinstance(exc, NotFound) else 400
    elif a or b:
        message, status = "Choose two jobs to compare (A and B).", 400
    return page("diff.html", status=status, jobs=jobs, diff=diff, message=message, signed_in=True)


@router.get("/workflows")
def workflows_page(svc: ServiceDep) -> Response:
    """The stored workflows, read-only."""
    return page("workflows.html", workflows=svc.workflows.list(page_size=1000), signed_in=True)


@router.get("/connectors")
def connectors_page(svc: ServiceDep) -> Response:
    """The stored connectors, read-only, secrets masked as the API masks them."""
    found = [
        {**record.wire(), "role": role}
        for role in ("source", "destination")
        for record in svc.connectors.list(role=role)
    ]
    return page("connectors.html", connectors=found, signed_in=True)


def shown_metadata(element: dict[str, Any]) -> dict[str, Any]:
    """An element's metadata as the list shows it (the long parts left out)."""
    meta = dict(element.get("metadata") or {})
    for key in HIDDEN_METADATA:
        if key in meta:
            meta[key] = "…"
    return meta


__all__ = ["TYPES", "router", "shown_metadata"]
