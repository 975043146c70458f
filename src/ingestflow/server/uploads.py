"""Multipart uploads: the files of a run request (`input_files` or `input_files[]`), bounded."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from fastapi import HTTPException, Request
from starlette.datastructures import Headers, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.formparsers import MultiPartException, MultiPartParser

from ingestflow.errors import TooLarge, WorkflowInvalid
from ingestflow.server.bodies import bounded
from ingestflow.service import Upload, UploadLimits
from ingestflow.service.bodies import too_large
from ingestflow.service.uploads import file_too_large, size_text
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
        async with aclosing(bounded(request, ceiling, over).stream()) as stream:
            form = await _BoundedFiles(
                request.headers,
                stream,
                limits.max_file_bytes,
                max_files=limits.max_files + 1,
                max_fields=16 + extra_fields,
                max_part_size=limits.max_body_bytes,
            ).parse()
    except (HTTPException, TooLarge):
        raise
    except (StarletteHTTPException, MultiPartException) as exc:  # the parser's own limits
        detail = exc.message if isinstance(exc, MultiPartException) else str(exc.detail)
        if detail.startswith(("Part exceeded maximum size", "Field exceeded maximum size")):
            raise too_large(None, limits.max_body_bytes, "a form field (`request_data`)") from None
        raise WorkflowInvalid(
            [
                Problem(
                    "input_files",
                    f"the request has too many parts: {detail}",
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


class _BoundedFiles(MultiPartParser):
    """Starlette's multipart parser, which also refuses a file as soon as more of it has come
    than one file may be: the body is not read further, where counting once the whole form was
    spooled took in 90 MB for a 1 MB limit."""

    def __init__(
        self,
        headers: Headers,
        stream: AsyncGenerator[bytes, None],
        max_file_bytes: int,
        **limits: Any,
    ) -> None:
        super().__init__(headers, stream, **limits)
        self.max_file_bytes = max_file_bytes
        self._received: dict[int, int] = {}  # bytes of each file part so far, by part

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._current_part
        if part.file is not None:
            size = self._received.get(id(part), 0) + end - start
            if size > self.max_file_bytes:
                raise file_too_large(part.file.filename, self.max_file_bytes)
            self._received[id(part)] = size
        super().on_part_data(data, start, end)
