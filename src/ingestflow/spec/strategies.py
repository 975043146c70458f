"""Partition strategies as declarations: what each is, the stage that runs it, what it provides
to the nodes after it, and what a run needs for it. Light (no pydantic): the CLI's early
worker-server guess reads the table from a workflow's raw JSON before anything else is loaded.

A strategy's settings class (`spec.settings`: `FastSettings`, `HiResSettings`, `AutoSettings`,
`VLMSettings`) carries its `Strategy` as `STRATEGY`; nothing compares strategy names: code asks
a strategy what it does. `register_strategy` adds one (the built-in four register the way a
third party would, in `spec.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: What a node may need from the partitioner upstream of it (`Need`), by name.
CROPS = "crops"
LISTED_CROPS = "listed crops"


@dataclass(frozen=True)
class Need:
    """Something a node needs from upstream, said in words for the messages."""

    name: str
    what: str  # "the image crops of its elements"


NEEDS: dict[str, Need] = {
    CROPS: Need(CROPS, "the image crops of the elements it reads"),
    LISTED_CROPS: Need(
        LISTED_CROPS, "the image crops of the element types listed in extract_image_block_types"
    ),
}


@dataclass(frozen=True, eq=False)  # one object a strategy: equal and hashed as itself
class Strategy:
    """A partition strategy and what it declares.

    `name` is what its elements carry in `metadata.partition_strategy`; `label` how messages
    say it. `provides` are the needs (`NEEDS`) it meets for the nodes after it whatever its
    settings; `provided_by_setting` maps a need it meets only when one of its settings is given
    to that setting and a hint (the problem then points at the setting); `lacks` says, for a
    need it never meets, why (default: it does not make them). `image_blocks`: the element
    types it always crops. `lays_out_pages`: it reads PDFs and images as page layouts (the
    layout model, OCR, tables: the High Res stack); `preloaded`: its workers may be forked from
    a server that imported their libraries (`runner.preload`); `nlp_on_pages`: its page reading
    asks the library's spaCy model; `needs_torch`: it may import torch; `slow_per_document`:
    seconds a document (the runner balances documents one at a time); `pages_per_part`: pages of
    a long PDF in one part spread over the workers (0: not spread); `loading`: what its workers
    load first, in words; `preload`: the function ("module:function") that imports it once in
    a run's fork server (`runner.preloaded`)."""

    name: str
    label: str
    stage: str  # "module:Class"
    provides: frozenset[str] = frozenset()
    provided_by_setting: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    lacks: Mapping[str, str] = field(default_factory=dict)
    image_blocks: tuple[str, ...] = ()
    lays_out_pages: bool = False
    preloaded: bool = False
    nlp_on_pages: bool = True
    needs_torch: bool = False
    slow_per_document: bool = False
    pages_per_part: int = 0
    loading: str = "the partitioner"
    preload: str = ""  # "module:function" a run's fork server calls with its spec

    def why_not(self, need: str) -> str:
        """Why this strategy does not meet `need`, in words that follow "the X strategy"."""
        return self.lacks.get(need, "does not make them")


#: (subtype, discriminating field, its value) -> the strategy. The wire fields decide.
_STRATEGIES: dict[tuple[str, str, Any], Strategy] = {}


def register_strategy(subtype: str, field_name: str, value: Any, strategy: Strategy) -> None:
    """Register the strategy a partitioner subtype runs when `field_name` is `value`; a second
    registration of the same (subtype, field, value) or the same name is an error."""
    key = (subtype, field_name, value)
    if key in _STRATEGIES:
        raise ValueError(
            f"partition strategy {strategy.name!r}: {subtype} with {field_name}={value!r} is "
            f"already the {_STRATEGIES[key].name!r} strategy"
        )
    if any(s.name == strategy.name for s in _STRATEGIES.values()):
        raise ValueError(f"partition strategy {strategy.name!r} is already registered")
    if ":" not in strategy.stage or (strategy.preloaded and ":" not in strategy.preload):
        raise ValueError(
            f"partition strategy {strategy.name!r}: its stage must be 'module:Class' and, when "
            f"preloaded, its preload 'module:function'; found {strategy.stage!r}, "
            f"{strategy.preload!r}"
        )
    unknown = (set(strategy.provides) | set(strategy.provided_by_setting)) - set(NEEDS)
    if unknown:
        raise ValueError(
            f"partition strategy {strategy.name!r} provides what no node needs: "
            f"{', '.join(sorted(unknown))} (known: {', '.join(NEEDS)})"
        )
    _STRATEGIES[key] = strategy


def strategy_of(subtype: Any, settings: Mapping[str, Any]) -> Strategy | None:
    """The strategy a partition node's settings name (raw JSON or parsed values), or None."""
    for (sub, field_name, value), strategy in _STRATEGIES.items():
        given = settings.get(field_name)
        if sub == subtype and type(given) is type(value) and given == value:
            return strategy
    return None


def strategies() -> list[Strategy]:
    """Every registered strategy, in registration order."""
    return list(_STRATEGIES.values())


def providers_of(need: str) -> list[str]:
    """The labels of the strategies that can meet `need`."""
    return [
        s.label for s in _STRATEGIES.values() if need in s.provides or need in s.provided_by_setting
    ]


_PARTITION = "ingestflow.stages.partition:UnstructuredPartitionStage"
_AUTO_VLM = "ingestflow.stages.partition.auto:VLMPartitionStage"
_PAGES = "the layout and OCR models"
_PRELOAD = "ingestflow.stages.partition.preload:load"

FAST = Strategy(
    "fast",
    "Fast",
    _PARTITION,
    lacks={
        CROPS: "reads text layers only: the node never takes effect with the Fast strategy",
    },
    preloaded=True,
    preload=_PRELOAD,
    pages_per_part=24,  # a part costs a partition call: Fast reads tens of pages a second
)
HI_RES = Strategy(
    "hi_res",
    "High Res",
    _PARTITION,
    provides=frozenset({CROPS}),
    provided_by_setting={
        LISTED_CROPS: (
            "extract_image_block_types",
            'list the element types to read, e.g. ["Table", "Image"]',
        )
    },
    lays_out_pages=True,
    preloaded=True,
    preload=_PRELOAD,
    nlp_on_pages=False,
    slow_per_document=True,
    pages_per_part=2,  # High Res reads about a page a second
    loading=_PAGES,
)
AUTO = Strategy(
    "auto",
    "Auto",
    _AUTO_VLM,
    provides=frozenset({CROPS}),
    lacks={
        LISTED_CROPS: "has no extract_image_block_types setting (use High Res and list the types)"
    },
    image_blocks=("Image", "Table"),
    lays_out_pages=True,
    preloaded=True,
    preload=_PRELOAD,
    slow_per_document=True,
    pages_per_part=4,
    loading=_PAGES,
)
VLM = Strategy(
    "vlm",
    "VLM",
    _AUTO_VLM,
    lacks={
        CROPS: "produces image and table descriptions itself: the node is not allowed with "
        "the VLM partitioner",
        LISTED_CROPS: "reads pages with a model server and makes no crops",
    },
    needs_torch=True,  # left alone: its pages go to a model server
    slow_per_document=True,
    pages_per_part=4,
)


# The built-in strategies register as any other would.
register_strategy("unstructured_api", "strategy", "fast", FAST)
register_strategy("unstructured_api", "strategy", "hi_res", HI_RES)
register_strategy("vlm", "is_dynamic", True, AUTO)
register_strategy("vlm", "is_dynamic", False, VLM)
