"""The local source's walk over its inputs, on the standard library alone: `LocalSource` lists
its documents with it, and a run's first step looks at the files' extensions with it before
anything heavy is imported (`runner.preload.early`: that look delays the workers' preloading)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

#: At most this many files, for at most about this long, are looked at for their extensions
#: before a run (`suffixes`): the look delays the start of the workers' preloading.
SUFFIX_SCAN = 2_000
SUFFIX_SECONDS = 0.2
_EXTENSION = re.compile(r"\.[a-z0-9]{1,10}")


def walk_inputs(
    inputs: list[Path], exclude: list[Path], skipped: list[str]
) -> Iterator[tuple[Path, str]]:
    """Each file of `inputs` (a folder: recursively, sorted; hidden files and folders left out,
    and the folders of `exclude`, resolved) with its name relative to its input; what cannot be
    read, or is a symlink leading outside its input, is noted in `skipped`."""
    for root in inputs:
        if root.is_file() or not root.is_dir():
            if utf8(root.name):
                yield root, root.name
            else:
                skipped.append(f"{shown(root)}: skipped, its name is not valid UTF-8")
            continue
        base = root.resolve()

        def unreadable(exc: OSError) -> None:
            skipped.append(f"{shown(Path(exc.filename))}: skipped, {why(exc)}")

        for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
            here = Path(dirpath)
            kept = []
            for d in sorted(dirnames):
                if d.startswith("."):
                    continue
                if not utf8(d):
                    skipped.append(f"{shown(here / d)}: skipped, its name is not valid UTF-8")
                    continue
                if (here / d).resolve() in exclude:
                    continue  # this run's output or workspace: never read back as input
                kept.append(d)
            dirnames[:] = kept
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                path = here / name
                if not utf8(name):
                    skipped.append(f"{shown(path)}: skipped, its name is not valid UTF-8")
                    continue
                try:
                    outside = path.is_symlink() and not path.resolve().is_relative_to(base)
                except (OSError, RuntimeError) as exc:
                    skipped.append(f"{shown(path)}: skipped, {why(exc)}")
                    continue
                if outside:
                    skipped.append(f"{path}: symlink leads outside {root}")
                    continue
                yield path, path.relative_to(root).as_posix()


def suffixes(
    inputs: list[Path],
    exclude: list[Path],
    most: int = SUFFIX_SCAN,
    seconds: float = SUFFIX_SECONDS,
) -> set[str] | None:
    """The extensions of the first `most` files of the walk, looked at for at most about
    `seconds`: what a file type's name can end with (a dot, then 1 to 10 letters or digits),
    lowercase; None when an input cannot be looked at. `exclude`: resolved folders."""
    found: set[str] = set()
    deadline = time.monotonic() + seconds
    try:
        for count, (path, _) in enumerate(walk_inputs(inputs, exclude, []), 1):
            if count > most or time.monotonic() >= deadline:
                break
            suffix = path.suffix.lower()
            if _EXTENSION.fullmatch(suffix):
                found.add(suffix)
    except (OSError, RuntimeError):
        return None
    return found


def utf8(name: str) -> bool:
    """True when a file name is valid UTF-8 (os.walk hands undecodable bytes over as
    surrogates, which no JSON output or job record can hold)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(path: Path) -> str:
    """A path for messages, its undecodable bytes written as escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def why(exc: BaseException) -> str:
    """Why an entry could not be read, in words."""
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40:  # ELOOP
        return "a symlink loop"
    if isinstance(exc, FileNotFoundError):
        return "a symlink that leads nowhere"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return getattr(exc, "strerror", None) or str(exc)
