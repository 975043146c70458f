"""Enrichment nodes (type `prompter`): a model describes, transcribes or annotates elements.

- image_description: Image elements with `image_base64`; `text` becomes JSON (type,
  description, texts, tables, data).
- table_description: Table elements with `image_base64`; `text` becomes the summary
  (`text_as_html` and the image stay).
- table2html: Table elements with `image_base64`; `metadata.text_as_html`.
- ner: every element with text; `metadata.entities` = {items, relationships}.
- ocr: the partitioner's `extract_image_block_types` with `image_base64` (not the Image or Table
  elements a description node handles); `text` becomes the transcription. A Formula is asked for
  LaTeX, which becomes its `text` and `metadata.latex` (written as `$$…$$` in Markdown).

Images come from High Res or Auto (`image_base64`); with Fast there are none, so image and table
tasks find nothing to do (validation already refuses them with Fast). Which element types a node
needs cropped is the registry's (`NodeKind.crops`): High Res crops them whatever
`extract_image_block_types` says, and the node named in `RunContext.drop_crops_after` drops the
crops the user did not list from its output. Each document records how many elements each node
acted on (`doc.stats[ACTED_ON]`): a node that acted on none in a whole job is named in the job's
message (`runner.enrichment`). Requests for a document's
elements run concurrently, at most the endpoint's concurrency at once. A failed request (after
the client's retries) or an unusable answer fails the document, with a reason naming the node and
the provider's error; the run goes on.

Protocol `local` (no model server): NER with spaCy and OCR with tesseract (`providers.local`),
recorded in `metadata.enriched_by`; the other tasks need a model. Tesseract reads no LaTeX: a
document whose formulas it read says so (`LOCAL_FORMULAS`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from ingestflow.elements import Document, Element
from ingestflow.errors import EnvironmentProblem, StageError
from ingestflow.providers import config, local, prompts
from ingestflow.providers.client import (
    Image,
    ModelClient,
    ProviderError,
    first_error,
    map_bounded,
)
from ingestflow.spec.catalog import ENRICHMENT_SUBTYPES
from ingestflow.spec.registry import lookup
from ingestflow.spec.settings import NERSettings, Settings
from ingestflow.stages.base import ACTED_ON, NodeInputs, RunContext, Stage

_IMAGE_TASKS = ("image_description", "table_description", "table2html", "ocr")
#: `Document.stats` key: node name -> how many of the document's elements the node acted on.
#: The metadata of an element's crop.
_CROP_FIELDS = ("image_base64", "image_mime_type")
_LOCAL_TASKS = ("ner", "ocr")
#: The warning of a document whose Formula elements the offline OCR backend read.
LOCAL_FORMULAS = (
    "formulas were read by tesseract (OCR protocol `local`), which gives text, not LaTeX; for "
    "LaTeX point the OCR node's provider at a model server (docs/hi_res.md, Formulas)"
)


class PrompterStage(Stage):
    """One enrichment node."""

    tallies_acted_on = True

    def __init__(
        self,
        name: str,
        subtype: str,
        settings: Settings,
        context: RunContext,
        inputs: NodeInputs | None = None,
    ) -> None:
        super().__init__(name, subtype, settings, context, inputs)
        self.task = ENRICHMENT_SUBTYPES[subtype]
        self.provider = subtype[: len("provider_x")]
        self._client: ModelClient | None = None
        self.endpoint: config.Endpoint | None = None
        kind = lookup("prompter", subtype)
        #: The element types whose crop this node sends (the registry's rule; none for NER, OCR).
        self.crops = kind.crops if kind is not None else ()

    @property
    def what(self) -> str:
        return f"enrichment node {self.name!r} ({self.subtype})"

    def precheck(self) -> None:
        """Stop before any document when the provider has no endpoint, or its protocol cannot
        do this task."""
        endpoint = config.resolve(self.provider, self.context.endpoints)
        if endpoint is None:
            raise config.missing(self.what, self.provider)
        if endpoint.protocol == "local" and self.task not in _LOCAL_TASKS:
            raise EnvironmentProblem(
                f"{self.what}: {endpoint.variable.replace('BASE_URL', 'PROTOCOL')} is `local`, "
                f"and the offline backends do only NER (spaCy) and OCR (tesseract); "
                f"{self.task.replace('_', ' ')} needs a model server (protocol openai or "
                "anthropic)"
            )
        if endpoint.protocol != "local":
            problem = config.unreachable(self.what, endpoint)
            if problem:
                raise problem
        self.endpoint = endpoint

    def open(self) -> None:
        """Build the client (or load the offline backend) once per process."""
        if self.endpoint is None:
            self.precheck()
        assert self.endpoint is not None
        if self.endpoint.protocol == "local":
            if self.task == "ner":
                local.load_ner()
            return
        self._client = ModelClient(self.endpoint, config.DEFAULT_MODELS.get(self.provider))

    def process(self, doc: Document) -> Document:
        """Enrich the document's elements; StageError when a request or an answer fails."""
        self.open()
        targets = [i for i, e in enumerate(doc.elements) if self._wants(e)]
        # a new dict: the one before may be shared with a traced node's notes
        doc.stats[ACTED_ON] = {**doc.stats.get(ACTED_ON, {}), self.name: len(targets)}
        if not targets:
            return self._drop_crops(doc)
        elements = [
            copy.deepcopy(e) if i in set(targets) else e for i, e in enumerate(doc.elements)
        ]
        run = self._runner()
        assert self.endpoint is not None
        results = map_bounded(
            lambda i: run(elements[i]),
            targets,
            1 if self._client is None else self.endpoint.concurrency,
        )
        error = first_error(results)
        if error is not None:
            raise StageError(self.name, doc.filename, self._reason(error)) from None
        doc.elements = elements
        if self._client is None and any(elements[i].get("type") == "Formula" for i in targets):
            doc.warnings.append(LOCAL_FORMULAS)
        return self._drop_crops(doc)

    def _drop_crops(self, doc: Document) -> Document:
        """The document without the crops made for the enrichments only, once no later node
        needs them (`NodeInputs.drop_crops`); the elements are copied, not changed."""
        types = set(self.inputs.drop_crops)
        if not types:
            return doc
        doc.elements = [_without_crop(e) if e.get("type") in types else e for e in doc.elements]
        return doc

    def what_it_does(self) -> str:
        """Its task, in words ("table description")."""
        return self.task.replace("_", " ")

    def what_it_reads(self) -> str:
        """What this node acts on, in words (for the job's message when it found none)."""
        if self.crops:
            return " or ".join(f"{kind} element" for kind in self.crops) + " with its image crop"
        if self.task == "ocr":
            listed = ", ".join(self.inputs.image_types) or "none"
            return f"element of the types in extract_image_block_types ({listed}) with its image"
        return "element with text"

    # --- which elements -------------------------------------------------------------------------
    def _wants(self, element: Element) -> bool:
        kind = element.get("type")
        has_image = bool(element.get("metadata", {}).get("image_base64"))
        if self.crops:
            return kind in self.crops and has_image
        if self.task == "ocr":
            if kind not in self.inputs.image_types or not has_image:
                return False
            tasks = self.inputs.tasks
            if kind == "Image" and "image_description" in tasks:
                return False
            return not (kind == "Table" and "table_description" in tasks)
        return bool((element.get("text") or "").strip())  # ner

    # --- one element ----------------------------------------------------------------------------
    def _runner(self) -> Callable[[Element], None]:
        if self._client is None:  # protocol local
            return self._local
        return {
            "image_description": self._describe_image,
            "table_description": self._describe_table,
            "table2html": self._table_html,
            "ner": self._ner,
            "ocr": self._ocr,
        }[self.task]

    def _image(self, element: Element) -> list[Image]:
        metadata = element["metadata"]
        return [Image(metadata["image_base64"], metadata.get("image_mime_type") or "image/png")]

    def _describe_image(self, element: Element) -> None:
        assert self._client is not None
        answer = self._client.chat(prompts.IMAGE_DESCRIPTION_PROMPT, self._image(element))
        try:
            described: dict[str, Any] = prompts.json_object(answer)
        except prompts.AnswerError:  # prose instead of JSON: the description is still the model's
            described = {"type": "other", "description": prompts.unfence(answer)}
        element["text"] = json.dumps(described, ensure_ascii=False)

    def _describe_table(self, element: Element) -> None:
        assert self._client is not None
        prompt = prompts.TABLE_DESCRIPTION_PROMPT
        html = element["metadata"].get("text_as_html")
        if html:
            prompt += f"\n\nThe table's cells as read from the page:\n{html}"
        element["text"] = prompts.unfence(self._client.chat(prompt, self._image(element)))

    def _table_html(self, element: Element) -> None:
        assert self._client is not None
        answer = self._client.chat(prompts.TABLE_TO_HTML_PROMPT, self._image(element))
        element["metadata"]["text_as_html"] = prompts.html_table(answer)

    def _ner(self, element: Element) -> None:
        assert self._client is not None
        template = prompts.NER_PROMPT
        if isinstance(self.settings, NERSettings) and self.settings.prompt_override:
            template = self.settings.prompt_override
        answer = self._client.chat(template.replace("{{text}}", element["text"]))
        element["metadata"]["entities"] = prompts.entities(answer)

    def _ocr(self, element: Element) -> None:
        assert self._client is not None
        if element.get("type") == "Formula":
            answer = self._client.chat(prompts.FORMULA_PROMPT, self._image(element))
            element["text"] = element["metadata"]["latex"] = prompts.latex(answer)
            return
        element["text"] = prompts.unfence(
            self._client.chat(prompts.OCR_PROMPT, self._image(element))
        )

    def _local(self, element: Element) -> None:
        metadata = element["metadata"]
        if self.task == "ner":
            metadata["entities"] = local.ner(element["text"])
            backend = local.NER_BACKEND
        else:
            from ingestflow.stages.partition.hires import tesseract_codes

            languages = "+".join(tesseract_codes(list(self.inputs.languages)))
            element["text"] = local.ocr(metadata["image_base64"], languages)
            backend = local.OCR_BACKEND
        metadata.setdefault("enriched_by", {})[self.name] = backend

    def _reason(self, exc: BaseException) -> str:
        if isinstance(exc, prompts.AnswerError):
            return f"{self.provider} answered something unusable for {self.task}: {exc}"
        if isinstance(exc, ProviderError):
            return str(exc)
        return f"{self.task} failed: {exc.__class__.__name__}: {exc}"


def _without_crop(element: Element) -> Element:
    """A copy of `element` without its image crop (the element itself when it has none)."""
    metadata = element.get("metadata") or {}
    if not any(key in metadata for key in _CROP_FIELDS):
        return element
    kept = {k: v for k, v in metadata.items() if k not in _CROP_FIELDS}
    return {**element, "metadata": kept}
