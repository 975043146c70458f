"""Reading a workflow or connector file the user named, safely: a regular file only (a FIFO
would block the reader, `/dev/zero` never ends), at most MAX_INPUT_BYTES, UTF-8 text."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ingestflow.errors import InputFileError

#: A workflow or connector file is a few KB; anything near this is not one.
MAX_INPUT_BYTES = 10_000_000

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_input_file(path: Path, what: str = "workflow or connector") -> str:
    """The text of the `what` file at `path`; InputFileError (one line naming the path, what
    was found and what to do) when it is missing, not a regular file, over MAX_INPUT_BYTES,
    unreadable or not UTF-8."""
    try:
        found = os.stat(path)  # not opened yet: opening a FIFO to read blocks until a writer
    except FileNotFoundError:
        raise InputFileError(f"{path}: file not found; check the path") from None
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL character: no path holds one
        raise InputFileError(f"{str(path)!r} is not a usable path ({exc})") from None
    _check(path, found, what)
    try:
        # O_NONBLOCK: should the path have become a FIFO since the stat, opening returns at once
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        _check(path, os.fstat(fh.fileno()), what)
        try:
            data = fh.read(MAX_INPUT_BYTES + 1)  # bounded even if the file grows meanwhile
        except OSError as exc:
            raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise _too_large(path, None, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save the {what} "
            "file as UTF-8"
        ) from None


def _check(path: Path, found: os.stat_result, what: str) -> None:
    """InputFileError unless `found` is a regular file of at most MAX_INPUT_BYTES."""
    if not stat.S_ISREG(found.st_mode):
        kind = next((name for test, name in _KINDS if test(found.st_mode)), "not a file")
        raise InputFileError(
            f"{path} is {kind}, not a regular file; give the path of a {what} JSON file"
        )
    if found.st_size > MAX_INPUT_BYTES:
        raise _too_large(path, found.st_size, what)


def _too_large(path: Path, size: int | None, what: str) -> InputFileError:
    """`size` None: more than the limit was read (a file that grew, or a special file)."""
    found = f"is {size:,} bytes" if size is not None else f"holds more than {MAX_INPUT_BYTES:,}"
    return InputFileError(
        f"{path} {found}, over the {MAX_INPUT_BYTES // 1_000_000} MB limit of a {what} JSON "
        "file (one is a few KB); check that it is the right file"
    )
