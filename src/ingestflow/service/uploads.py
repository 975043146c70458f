"""Uploads: the files a run request brings, stored inside the workspace under safe names and
within the server's limits."""

from __future__ import annotations

import os
import re
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ingestflow.errors import TooLarge
from ingestflow.files import private_folder
from ingestflow.service.requests import request_problem

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Upload:
    """One uploaded file: the name the client gave and a stream of its bytes."""

    filename: str
    stream: IO[bytes]


@dataclass(frozen=True)
class UploadLimits:
    """What one request may upload (the hosted service allows 10 files of 10 MB), and how large
    a JSON body or an on-demand job's `request_data` may be (`serve --max-body-mb`)."""

    max_files: int = 100
    max_file_bytes: int = 100 << 20
    # Real workflow and connector bodies are a few KB; parsing takes ~140x their size in memory
    # (a 50 MB body peaked at 6.9 GB), so 2 MB keeps the worst case near 300 MB.
    max_body_bytes: int = 2 << 20


def store_uploads(root: Path, job_id: str, uploads: list[Upload], limits: UploadLimits) -> Path:
    """Copy uploads into `uploads/<job>/<name>` inside the workspace at `root`, bounded in count and
    size; whatever a file name says, nothing lands outside that folder. Two files of one name
    are refused: the name is the document's identity in its workflow."""
    if len(uploads) > limits.max_files:
        raise request_problem(
            "inputs",
            f"too many files in one request (at most {limits.max_files})",
            found=len(uploads),
            hint="split them over several runs, or raise `serve --max-files`",
        )
    names = _upload_names(uploads)
    folder = root / "uploads" / job_id
    try:
        private_folder(folder)  # the workspace's own: its owner's only
        for upload, name in zip(uploads, names, strict=True):
            _copy_bounded(upload, folder / name, limits.max_file_bytes)
            (folder / name).chmod(0o600)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


#: The longest file name the usual filesystems take (NAME_MAX), in bytes of UTF-8.
MAX_NAME_BYTES = 255
#: A longer suffix is not an extension (`.pdf`, `.docx`): it is cut with the rest of the name.
_MAX_SUFFIX_BYTES = 32


def safe_filename(name: str | None, number: int) -> str:
    """A file name that is only a name: no folders, no `..`, no control characters, and at
    most MAX_NAME_BYTES of UTF-8, cut before its extension and never inside a character."""
    base = unicodedata.normalize("NFC", str(name or "")).replace("\\", "/").split("/")[-1]
    base = base.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate names no file
    base = re.sub(r"[\x00-\x1f\x7f]", "", base).strip()
    if base in ("", ".", "..") or base.startswith("."):
        base = f"upload-{number}{Path(base).suffix if base not in ('.', '..') else ''}"
    if len(base.encode("utf-8")) <= MAX_NAME_BYTES:
        return base
    stem, suffix = os.path.splitext(base)
    if len(suffix.encode("utf-8")) > _MAX_SUFFIX_BYTES:
        stem, suffix = base, ""
    room = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
    # "ignore" drops only the bytes of a character the cut split (the rest is valid UTF-8)
    return stem.encode("utf-8")[:room].decode("utf-8", "ignore").rstrip() + suffix


def _upload_names(uploads: list[Upload]) -> list[str]:
    """The names uploads are stored under; WorkflowInvalid when two files have one name."""
    names = [safe_filename(upload.filename, number) for number, upload in enumerate(uploads)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise request_problem(
                "inputs",
                f"two files are named {name!r}: a file's name is the document's identity in its "
                "workflow (a re-run replaces it)",
                found=name,
                hint="rename one of them, or send them in separate runs",
            )
        seen.add(name)
    return names


def file_too_large(filename: str | None, limit: int) -> TooLarge:
    """The refusal of an uploaded file over `limit` bytes (said while it streams in, or as it
    is stored)."""
    return TooLarge(
        f"{safe_filename(filename, 0)} is larger than the {size_text(limit)} a file may be "
        "(raise `serve --max-file-mb` to accept larger files)"
    )


def _copy_bounded(upload: Upload, target: Path, limit: int) -> None:
    written = 0
    with open(target, "wb") as out:
        while chunk := upload.stream.read(_CHUNK):
            written += len(chunk)
            if written > limit:
                raise file_too_large(upload.filename, limit)
            out.write(chunk)


def size_text(size: int) -> str:
    """A size for messages: bytes, KB or MB, whichever reads best."""
    if size < 1 << 10:
        return f"{size} bytes"
    if size < 1 << 20:
        return f"{size / (1 << 10):g} KB"
    return f"{size / (1 << 20):g} MB"
