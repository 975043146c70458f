"""Local files: a Source over files and folders, a Destination of one JSON file per document, and
the `local` connector type's entry (a type the run makes from its inputs and output folder)."""

from __future__ import annotations

import json
import stat
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from pydantic import ConfigDict, Field

from ingestflow.connectors import local_walk
from ingestflow.connectors.base import Destination, Source
from ingestflow.connectors.entry import ConnectorType
from ingestflow.connectors.local_walk import shown as _shown
from ingestflow.connectors.local_walk import why as _why
from ingestflow.elements import Document
from ingestflow.errors import DocumentError, WorkflowInvalid
from ingestflow.files import (
    FolderLock,
    private_folder,
    remove_stale_temporaries,
    write_json_atomic,
)
from ingestflow.spec.models import Model
from ingestflow.spec.problems import Problem

FILE_NAMESPACE = uuid.UUID("5b0e4a35-6c43-4f7e-9d1f-0c6a51f0a1d7")


def file_record_id(path: Path) -> str:
    """Stable id of a local file: a UUID5 of its absolute path."""
    return str(uuid.uuid5(FILE_NAMESPACE, str(path.resolve())))


def named_record_id(identity: str, name: str) -> str:
    """Stable id of a file known by its name under an identity (an upload: `upload:<workflow
    id>` and its file name), wherever the file is stored."""
    return str(uuid.uuid5(FILE_NAMESPACE, f"{identity}/{name}"))


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


class LocalSource(Source):
    """Files and folders (recursively, in sorted order). Hidden files and folders are skipped;
    a symlink that leads outside the folder it was found in is skipped with a warning.

    A file's record id is a UUID5 of its absolute path; with `identity`, of the identity and its
    name relative to its input (uploads: a new folder each job, the same document each time)."""

    name = "local"
    local_files = True

    def __init__(
        self, inputs: list[Path], exclude: list[Path] | None = None, identity: str | None = None
    ) -> None:
        self.inputs = [Path(p) for p in inputs]
        # folders never read as input (the run's own output folder, its workspace)
        self.exclude = [Path(p).resolve() for p in exclude or []]
        self.identity = identity
        self.skipped: list[str] = []
        self._listed: int | None = None  # documents of the last whole listing

    @property
    def warnings(self) -> list[str]:
        """What the job should say about the source: that a whole listing found nothing, and
        where (an empty folder, a folder of hidden files only: else a run says only
        "0 of 0")."""
        if self._listed != 0:
            return []
        where = ", ".join(_shown(p) for p in self.inputs) or "no input"
        return [
            f"no documents found in {where} (hidden files and folders are skipped): check "
            "the --input paths"
        ]

    def precheck(self) -> None:
        """Every input exists, and no two inputs give the same output name."""
        problems = [
            Problem(f"--input[{i}]", "no such file or folder", found=str(p))
            for i, p in enumerate(self.inputs)
            if not p.exists()
        ]
        if problems:
            raise WorkflowInvalid(problems, what="input")
        seen: dict[str, Path] = {}
        for path, rel in self._walk():
            if rel in seen and seen[rel] != path:
                raise WorkflowInvalid(
                    [
                        Problem(
                            "--input",
                            f"two inputs give the same output name {rel!r}",
                            found=[str(seen[rel]), str(path)],
                            hint="pass the folder that holds both, or run them separately",
                        )
                    ],
                    what="input",
                )
            seen[rel] = path

    def count(self) -> int:
        """How many documents `documents()` will yield (for a progress bar)."""
        return sum(1 for _ in self._walk())

    def suffixes(
        self, most: int = local_walk.SUFFIX_SCAN, seconds: float = local_walk.SUFFIX_SECONDS
    ) -> set[str] | None:
        """The extensions of the first `most` files, in the order they will be read (see
        `Source.suffixes` and `local_walk.suffixes`)."""
        return local_walk.suffixes(self.inputs, self.exclude, most, seconds)

    def _walk(self) -> Iterator[tuple[Path, str]]:
        self.skipped = []
        seen: set[Path] = set()
        for path, rel in self._walk_inputs():
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError) as exc:  # a symlink loop, a dangling link
                self.skipped.append(f"{_shown(path)}: skipped, {_why(exc)}")
                continue
            if real in seen:  # the same file named twice (a folder and a file in it, ...)
                continue
            seen.add(real)
            if not _regular(real):
                self.skipped.append(
                    f"{_shown(path)}: skipped, not a regular file (a pipe, socket or device)"
                )
                continue
            yield path, rel

    def _walk_inputs(self) -> Iterator[tuple[Path, str]]:
        return local_walk.walk_inputs(self.inputs, self.exclude, self.skipped)

    def listing_problem(self) -> str | None:
        """What the last listing skipped (an unreadable folder, a broken link, ...), if anything:
        a document in a folder that could not be read would look deleted."""
        if not self.skipped:
            return None
        more = f" and {len(self.skipped) - 1} more" if len(self.skipped) > 1 else ""
        return f"the local source skipped entries it could not read ({self.skipped[0]}{more})"

    def documents(self) -> Iterator[Document]:
        """One Document per file; content is read by the partitioner, not here."""
        self._listed, listed = None, 0
        for path, rel in self._walk():
            listed += 1
            if self.identity is None:
                record_id = file_record_id(path)
            else:
                record_id = named_record_id(self.identity, rel)
            data_source = self._data_source(path, rel)
            try:
                stat = path.stat()
                data_source["date_created"] = _iso(stat.st_ctime)
                data_source["date_modified"] = _iso(stat.st_mtime)
            except OSError:
                pass
            yield Document(
                id=record_id, record_id=record_id, filename=rel, path=path, data_source=data_source
            )
        self._listed = listed

    def _data_source(self, path: Path, rel: str) -> dict[str, Any]:
        """Where a document came from: its file's path, or for an upload (a source with an
        identity) only its job's folder and its name, `upload://<job>/<name>`: elements
        downloaded through the API never tell a client how the server's disk is laid out."""
        if self.identity is None:
            absolute = str(path.resolve())
            return {
                "url": Path(absolute).as_uri(),
                "record_locator": {"protocol": "file", "remote_file_path": absolute},
            }
        named = PurePosixPath(rel)
        folder = path.parents[len(named.parts) - 1].name  # uploads/<job>/<name>: the job
        where = f"{folder}/{named}"
        return {
            "url": f"upload://{quote(where)}",
            "record_locator": {"protocol": "upload", "remote_file_path": where},
        }


class LocalDestination(Destination):
    """Writes `DIR/<relative path>.json`, atomically: a crash never leaves a half file."""

    name = "local"
    writes_a_folder = True

    def __init__(self, output_dir: Path, private: bool = False) -> None:
        self.output_dir = Path(output_dir)
        self.private = private  # owner-only folders and files (an output inside the workspace)
        self.lock = FolderLock(self.output_dir)

    def precheck(self, embedding_dimension: int | None) -> None:
        """The output folder can be created and written, and no other run is writing it; what a
        killed run left half-written there is cleaned up."""
        from ingestflow.errors import ConnectorError

        try:
            if self.private:
                private_folder(self.output_dir)
            else:
                self.output_dir.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.output_dir, prefix=".probe-"):
                pass
            locked = self.lock.acquire()
        except OSError as exc:
            raise ConnectorError(
                f"cannot write to output folder {self.output_dir}: {exc.strerror or exc}"
            ) from None
        if not locked:
            raise ConnectorError(
                f"output folder {self.output_dir} is being written by another run (process "
                f"{self.lock.holder()}): wait for it to finish, or give another --output"
            )
        remove_stale_temporaries(self.output_dir)

    def has(self, doc: Document) -> bool | None:
        """True when the document's output file is there."""
        try:
            return self.target(doc).is_file()
        except DocumentError:
            return None

    def stamp(self, doc: Document) -> str | None:
        """The SHA-256 of the document's output file (None when there is none): another run
        writing the same name from another source, or another workflow, changes it."""
        import hashlib

        try:
            with self.target(doc).open("rb") as fh:
                return hashlib.file_digest(fh, "sha256").hexdigest()
        except (OSError, DocumentError):
            return None

    def close(self) -> None:
        """Let other runs write the folder."""
        self.lock.release()

    def for_workers(self) -> Destination | None:
        """A writer of the same folder for worker processes (which must see it at the same path:
        a shared folder on a cluster); the run holds the folder's lock."""
        return SharedFolderWriter(self.output_dir, self.private)

    def target(self, doc: Document) -> Path:
        """Where a document's elements go; never outside the output folder."""
        target = (self.output_dir / f"{doc.filename}.json").resolve()
        if not target.is_relative_to(self.output_dir.resolve()):
            raise DocumentError(f"output name {doc.filename!r} would leave {self.output_dir}")
        return target

    def delete(self, record_id: str, filename: str | None) -> None:
        """Remove a document's output file, and the folders under the output folder it leaves
        empty."""
        if filename is None:
            raise DocumentError(
                f"record {record_id}: its file name was not recorded, so its output file is "
                f"unknown; remove it from {self.output_dir} by hand"
            )
        target = self.target(Document(record_id, record_id, filename))
        target.unlink(missing_ok=True)
        root, folder = self.output_dir.resolve(), target.parent
        while folder != root and folder.is_relative_to(root):
            try:
                folder.rmdir()  # only when empty: another document's output stays
            except OSError:
                break
            folder = folder.parent

    def write(self, doc: Document) -> list[str]:
        """Write the document's elements as a JSON list, replacing any earlier file."""
        write_json_atomic(self.target(doc), doc.elements, private=self.private)
        return []


class SharedFolderWriter(LocalDestination):
    """A worker's writer into a run's output folder: the run (`LocalDestination`) checked the
    folder, cleaned it up and holds its lock; this only writes files."""

    def precheck(self, embedding_dimension: int | None) -> None:
        """The folder is there (the run made it)."""
        from ingestflow.errors import ConnectorError

        if not self.output_dir.is_dir():
            raise ConnectorError(
                f"output folder {self.output_dir} is not there on this machine: the workers "
                "write the output folder themselves, so it must be a folder every machine sees "
                "at the same path"
            )

    def close(self) -> None:
        """Nothing to release: the run holds the folder's lock."""

    def for_workers(self) -> Destination | None:
        return SharedFolderWriter(self.output_dir, self.private)


class LocalConfig(Model):
    """Config of local files, made by the run (never stored): what it reads, or where it writes."""

    model_config = ConfigDict(extra="forbid")  # made by the run from its own arguments

    inputs: list[Path] = Field(default_factory=list)
    #: folders never read as input (the run's own output folder, its workspace)
    exclude: list[Path] = Field(default_factory=list)
    #: uploads: record ids from this identity and the files' names, not their paths
    identity: str | None = None
    output: Path | None = None
    #: the output folder lies in the workspace: its folders and files are the owner's only
    private: bool = False


def local_source(config: LocalConfig) -> LocalSource:
    """The LocalSource of a config."""
    return LocalSource(config.inputs, exclude=config.exclude, identity=config.identity)


def local_destination(config: LocalConfig) -> LocalDestination:
    """The LocalDestination of a config."""
    if config.output is None:
        raise ValueError("a local destination needs an output folder")
    return LocalDestination(config.output, private=config.private)


def _identity(config: LocalConfig) -> str:
    if config.output is not None:
        return f"local:{config.output.resolve()}"
    # the input paths: a run over other paths is another source
    return "local:" + json.dumps(sorted({str(p.resolve()) for p in config.inputs}))


def _source_identity(config: LocalConfig) -> str | None:
    # uploads land in a new folder each job: no key to remove by
    return _identity(config) if config.identity is None else None


ENTRY = ConnectorType(
    "local",
    LocalConfig,
    _identity,
    source="ingestflow.connectors.local:local_source",
    destination="ingestflow.connectors.local:local_destination",
    source_identity=_source_identity,
    stored=False,
)
