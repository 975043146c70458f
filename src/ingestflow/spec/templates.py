"""Built-in workflow templates (the service's `hi_res_partition`, `hi_res_and_enrichment`, and
offline-ready ones). A template is a named list of workflow nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingestflow.errors import NotFound
from ingestflow.spec.problems import Problem

_MINILM = "sentence-transformers/all-minilm-l6-v2"


@dataclass(frozen=True)
class Template:
    """A workflow template: id, name, description, version and its nodes."""

    id: str
    name: str
    description: str
    nodes: tuple[dict[str, Any], ...]
    version: str = "1.0.0"
    last_updated: str = "2026-11-22T00:00:00+00:00"

    def list_item(self) -> dict[str, Any]:
        """TemplateListItem."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "last_updated": self.last_updated,
        }

    def detail(self) -> dict[str, Any]:
        """TemplateDetail: the list item plus nodes, each with an id."""
        nodes = [{"id": f"{self.id}-{i}", **node} for i, node in enumerate(self.nodes)]
        return {**self.list_item(), "nodes": nodes}


def _node(name: str, type_: str, subtype: str, **settings: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "subtype": subtype, "settings": settings}


TEMPLATES: dict[str, Template] = {
    t.id: t
    for t in (
        Template(
            "hi_res_partition",
            "High Res partition",
            "Partition documents with the High Res strategy.",
            (_node("Partitioner", "partition", "unstructured_api", strategy="hi_res"),),
        ),
        Template(
            "hi_res_and_enrichment",
            "High Res partition with enrichments",
            "High Res partition, image and table descriptions, NER, chunk by title.",
            (
                _node("Partitioner", "partition", "unstructured_api", strategy="hi_res"),
                _node("Image description", "prompter", "provider_a_image_description"),
                _node("Table description", "prompter", "provider_a_table_description"),
                _node("NER", "prompter", "provider_a_ner"),
                _node("Chunker", "chunk", "chunk_by_title", max_characters=2048),
            ),
        ),
        Template(
            "fast_partition",
            "Fast partition (offline)",
            "Partition documents with the Fast strategy; runs fully offline.",
            (_node("Partitioner", "partition", "unstructured_api", strategy="fast"),),
        ),
        Template(
            "fast_chunk_embed",
            "Fast, chunk by title, embed (offline)",
            "Fast partition, chunk by title, embed with all-MiniLM-L6-v2; fully offline.",
            (
                _node("Partitioner", "partition", "unstructured_api", strategy="fast"),
                _node("Chunker", "chunk", "chunk_by_title", max_characters=800),
                _node("Embedder", "embed", "ibm", model_name=_MINILM),
            ),
        ),
        Template(
            "hi_res_chunk_embed",
            "High Res, tables, chunk by title, embed (offline)",
            "High Res partition with table structure, chunk by title, embed with "
            "all-MiniLM-L6-v2; fully offline.",
            (
                _node(
                    "Partitioner",
                    "partition",
                    "unstructured_api",
                    strategy="hi_res",
                    infer_table_structure=True,
                ),
                _node("Chunker", "chunk", "chunk_by_title", max_characters=800),
                _node("Embedder", "embed", "ibm", model_name=_MINILM),
            ),
        ),
        Template(
            "auto_partition",
            "Auto partition",
            "Each page to Fast, High Res or VLM, whichever it needs (VLM needs a model server).",
            (
                _node(
                    "Partitioner",
                    "partition",
                    "vlm",
                    is_dynamic=True,
                    allow_fast=True,
                    provider="auto",
                ),
            ),
        ),
        Template(
            "vlm_partition_chunk",
            "VLM partition, chunk by title",
            "Every page read by a vision-language model (needs a model server), chunk by title.",
            (
                _node("Partitioner", "partition", "vlm", is_dynamic=False, provider="auto"),
                _node("Chunker", "chunk", "chunk_by_title", max_characters=2048),
            ),
        ),
        Template(
            "fast_chunk_by_page",
            "Fast, chunk by page (offline)",
            "Fast partition, one chunk per page; fully offline.",
            (
                _node("Partitioner", "partition", "unstructured_api", strategy="fast"),
                _node("Chunker", "chunk", "chunk_by_page", max_characters=2048),
            ),
        ),
    )
}


def template_problem(template_id: str) -> Problem | None:
    """The problem of a `template_id` that no template has; None when one has it."""
    if template_id in TEMPLATES:
        return None
    return Problem(
        "template_id",
        "no template has this id",
        found=template_id,
        allowed=list(TEMPLATES),
        hint="`ingestflow templates list` shows them",
    )


def get_template(template_id: str) -> Template:
    """The template with this id; NotFound names the ones that exist."""
    try:
        return TEMPLATES[template_id]
    except KeyError:
        raise NotFound(
            f"template {template_id!r} not found; templates: {', '.join(TEMPLATES)}"
        ) from None


def expand_template(data: Any) -> Any:
    """A template workflow's body with the template's nodes, as a custom workflow to run."""
    if not isinstance(data, dict) or str(data.get("workflow_type", "")).lower() != "template":
        return data
    template = get_template(str(data.get("template_id")))
    expanded = {k: v for k, v in data.items() if k not in ("template_id", "workflow_type")}
    return {**expanded, "workflow_type": "custom", "workflow_nodes": list(template.nodes)}
