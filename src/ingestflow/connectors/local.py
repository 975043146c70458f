"""Local files: a Source over files and folders, and a Destination of one JSON file per document."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from ingestflow.connectors.base import Destination, Source
from ingestflow.elements import Document
from ingestflow.errors import DocumentError, WorkflowInvalid
from ingestflow.files import write_json_atomic
from ingestflow.spec.problems import Problem

FILE_NAMESPACE = uuid.UUID("5b0e4a35-6c43-4f7e-9d1f-0c6a51f0a1d7")


def file_record_id(path: Path) -> str:
    """Stable id of a local file: a UUID5 of its absolute path."""
    return str(uuid.uuid5(FILE_NAMESPACE, str(path.resolve())))


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


class LocalSource(Source):
    """Files and folders (recursively, in sorted order). Hidden files and folders are skipped;
    a symlink that leads outside the folder it was found in is skipped with a warning."""

    name = "local"

    def __init__(self, inputs: list[Path]) -> None:
        self.inputs = [Path(p) for p in inputs]
        self.skipped: list[str] = []

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

    def _walk(self) -> Iterator[tuple[Path, str]]:
        self.skipped = []
        seen: set[Path] = set()
        for path, rel in self._walk_inputs():
            real = path.resolve()
            if real in seen:  # the same file named twice (a folder and a file in it, ...)
                continue
            seen.add(real)
            yield path, rel

    def _walk_inputs(self) -> Iterator[tuple[Path, str]]:
        for root in self.inputs:
            if root.is_file() or not root.is_dir():
                yield root, root.name
                continue
            base = root.resolve()
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if name.startswith("."):
                        continue
                    path = Path(dirpath) / name
                    if path.is_symlink() and not path.resolve().is_relative_to(base):
                        self.skipped.append(f"{path}: symlink leads outside {root}")
                        continue
                    yield path, path.relative_to(root).as_posix()

    def documents(self) -> Iterator[Document]:
        """One Document per file; content is read by the partitioner, not here."""
        for path, rel in self._walk():
            record_id = file_record_id(path)
            absolute = str(path.resolve())
            data_source: dict = {
                "url": Path(absolute).as_uri(),
                "record_locator": {"protocol": "file", "remote_file_path": absolute},
            }
            try:
                stat = path.stat()
                data_source["date_created"] = _iso(stat.st_ctime)
                data_source["date_modified"] = _iso(stat.st_mtime)
            except OSError:
                pass
            yield Document(
                id=record_id, record_id=record_id, filename=rel, path=path, data_source=data_source
            )


class LocalDestination(Destination):
    """Writes `DIR/<relative path>.json`, atomically: a crash never leaves a half file."""

    name = "local"

    def __init__(self, output_dir: Path) -> None:
        self.output_dir = Path(output_dir)

    def precheck(self, embedding_dimension: int | None) -> None:
        """The output folder can be created and written."""
        try:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.output_dir, prefix=".probe-"):
                pass
        except OSError as exc:
            from ingestflow.errors import ConnectorError

            raise ConnectorError(
                f"cannot write to output folder {self.output_dir}: {exc.strerror or exc}"
            ) from None

    def target(self, doc: Document) -> Path:
        """Where a document's elements go; never outside the output folder."""
        target = (self.output_dir / f"{doc.filename}.json").resolve()
        if not target.is_relative_to(self.output_dir.resolve()):
            raise DocumentError(f"output name {doc.filename!r} would leave {self.output_dir}")
        return target

    def write(self, doc: Document) -> list[str]:
        """Write the document's elements as a JSON list, replacing any earlier file."""
        write_json_atomic(self.target(doc), doc.elements)
        return []
