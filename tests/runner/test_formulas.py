"""Formulas under High Res (issue 39, point 7): each display formula is a Formula element; its
LaTeX comes from a generative OCR node with a model server (asked with the formula's crop), and
without one the document says once why its formulas have no LaTeX (no recogniser ships offline:
docs/hi_res.md, "Formulas")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingestflow.providers.prompts import FORMULA_PROMPT
from ingestflow.stages.partition.formulas import NO_LATEX
from tests.runner.test_enrich_crops import originals, run, workflow

pytestmark = pytest.mark.slow

PARAGRAPH = (
    "The harbour authority met on Monday to review the cargo volumes of the quarter.",
    "Container traffic grew while bulk shipments fell slightly compared with last year.",
    "The model below gives the expected volume of each berth over the season.",
)
FORMULAS = (r"\int_0^{\infty} e^{-x^2}\,dx = \frac{\sqrt{\pi}}{2}", r"\sum_{k=1}^{n} k = n^2")


class _Page:
    """A text PDF with two display formulas between paragraphs (matplotlib's mathtext: the
    formulas' glyphs are in the text layer, as in a typeset paper), saved as `run` saves pages."""

    def save(self, path: Path, resolution: float = 0.0) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure = plt.figure(figsize=(8.27, 11.69))
        y = 0.9
        for formula in FORMULAS:
            for line in PARAGRAPH:
                figure.text(0.1, y, line, fontsize=11)
                y -= 0.022
            figure.text(0.5, y - 0.05, f"${formula}$", fontsize=20, ha="center")
            y -= 0.13
        figure.savefig(path)
        plt.close(figure)


def formulas(tmp_path: Path) -> list[dict[str, Any]]:
    return [e for e in originals(tmp_path, "paper.pdf") if e["type"] == "Formula"]


def test_without_a_latex_node_formulas_are_kept_as_read_and_the_document_says_why_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, requests = run(tmp_path, workflow(None), {"paper.pdf": _Page()}, monkeypatch)
    assert requests == []
    found = formulas(tmp_path)
    assert found and all(f["text"] and "latex" not in f["metadata"] for f in found)
    assert any("√π" in f["text"] for f in found)  # the text layer's glyphs, as read
    (document,) = record["files"]
    assert document["warnings"].count(NO_LATEX) == 1


def test_an_ocr_node_with_a_model_server_gives_each_formula_its_latex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf = workflow(["Formula"], ("Latex", "openai_ocr"))
    monkeypatch.setattr("tests.runner.test_enrich_crops.SUMMARY", "$$ e^{i\\pi} + 1 = 0 $$")
    record, requests = run(tmp_path, wf, {"paper.pdf": _Page()}, monkeypatch)
    found = formulas(tmp_path)
    assert found and len(requests) == len(found)
    assert all(r.text == FORMULA_PROMPT and len(r.images) == 1 for r in requests)
    for formula in found:  # the delimiters the model added are gone
        assert formula["metadata"]["latex"] == formula["text"] == "e^{i\\pi} + 1 = 0"
    (document,) = record["files"]
    assert NO_LATEX not in document["warnings"]
