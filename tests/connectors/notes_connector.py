"""A throwaway connector type written the way docs/design.md says: one module with its config,
rules, identity, source and check, and an `ENTRY` that one `register` line adds.

`notes` reads short texts from its own config (name -> text), one document each, behind an
access code that must be kept secret.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from pydantic import SecretStr

from ingestflow.connectors.base import Source
from ingestflow.connectors.check import ConnectionCheck
from ingestflow.connectors.entry import ConnectorType
from ingestflow.elements import Document
from ingestflow.spec.models import Model
from ingestflow.spec.problems import Problem

ACCESS_CODE = "open-sesame-4711"  # tests check it never shows


class NotesConfig(Model):
    """Config of a `notes` source: the notes, and the access code that opens them."""

    notes: dict[str, str]
    access_code: SecretStr


def notes_rules(config: NotesConfig) -> list[Problem]:
    """A notes source needs at least one note."""
    if config.notes:
        return []
    return [Problem("config.notes", "a notes source needs at least one note", found={})]


class NotesSource(Source):
    """Each note as a `.txt` document."""

    name = "notes"

    def __init__(self, config: NotesConfig) -> None:
        self.config = config

    def documents(self) -> Iterator[Document]:
        """One document per note, in name order."""
        for name, text in sorted(self.config.notes.items()):
            record_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"notes:{name}"))
            yield Document(
                id=record_id,
                record_id=record_id,
                filename=f"{name}.txt",
                data=text.encode("utf-8"),
                data_source={"url": f"notes:{name}", "record_locator": {"note": name}},
            )

    def listing_problem(self) -> str | None:
        """A config lists every note."""
        return None


def check_notes(config: NotesConfig) -> ConnectionCheck:
    """The access code opens the notes, or it does not."""
    if config.access_code.get_secret_value() == ACCESS_CODE:
        return ConnectionCheck.success()
    return ConnectionCheck.failure("the access code was refused")


ENTRY = ConnectorType(
    "notes",
    NotesConfig,
    lambda config: "notes:" + ",".join(sorted(config.notes)),
    source=f"{__name__}:NotesSource",
    checker=f"{__name__}:check_notes",
    aliases=("memo",),
    config_rules=notes_rules,
)
