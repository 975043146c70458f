"""Multipart uploads: the files of a run request (`input_files` or `input_files[]`), bounded."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from ingestflow.errors import WorkflowInvalid
from ingestflow.server.bodies import bounded
from ingestflow.service import Upload, UploadLimits
from ingestflow.service.bodies import too_large
from ingestflow.service.uploads import size_text
from ingestflow.service.validation import Problem

FILE_FIELDS = ("input_files", "input_files[]")

MULTIPART_DOC: dict[str, Any] = {
    "requestBody": {
        "required": False,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "input_files": {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                        }
                    },
                }
            }
        },
    }
}


async def read_form(
    request: Request, limits: UploadLimits, extra_fields: int = 0
) -> tuple[list[Upload], dict[str, str]]:
    """The uploaded files and the plain fields of a multipart request; 413 when it is larger than
    the limits allow (said before anything is read), none when the body is not multipart."""
    kind = request.headers.get("content-type", "")
    if not kind.startswith("multipart/form-data"):
        if kind and int(request.headers.get("content-length") or 0) > 0:
            raise WorkflowInvalid(
                [
                    Problem(
                        "body",
                        "the body must be multipart/form-data (files in `input_files`, and "
                        "`request_data` for POST /jobs)",
                        found=kind.split(";")[0],
                    )
                ],
                what="request",
            )
        return [], {}
    # the files, the extra fields (POST /jobs's request_data) and room for the parts' headers
    room = extra_fields * limits.max_body_bytes
    ceiling = limits.max_files * limits.max_file_bytes + room + (1 << 20)

    def over(size: int | None) -> HTTPException:
        return HTTPException(
            413,
            f"the request is {size_text(size) if size else 'over ' + size_text(ceiling)}; at most "
            f"{limits.max_files} files of {size_text(limits.max_file_bytes)} each are accepted "
            "(raise `serve --max-files` or `--max-file-mb` to accept more)",
        )

    try:
        form = await bounded(request, ceiling, over).form(
            max_files=limits.max_files + 1,
            max_fields=16 + extra_fields,
            max_part_size=limits.max_body_bytes,
        )
    except HTTPException:
        raise
    except StarletteHTTPException as exc:  # the parser's own limits (part size, files, fields)
        if str(exc.detail).startswith("Part exceeded maximum size"):
            raise too_large(None, limits.max_body_bytes, "a form field (`request_data`)") from None
        raise WorkflowInvalid(
            [
                Problem(
                    "input_files",
                    f"the request has too many parts: {exc.detail}",
                    hint=f"at most {limits.max_files} files a request",
                )
            ],
            what="run request",
        ) from None
    except Exception as exc:  # a malformed body: the parser's reason in one line
        raise HTTPException(400, f"the multipart body could not be read: {exc}") from None
    files: list[Upload] = []
    fields: dict[str, str] = {}
    for key, value in form.multi_items():
        if isinstance(value, UploadFile):
            if key in FILE_FIELDS:
                files.append(Upload(value.filename or "", value.file))
        else:
            fields[key] = value
    return files, fields
