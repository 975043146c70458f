"""Settings models, one per node type and subtype, with SPEC.md's fields and defaults."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from ingestflow.spec import strategies
from ingestflow.spec.catalog import DEFAULT_VLM_MODEL, DEFAULT_VLM_PROVIDER, canonical_provider
from ingestflow.spec.strategies import Strategy, strategy_of

ElementType = Literal[
    "Address",
    "EmailAddress",
    "FigureCaption",
    "Footer",
    "Formula",
    "Header",
    "Image",
    "ListItem",
    "NarrativeText",
    "PageBreak",
    "Table",
    "Title",
    "UncategorizedText",
]
ImageBlockType = Literal[
    "Abstract",
    "BulletedText",
    "Caption",
    "CodeSnippet",
    "CompositeElement",
    "Figure",
    "FigureCaption",
    "Form",
    "FormKeysValues",
    "Formula",
    "Header",
    "Image",
    "List",
    "List-item",
    "ListItem",
    "NarrativeText",
    "Paragraph",
    "Picture",
    "Table",
    "Text",
    "Threading",
    "Title",
    "UncategorizedText",
]
Provider = Literal["provider_a", "auto", "provider_b", "provider_c", "provider_d"]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class Settings(BaseModel):
    """Base of every settings model: unknown fields are errors, values are not coerced loosely."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PartitionSettings(Settings):
    """Base of the partitioners' settings: each runs one strategy (`spec.strategies`).

    A subtype whose settings choose among strategies names the discriminating wire field
    (`DISCRIMINATOR`); each strategy is a subclass that fixes that field and carries its
    `Strategy` (`STRATEGY`). Validation gives the subclass (`spec.registry.NodeKind.parse`); a
    settings object made directly from the subtype's class still knows its strategy, from the
    field."""

    SUBTYPE: ClassVar[str] = ""
    DISCRIMINATOR: ClassVar[str] = ""
    STRATEGY: ClassVar[Strategy | None] = None

    @property
    def partition_strategy(self) -> Strategy:
        """The strategy these settings run (what it provides, its stage, its needs)."""
        found = type(self).STRATEGY or strategy_of(
            self.SUBTYPE, {self.DISCRIMINATOR: getattr(self, self.DISCRIMINATOR, None)}
        )
        if found is None:  # only a settings class registered without its strategies
            raise LookupError(f"{type(self).__name__} names no registered partition strategy")
        return found

    def provides(self) -> frozenset[str]:
        """What the strategy, with these settings, provides to the nodes after it."""
        strategy = self.partition_strategy
        given = {
            need
            for need, (setting, _) in strategy.provided_by_setting.items()
            if getattr(self, setting, None)
        }
        return strategy.provides | given

    def image_blocks(self) -> tuple[str, ...]:
        """The element types whose image crops it keeps: listed ones, or the strategy's own."""
        listed = getattr(self, "extract_image_block_types", None)
        return tuple(listed or ()) or self.partition_strategy.image_blocks


class VLMPartitionSettings(PartitionSettings):
    """Partitioner subtype `vlm`: Auto (is_dynamic true) or VLM (is_dynamic false)."""

    provider: Provider = DEFAULT_VLM_PROVIDER
    provider_api_key: SecretStr | None = None
    model: str = DEFAULT_VLM_MODEL
    output_format: Literal["text/html", "application/json"] = "text/html"
    format_html: bool = True
    unique_element_ids: bool = True
    is_dynamic: bool = Field(description="true for Auto (pages routed dynamically), false for VLM")
    allow_fast: bool | None = None

    _provider = field_validator("provider", mode="before")(canonical_provider)

    SUBTYPE: ClassVar[str] = "vlm"
    DISCRIMINATOR: ClassVar[str] = "is_dynamic"

    @property
    def is_auto(self) -> bool:
        """True for the Auto strategy (pages routed dynamically)."""
        return self.is_dynamic

    @property
    def fast_allowed(self) -> bool:
        """allow_fast with VLM's default (true) applied."""
        return True if self.allow_fast is None else self.allow_fast


class UnstructuredPartitionSettings(PartitionSettings):
    """Partitioner subtype `unstructured_api`: the Fast or High Res strategy."""

    strategy: Literal["hi_res", "fast"] = Field(description="`hi_res` or `fast`")
    include_page_breaks: bool = False
    pdf_infer_table_structure: bool = False
    exclude_elements: list[ElementType] | None = None
    xml_keep_tags: bool = False
    encoding: Annotated[str, Field(min_length=1)] = "utf-8"
    ocr_languages: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["eng"]
    )
    extract_image_block_types: list[ImageBlockType] | None = None
    infer_table_structure: bool = False
    coordinates: bool = False
    # Not in SPEC.md's table, but the service's element-id rule applies to every partitioner.
    unique_element_ids: bool = True

    @field_validator("ocr_languages")
    @classmethod
    def _known_languages(cls, value: list[str]) -> list[str]:
        """Each entry one language tesseract knows: the library reads an unknown one as
        English, silently."""
        unknown = unknown_languages(value)
        if unknown:
            raise ValueError(
                f"{', '.join(repr(u) for u in unknown)}: not a language code tesseract knows; "
                "give one language per entry, as tesseract's code (eng, deu, fra, kor, chi_sim) "
                "or ISO 639 (en, de, fr); see docs/hi_res.md, 'OCR languages'"
            )
        return value

    SUBTYPE: ClassVar[str] = "unstructured_api"
    DISCRIMINATOR: ClassVar[str] = "strategy"


class FastSettings(UnstructuredPartitionSettings):
    """The Fast strategy: the library's text-layer readers."""

    strategy: Literal["fast"] = Field(description="`fast`")
    STRATEGY: ClassVar[Strategy | None] = strategies.FAST


class HiResSettings(UnstructuredPartitionSettings):
    """The High Res strategy: pages laid out, OCR where there is no text layer, tables."""

    strategy: Literal["hi_res"] = Field(description="`hi_res`")
    STRATEGY: ClassVar[Strategy | None] = strategies.HI_RES


class AutoSettings(VLMPartitionSettings):
    """The Auto strategy: each page to Fast, High Res or a VLM by what it holds."""

    is_dynamic: Literal[True] = Field(description="true")
    STRATEGY: ClassVar[Strategy | None] = strategies.AUTO


class VLMSettings(VLMPartitionSettings):
    """The VLM strategy: every page read by a vision-language model on a model server."""

    is_dynamic: Literal[False] = Field(description="false")
    STRATEGY: ClassVar[Strategy | None] = strategies.VLM


class EmptySettings(Settings):
    """Enrichments whose settings are an empty object."""


class PromptOverride(Settings):
    """`prompt_interface_overrides.prompt`."""

    user: str | None = None


class PromptInterfaceOverrides(Settings):
    """`prompt_interface_overrides` of the NER enrichment."""

    prompt: PromptOverride = PromptOverride()


class NERSettings(Settings):
    """Named entity recognition: an optional whole-prompt override."""

    prompt_interface_overrides: PromptInterfaceOverrides | None = None

    @property
    def prompt_override(self) -> str | None:
        """The user's prompt, when one replaces the default."""
        overrides = self.prompt_interface_overrides
        return overrides.prompt.user if overrides else None


class ChunkSettings(Settings):
    """Settings common to every chunker."""

    unstructured_api_url: str | None = None
    unstructured_api_key: SecretStr | None = None
    include_orig_elements: bool = False
    new_after_n_chars: NonNegativeInt | None = None
    max_characters: PositiveInt | None = None
    overlap: NonNegativeInt | None = None
    overlap_all: bool = False
    contextual_chunking_strategy: Literal["v1"] | None = None


class ChunkByCharacterSettings(ChunkSettings):
    """`chunk_by_character` (the library's `basic` strategy)."""


class ChunkByPageSettings(ChunkSettings):
    """`chunk_by_page`: a chunk never spans two pages."""


class ChunkByTitleSettings(ChunkSettings):
    """`chunk_by_title`: sections start at titles."""

    multipage_sections: bool = False
    combine_text_under_n_chars: NonNegativeInt | None = None


class ChunkBySimilaritySettings(ChunkSettings):
    """`chunk_by_similarity`: consecutive elements share a chunk while they are similar enough."""

    similarity_threshold: Annotated[float, Field(ge=0.01, le=0.99)] | None = None


class EmbedSettings(Settings):
    """Embedder: the model of the provider named by the subtype."""

    model_name: Annotated[str, Field(min_length=1)]


def unknown_languages(languages: list[str]) -> list[str]:
    """The entries of `ocr_languages` that name no language tesseract knows ("eng+kor" is two:
    one per entry)."""
    from unstructured.partition.common.lang import (
        _convert_language_code_to_pytesseract_lang_code as convert,
    )

    return [lang for lang in languages if not convert(lang.strip())]
