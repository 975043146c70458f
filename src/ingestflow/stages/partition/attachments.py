"""Email attachments: each read by the stage's own rules; one that cannot be read is skipped
with a warning instead of failing the message."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ingestflow.elements import Element
from ingestflow.errors import DocumentError, one_line
from ingestflow.stages.partition import filetypes

if TYPE_CHECKING:
    from unstructured.file_utils.model import FileType

#: `read(path, name, is_temp, last_modified)`: a file's elements and warnings.
Read = Callable[[Path, str | None, bool, str | None], tuple[list[Element], list[str]]]


def attachments(
    read: Read,
    path: Path,
    file_type: FileType,
    name: str | None,
    sent: str | None,
    warnings: list[str],
) -> Iterator[Element]:
    """Elements of each readable attachment; a skipped one adds a line to `warnings`."""
    parent = os.path.basename(name) if name else None
    try:
        attachments = list(filetypes.iter_attachments(path, file_type))
    except Exception as exc:  # a message whose attachments cannot be listed keeps its body
        warnings.append(f"attachments not read: {one_line(exc, where=False)}")
        return
    for number, item in enumerate(attachments, 1):
        label = repr(item.name) if item.name else f"#{number} (no name)"
        try:
            with filetypes.temp_copy(item.data, item.name or "attachment") as tmp:
                found, notes = read(tmp, item.name, True, item.last_modified or sent)
        except DocumentError as exc:
            warnings.append(f"attachment {label} skipped: {exc}")
            continue
        warnings.extend(f"attachment {label}: {note}" for note in notes)
        for element in found:
            if parent and "attached_to_filename" not in element["metadata"]:
                element["metadata"]["attached_to_filename"] = parent  # nested ones keep theirs
            yield element
