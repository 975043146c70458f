"""A throwaway chunker subtype written the way docs/design.md says: one module with its settings
and its stage, which one `register` line adds (`chunk_by_element`: each element long enough is a
chunk of its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ingestflow.spec.settings import ChunkSettings
from ingestflow.stages.chunk import ChunkStage, common_kwargs

if TYPE_CHECKING:
    from unstructured.documents.elements import Element as LibElement


class ElementChunkSettings(ChunkSettings):
    """`chunk_by_element`: the common chunk settings, and the shortest element kept."""

    min_chars: int = Field(0, ge=0)


class ElementChunkStage(ChunkStage):
    """Each element of at least `min_chars` characters becomes one chunk."""

    def chunk(self, elements: list[LibElement], origins: bool = False) -> list[LibElement]:
        """One chunk per element long enough (split only when over `max_characters`)."""
        from unstructured.chunking.basic import chunk_elements

        st = self.chunk_settings
        assert isinstance(st, ElementChunkSettings)
        kwargs = common_kwargs(st)
        kwargs["include_orig_elements"] = kwargs["include_orig_elements"] or origins
        kept = [e for e in elements if len(e.text or "") >= st.min_chars]
        return [chunk for element in kept for chunk in chunk_elements([element], **kwargs)]
