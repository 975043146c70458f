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
from ingestflow.service import page_view

router = APIRouter(prefix=PREFIX, dependencies=[Depends(signed_in)], include_in_schema=False)


@router.get("/jobs/{job_id}/files/{file_id}")
def file_page(
    job_id: str,
    file_id: str,
    svc: ServiceDep,
    node: Annotated[int, Query(ge=1)] = 1,
    first: Annotated[int, Query(alias="page", ge=1)] = 1,
) -> Response:
    """A file after one node (`node` counts from 1), its pages from `page` on."""
    try:
        view = svc.jobs.file_view(job_id, file_id, node, first)
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
        numbers=view.numbers,
        windows=_windows(view.numbers),
        shown=_on_shown_pages(view),
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


def _on_shown_pages(view: page_view.FileView) -> list[tuple[int, dict]]:
    """(position, element) of the elements the list shows: all, or when pages are drawn,
    those on them (elements without a page number go with the first pages)."""
    everything = list(enumerate(view.elements or []))
    if not view.pages:
        return everything
    low, high = view.pages[0].number, view.pages[-1].number
    first = low == view.numbers[0]
    return [(i, e) for i, e in everything if low <= _page(e) <= high or (first and _page(e) < low)]


def _page(element: dict) -> int:
    return int((element.get("metadata") or {}).get("page_number") or 0)


def _windows(numbers: list[int]) -> list[int]:
    """The first page of each window of pages the page links offer."""
    return numbers[:: page_view.PAGES_SHOWN]


def _type_order(kind: str) -> tuple[int, str]:
    return (TYPES.index(kind) if kind in TYPES else len(TYPES), kind)
