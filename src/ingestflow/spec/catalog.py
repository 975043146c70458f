"""Registry data: providers, models, retirements, enrichment and embedder subtypes, aliases.

SPEC.md writes vendor identifiers as neutral stand-ins (`provider_a` ...); workflow JSON
exported from the hosted service uses vendor spellings.
Both are accepted; the SPEC.md names are canonical.
A user may extend the model lists (a local VLM or embedding server serves its own model names) with
a JSON file named by INGESTFLOW_CATALOG: {"vlm_models": {"provider_a": ["my-model"]},
"embedders": {"ibm": {"my-model": {"dimension": 384, "max_chunk": 896}}}}.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path
from typing import Final

# SPEC.md stand-in -> vendor spelling (reference/nodes.md).
VENDOR_NAMES = {
    "provider_a": "anthropic",
    "provider_b": "bedrock",
    "provider_c": "openai",
    "provider_d": "vertexai",
}
VENDOR_TO_PROVIDER = {vendor: canonical for canonical, vendor in VENDOR_NAMES.items()}

DEFAULT_VLM_PROVIDER: Final = "provider_a"
DEFAULT_VLM_MODEL = "claude-sonnet-4-20250514"

_VLM_MODELS: dict[str, tuple[str, ...]] = {
    "provider_a": (
        "claude-3-7-sonnet-20250219",
        "claude-sonnet-4-20250514",
        "claude-sonnet-4-5-20250929",
        "claude-opus-4-5-20251101",
    ),
    "provider_b": (
        "us.amazon.nova-lite-v1:0",
        "us.amazon.nova-pro-v1:0",
        "us.anthropic.claude-3-opus-20240229-v1:0",
        "us.anthropic.claude-3-haiku-20240307-v1:0",
        "us.anthropic.claude-3-sonnet-20240229-v1:0",
        "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
    ),
    "provider_c": ("gpt-4o", "gpt-5-mini-2025-08-07"),
    "provider_d": ("gemini-2.0-flash-001",),
}


@dataclass(frozen=True)
class Retirement:
    """A model that stops working on `retired_on`; `replacement` is named in the error."""

    provider: str
    model: str
    retired_on: date
    replacement: str


RETIRED_MODELS: tuple[Retirement, ...] = (
    Retirement(
        "provider_a", "claude-3-5-sonnet-20241022", date(2025, 10, 22), "claude-sonnet-4-20250514"
    ),
    Retirement(
        "provider_b",
        "us.anthropic.claude-3-5-sonnet-20241022-v2:0",
        date(2025, 10, 22),
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
    ),
)

# Enrichment (prompter) tasks and their SPEC.md subtypes.
ENRICHMENT_TASKS: dict[str, tuple[str, ...]] = {
    "image_description": (
        "provider_c_image_description",
        "provider_a_image_description",
        "provider_b_image_description",
    ),
    "table_description": (
        "provider_c_table_description",
        "provider_a_table_description",
        "provider_b_table_description",
    ),
    "table2html": ("provider_c_table2html",),
    "ner": ("provider_c_ner", "provider_a_ner"),
    "ocr": ("provider_a_ocr", "provider_c_ocr", "provider_d_ocr"),
}
ENRICHMENT_SUBTYPES: dict[str, str] = {
    subtype: task for task, subtypes in ENRICHMENT_TASKS.items() for subtype in subtypes
}
#: The element types whose image crop (`image_base64`) each enrichment task sends to its model.
#: High Res and Auto crop these whenever such a node is in the workflow, listed in
#: `extract_image_block_types` or not. Generative OCR reads the types the user lists instead.
ENRICHMENT_CROPS: dict[str, tuple[str, ...]] = {
    "image_description": ("Image",),
    "table_description": ("Table",),
    "table2html": ("Table",),
}
#: What each enrichment task needs from the partitioner (`spec.strategies.NEEDS`): the crops of
#: its element types, or (generative OCR) the crops of the types the partitioner lists.
ENRICHMENT_NEEDS: dict[str, tuple[str, ...]] = {
    "image_description": ("crops",),
    "table_description": ("crops",),
    "table2html": ("crops",),
    "ocr": ("listed crops",),
}


@dataclass(frozen=True)
class EmbedModel:
    """An embedding model: its vector dimension and recommended maximum chunk size."""

    subtype: str
    name: str
    dimension: int
    max_chunk: int
    local: bool = False


_EMBEDDERS: tuple[EmbedModel, ...] = (
    EmbedModel("azure_openai", "text-embedding-3-small", 1536, 28672),
    EmbedModel("azure_openai", "text-embedding-3-large", 3072, 28672),
    EmbedModel("azure_openai", "text-embedding-ada-002", 1536, 28672),
    EmbedModel("bedrock", "amazon.titan-embed-text-v2:0", 1024, 28672),
    EmbedModel("bedrock", "amazon.titan-embed-text-v1", 1536, 28672),
    EmbedModel("bedrock", "amazon.titan-embed-image-v1", 1024, 896),
    EmbedModel("bedrock", "cohere.embed-english-v3", 1024, 1792),
    EmbedModel("bedrock", "cohere.embed-multilingual-v3", 1024, 1792),
    EmbedModel("ibm", "sentence-transformers/all-minilm-l6-v2", 384, 896, local=True),
    EmbedModel("ibm", "ibm/granite-embedding-278m-multilingual", 768, 1792),
    EmbedModel("ibm", "intfloat/multilingual-e5-large", 1024, 1792),
    EmbedModel("ibm", "ibm/slate-125m-english-rtrvr-v2", 768, 1792),
    EmbedModel("ibm", "ibm/slate-125m-multilingual-rtrvr-v2", 768, 1792),
    EmbedModel("togetherai", "togethercomputer/m2-bert-80M-32k-retrieval", 768, 28672),
    EmbedModel("voyageai", "voyage-3", 1024, 112000),
    EmbedModel("voyageai", "voyage-3-large", 1024, 112000),
    EmbedModel("voyageai", "voyage-code-3", 1024, 112000),
    EmbedModel("voyageai", "voyage-finance-2", 1024, 112000),
    EmbedModel("voyageai", "voyage-multimodal-3", 1024, 112000),
    EmbedModel("voyageai", "voyage-3-lite", 512, 112000),
    EmbedModel("voyageai", "voyage-code-2", 1536, 56000),
    EmbedModel("voyageai", "voyage-law-2", 1024, 56000),
)
#: The embedder subtypes: the providers of the built-in models, in table order.
EMBED_SUBTYPES = tuple(dict.fromkeys(m.subtype for m in _EMBEDDERS))
LOCAL_EMBED_MODEL = "sentence-transformers/all-minilm-l6-v2"

# Library defaults of `unstructured`'s chunkers when a setting is absent (reference/nodes.md).
LIBRARY_MAX_CHARACTERS = 500

SCHEDULES: dict[str, str] = {
    "every 15 minutes": "*/15 * * * *",
    "every hour": "0 * * * *",
    "every 2 hours": "0 */2 * * *",
    "every 4 hours": "0 */4 * * *",
    "every 6 hours": "0 */6 * * *",
    "every 8 hours": "0 */8 * * *",
    "every 10 hours": "0 */10 * * *",
    "every 12 hours": "0 */12 * * *",
    "daily": "0 0 * * *",
    "weekly": "0 0 * * 0",
    "monthly": "0 0 1 * *",
}


@dataclass(frozen=True)
class Catalog:
    """The model lists in force: the built-in ones plus the user's INGESTFLOW_CATALOG additions."""

    vlm_models: dict[str, tuple[str, ...]]
    embedders: dict[tuple[str, str], EmbedModel]

    def embed_model(self, subtype: str, name: str) -> EmbedModel | None:
        """The embedding model `name` of provider `subtype`, or None when unknown."""
        return self.embedders.get((subtype, name))

    def embed_models_of(self, subtype: str) -> list[str]:
        """Model names allowed for an embedder subtype."""
        return [m.name for (s, _), m in self.embedders.items() if s == subtype]

    def retirement(self, provider: str, model: str) -> Retirement | None:
        """The retirement of a VLM model, if it has one."""
        for item in RETIRED_MODELS:
            if item.provider == provider and item.model == model:
                return item
        return None


@cache
def catalog() -> Catalog:
    """The catalog, read once per process (INGESTFLOW_CATALOG is read at first use)."""
    vlm = {k: tuple(v) for k, v in _VLM_MODELS.items()}
    embedders = {(m.subtype, m.name): m for m in _EMBEDDERS}
    extra_path = os.environ.get("INGESTFLOW_CATALOG")
    if extra_path:
        extra = json.loads(Path(extra_path).read_text(encoding="utf-8"))
        for provider, models in extra.get("vlm_models", {}).items():
            vlm[provider] = vlm.get(provider, ()) + tuple(models)
        for subtype, models in extra.get("embedders", {}).items():
            for name, facts in models.items():
                embedders[(subtype, name)] = EmbedModel(
                    subtype,
                    name,
                    int(facts["dimension"]),
                    int(facts["max_chunk"]),
                    bool(facts.get("local", False)),
                )
    return Catalog(vlm, embedders)


def canonical_provider(value: str) -> str:
    """A provider name in SPEC.md's spelling (vendor spellings normalised)."""
    return VENDOR_TO_PROVIDER.get(value.lower(), value) if isinstance(value, str) else value


def canonical_subtype(value: str) -> str:
    """A prompter subtype in SPEC.md's spelling: `anthropic_ner` -> `provider_a_ner`."""
    if not isinstance(value, str):
        return value
    low = value.lower()
    for vendor, canonical in VENDOR_TO_PROVIDER.items():
        if low.startswith(vendor + "_"):
            return canonical + low[len(vendor) :]
    return low
