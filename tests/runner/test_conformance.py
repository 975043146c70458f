"""The engine adds nothing and loses nothing: `ingestflow run` (two worker processes) on corpus
documents gives the element types and text that `unstructured` gives when called directly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app

pytestmark = pytest.mark.corpus
DOCS = [
    "fake-text.txt",
    "book-war-and-peace-1p.txt",
    "fake.docx",
    "handbook-1p.docx",
    "docx-tables.docx",
    "fake-power-point-table.pptx",
    "stanley-cups.xlsx",
    "stanley-cups.tsv",
    "example-10k-1p.html",
    "ideas-page.html",
    "fake-email.msg",
    "fake-doc.rtf",
    "fake.odt",
    "eml/fake-email-attachment.eml",
    "pdf/layout-parser-paper-fast.pdf",
    "pdf/list-item-example.pdf",
    "pdf/multi-column-2p.pdf",
    "pdf/DA-1p-with-duplicate-pages.pdf",
]
SETTINGS = {"strategy": "fast", "include_page_breaks": True, "unique_element_ids": False}


def direct(path: Path) -> list[tuple[str, str]]:
    from ingestflow.stages.partition import configure_unstructured

    configure_unstructured()
    from unstructured.partition.auto import partition

    elements = partition(filename=str(path), strategy="fast", include_page_breaks=True)
    return [(e.category, e.text) for e in elements]


@pytest.mark.slow
def test_pipeline_output_equals_the_library(tmp_path: Path, corpus: Path) -> None:
    folder = tmp_path / "in"
    for name in DOCS:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus / "docs" / name, target)
    workflow = tmp_path / "wf.json"
    workflow.write_text(
        json.dumps(
            {
                "name": "conformance",
                "workflow_type": "custom",
                "workflow_nodes": [
                    {
                        "name": "Partitioner",
                        "type": "partition",
                        "subtype": "unstructured_api",
                        "settings": SETTINGS,
                    }
                ],
            }
        )
    )
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(workflow),
            "-i",
            str(folder),
            "-o",
            str(tmp_path / "out"),
            "--workers",
            "2",
            "--workspace",
            str(tmp_path / "ws"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    for name in DOCS:
        produced = json.loads((tmp_path / "out" / f"{name}.json").read_text())
        got = [(e["type"], e["text"]) for e in produced]
        if name.endswith(".eml"):
            # the engine keeps the body and partitions attachments itself (documented); the body
            # must equal the library's output with attachments left out
            from unstructured.partition.email import partition_email

            body = partition_email(filename=str(folder / name), include_page_breaks=True)
            expected = [(e.category, e.text) for e in body]
            assert got[: len(expected)] == expected, name
            continue
        assert got == direct(folder / name), name
        assert len({e["element_id"] for e in produced}) == len(produced), name
