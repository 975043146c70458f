"""A file of a job: its pages as images with the chosen node's elements drawn over them as
boxes coloured by type, the element list beside them, and each chunk's elements. The file is
named by its id in the job, and its document found from the job's record: a URL never names a
path."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from starlette.responses import Response

from ingestflow.errors import IngestflowError
from ingestflow.server.deps import ServiceDep
from ingestflow.server.ui.auth import PREFIX, signed_in
from ingestflow.server.ui.render import TYPES, page
from ingestflow.server.ui.routes import ELEMENTS_SHOWN, failed_page, shown_metadata

router = APIRouter(prefix=PREFIX, dependencies=[Depends(signed_in)], include_in_schema=False)


@router.get("/jobs/{job_id}/files/{file_id}")
def file_page(
    job_id: str, file_id: str, svc: ServiceDep, node: Annotated[int, Query(ge=1)] = 1
) -> Response:
    """A file after one node (`node` counts from 1)."""
    try:
        view = svc.jobs.file_view(job_id, file_id, node)
    except IngestflowError as exc:
        return failed_page(exc)
    return page(
        "file.html",
        job=view.record,
        entry=view.entry,
        node=view.record["node_stats"][view.index],
        node_index=view.index,
        elements=view.elements,
        pages=view.pages,
        boxed=sum(len(p.boxes) for p in view.pages),
        image_ok=view.images,
        origins=view.origins,
        exact=view.exact,
        limit=ELEMENTS_SHOWN,
        types=sorted({b.type for p in view.pages for b in p.boxes}, key=_type_order),
        shown_metadata=shown_metadata,
        signed_in=True,
    )


@router.get("/jobs/{job_id}/files/{file_id}/pages/{number}")
def page_image(
    job_id: str, file_id: str, number: Annotated[int, Path(ge=1, le=100_000)], svc: ServiceDep
) -> Response:
    """Page `number` of the job's own document, as an image (404 when it is not here)."""
    data, media_type = svc.jobs.page_image(job_id, file_id, number)
    return Response(data, media_type=media_type, headers={"Cache-Control": "private, max-age=300"})


def _type_order(kind: str) -> tuple[int, str]:
    return (TYPES.index(kind) if kind in TYPES else len(TYPES), kind)
