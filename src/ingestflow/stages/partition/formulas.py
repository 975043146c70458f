"""What High Res says about its formulas: a display formula is one Formula element whose text is
as read from the page (the text layer, or OCR). No formula recogniser ships offline with its
weights under a licence that fits (docs/hi_res.md, "Formulas"), so LaTeX comes only from a
generative OCR node with a model server (`stages.prompter`); without one, a document with
formulas says once why they have no LaTeX."""

from __future__ import annotations

from collections.abc import Iterable

from ingestflow.elements import Element

#: The warning of a document with formulas that no later node turns into LaTeX.
NO_LATEX = (
    "formulas are kept as read; no LaTeX recogniser is installed (none ships offline with its "
    "weights under a fitting licence): for LaTeX, use High Res with Formula in "
    "extract_image_block_types and add an OCR enrichment node with a model server "
    "(docs/hi_res.md, Formulas)"
)


def latex_later(tasks: Iterable[str], image_blocks: Iterable[str]) -> bool:
    """True when a node after the partitioner asks a model for the formulas' LaTeX: a generative
    OCR node, with Formula among the crops it reads."""
    return "ocr" in tasks and "formula" in {block.lower() for block in image_blocks}


def notes(elements: list[Element], later: bool) -> list[str]:
    """`NO_LATEX` when some element is a Formula without LaTeX and no later node gives it."""
    if later:
        return []
    bare = any(
        e.get("type") == "Formula" and not (e.get("metadata") or {}).get("latex") for e in elements
    )
    return [NO_LATEX] if bare else []
