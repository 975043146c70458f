"""Files written whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from filelock import FileLock

#: What temporary files are called (`.NAME.<random>.tmp`): a run cleans up those a killed one
#: left behind.
TMP_SUFFIX = ".tmp"


def _mode() -> int:
    """The mode a new file gets under this process's umask (mkstemp alone would make 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def private_folder(path: Path) -> Path:
    """`path` as a folder, it and the parents this makes owner-only (0700): a workspace's
    uploads and node outputs are its owner's alone."""
    missing = []
    folder = Path(path)
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)  # mkdir(parents=True) ignores the mode
    return path


def make_private(root: Path) -> None:
    """Make a workspace folder its owner's only: the folder 0700, and, when it was open to
    others (a workspace made by an earlier version), everything in it too (folders 0700, files
    0600; symlinks left alone). A folder this user does not own is left as it is."""
    try:
        if not root.stat().st_mode & 0o077:
            return
        root.chmod(0o700)
    except OSError:
        return
    for folder, dirs, files in os.walk(root):
        for name, mode in [*((d, 0o700) for d in dirs), *((f, 0o600) for f in files)]:
            path = os.path.join(folder, name)
            with suppress(OSError):
                if not os.path.islink(path) and os.stat(path).st_mode & 0o077:
                    os.chmod(path, mode)


def write_json_atomic(target: Path, payload: object, private: bool = False) -> None:
    """Write JSON to a temporary file beside `target`, then rename it over `target`: a reader
    sees the old file or the new one, never half of one. The file follows the umask, unless
    `private` (owner only, and so are the folders it makes)."""
    if private:
        private_folder(target.parent)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TMP_SUFFIX)
    try:
        os.fchmod(fd, 0o600 if private else _mode())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=2)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_stale_temporaries(folder: Path) -> int:
    """Remove the temporary files a killed writer left in `folder` (call only while holding the
    folder's lock, so that no live writer's file is taken); returns how many."""
    removed = 0
    for path in folder.rglob(f".*{TMP_SUFFIX}"):
        if path.is_file() and path.name.count(".") >= 3:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


class FolderLock:
    """An exclusive lock on a folder for one run (`.ingestflow.lock` inside it): a second run
    writing the same folder gets a clear error instead of mixing outputs. The kernel drops the
    lock when the process dies, however it dies."""

    NAME = ".ingestflow.lock"

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / self.NAME
        self._lock: FileLock | None = None

    def acquire(self) -> bool:
        """Take the lock; False when another process holds it."""
        from ingestflow import locks

        self.path.parent.mkdir(parents=True, exist_ok=True)
        # twice: an attempt that opened the file just before its holder removed it (`release`)
        # finds it unlinked and fails; the second opens the fresh one
        self._lock = locks.taken(self.path) or locks.taken(self.path)
        if self._lock is None:
            return False
        self.path.write_text(str(os.getpid()))  # for the other run's message
        return True

    def holder(self) -> str:
        """The pid written by the process that holds the lock (for messages)."""
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def release(self) -> None:
        """Let go of the lock, and remove its file: no run leaves one behind (a killed run's,
        which no process holds, is taken over by the next run and removed at its end)."""
        if self._lock is not None:
            # unlinked while still held, so it is this run's file that goes; a run that opened
            # it meanwhile finds it unlinked once it gets the lock and takes a fresh one
            with suppress(OSError):
                self.path.unlink()
            self._lock.release()
            self._lock = None
