"""Enrichments get their crops (issue 22, point 5): a description node after High Res has the
crops it needs made for it whatever `extract_image_block_types` says, those crops leave the
output after it unless the user listed their type, and a node that finds nothing to act on in a
whole job says so in the job's message."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.runner.plan import build_plan
from tests.fakes.models import FakeModelServer, Request

KEY = "sk-crops-secret-1234"
SUMMARY = "Containers and bulk cargo per port."


def workflow(blocks: list[str] | None, *enrichments: tuple[str, str]) -> dict[str, Any]:
    """hi_res (with `blocks` as extract_image_block_types when given) → enrichments → chunker."""
    settings: dict[str, Any] = {
        "strategy": "hi_res",
        "unique_element_ids": False,
        "infer_table_structure": True,
    }
    if blocks is not None:
        settings["extract_image_block_types"] = blocks
    nodes = [
        {
            "name": "Partitioner",
            "type": "partition",
            "subtype": "unstructured_api",
            "settings": settings,
        }
    ]
    nodes += [
        {"name": n, "type": "prompter", "subtype": sub, "settings": {}} for n, sub in enrichments
    ]
    nodes.append(
        {
            "name": "Chunker",
            "type": "chunk",
            "subtype": "chunk_by_title",
            "settings": {"max_characters": 1500, "include_orig_elements": True},
        }
    )
    return {"name": "crops", "workflow_type": "custom", "workflow_nodes": nodes}


TABLES = ("Tables", "openai_table_description")


def crops(plan: Any) -> tuple[str, ...]:
    """The crops the plan asks the partitioner to make for the nodes after it."""
    return tuple(plan.nodes[0].inputs.crops_for_later)


def drops(plan: Any) -> dict[str, tuple[str, ...]]:
    """Node name -> the crops that leave the documents after it."""
    return {n.name: n.inputs.drop_crops for n in plan.nodes if n.inputs.drop_crops}


# --- the plan: who needs which crops, and where they go --------------------------------------
def test_the_plan_derives_the_crops_from_the_enrichment_nodes() -> None:
    plan = build_plan(
        workflow(None, TABLES, ("Pictures", "openai_image_description")), endpoints={}
    )
    assert crops(plan) == ("Table", "Image")
    assert drops(plan) == {"Tables": ("Table",), "Pictures": ("Image",)}


def test_listed_types_keep_their_crops_and_the_last_node_that_needs_one_drops_it() -> None:
    plan = build_plan(
        workflow(
            ["Table"],
            TABLES,
            ("Html", "openai_table2html"),
            ("Pictures", "openai_image_description"),
        ),
        endpoints={},
    )
    assert drops(plan) == {"Pictures": ("Image",)}
    plan = build_plan(workflow(None, TABLES, ("Html", "openai_table2html")), endpoints={})
    assert drops(plan) == {"Html": ("Table",)}  # the later one of the two


def test_ner_and_ocr_need_no_crops_of_their_own() -> None:
    plan = build_plan(
        workflow(["Image"], ("Entities", "anthropic_ner"), ("Ocr", "anthropic_ocr")), endpoints={}
    )
    assert crops(plan) == ()
    assert drops(plan) == {}


# --- a run against a model server on loopback -------------------------------------------------
def run(
    tmp_path: Path, wf: dict[str, Any], files: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], list[Request]]:
    """Run `wf` over `files` (name → PIL page or text) with the fake model server answering."""
    folder = tmp_path / "in"
    folder.mkdir()
    for name, content in files.items():
        if isinstance(content, str):
            (folder / name).write_text(content)
        else:
            content.save(folder / name, resolution=200.0)
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(wf))
    with FakeModelServer(key=KEY) as server:
        server.reply(lambda request: SUMMARY)
        monkeypatch.setenv("INGESTFLOW_OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("INGESTFLOW_OPENAI_API_KEY", KEY)
        result = CliRunner().invoke(
            app,
            [
                "run",
                str(path),
                "-i",
                str(folder),
                "-o",
                str(tmp_path / "out"),
                "--workspace",
                str(tmp_path / "ws"),
                "--workers",
                "1",
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), server.requests


def originals(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    """The elements inside the chunks written for `name` (their `orig_elements`)."""
    from unstructured.staging.base import elements_from_base64_gzipped_json

    chunks = json.loads((tmp_path / "out" / f"{name}.json").read_text())
    return [
        {"type": e.category, "text": e.text, "metadata": e.metadata.to_dict()}
        for chunk in chunks
        for e in elements_from_base64_gzipped_json(chunk["metadata"]["orig_elements"])
    ]


@pytest.mark.slow
def test_a_table_description_after_hi_res_gets_its_crop_and_the_output_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PIL import Image

    from tests.stages.test_hires import draw_page

    record, requests = run(tmp_path, workflow(None, TABLES), {"scan.pdf": draw_page()}, monkeypatch)
    (request,) = requests  # one Table on the page: one request, with its crop
    (crop,) = request.images
    width, height = Image.open(io.BytesIO(base64.b64decode(crop))).size
    assert 1000 < width < 1700 and 150 < height < 800  # the table's box, not the 1700x2200 page
    assert "found nothing to act on" not in (record["message"] or "")
    elements = originals(tmp_path, "scan.pdf")
    tables = [e for e in elements if e["type"] == "Table"]
    assert [t["text"] for t in tables] == [SUMMARY]
    assert tables[0]["metadata"].get("text_as_html")
    assert not any({"image_base64", "image_mime_type"} & set(e["metadata"]) for e in elements)
    assert "image_base64" not in (tmp_path / "out" / "scan.pdf.json").read_text()


@pytest.mark.slow
def test_a_listed_type_keeps_its_crop_in_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.stages.test_hires import draw_page

    _, requests = run(tmp_path, workflow(["Table"], TABLES), {"scan.pdf": draw_page()}, monkeypatch)
    (request,) = requests
    (table,) = [e for e in originals(tmp_path, "scan.pdf") if e["type"] == "Table"]
    assert table["text"] == SUMMARY
    assert table["metadata"]["image_base64"] == request.images[0]
    assert table["metadata"]["image_mime_type"] == "image/jpeg"


@pytest.mark.slow
def test_a_node_that_finds_nothing_in_the_whole_job_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"notes.txt": "Ada Lovelace wrote the first program.\n", "more.txt": "No tables.\n"}
    record, requests = run(tmp_path, workflow(None, TABLES), files, monkeypatch)
    assert requests == []
    assert record["status"] == "COMPLETED"
    assert (
        "enrichment node 'Tables' (table description) found nothing to act on: no Table element "
        "with its image crop in the 2 document(s) it received, so it changed nothing"
    ) in record["message"]
    assert KEY not in json.dumps(record)


@pytest.mark.slow
def test_auto_gives_a_table_description_its_crop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.stages.test_hires import draw_page

    wf = workflow(None, TABLES)
    wf["workflow_nodes"][0] = {
        "name": "Partitioner",
        "type": "partition",
        "subtype": "vlm",
        "settings": {"is_dynamic": True, "allow_fast": True, "unique_element_ids": False},
    }
    monkeypatch.delenv("INGESTFLOW_PROVIDER_A_BASE_URL", raising=False)
    monkeypatch.delenv("INGESTFLOW_ANTHROPIC_BASE_URL", raising=False)
    record, requests = run(tmp_path, wf, {"scan.pdf": draw_page()}, monkeypatch)
    (request,) = requests  # the scan went to High Res (no VLM server): its table, cropped
    (table,) = [e for e in originals(tmp_path, "scan.pdf") if e["type"] == "Table"]
    assert table["text"] == SUMMARY
    assert table["metadata"]["partition_strategy"] == "hi_res"
    assert table["metadata"]["image_base64"] == request.images[0]  # Auto keeps its crops
    assert "VLM was unavailable" in record["message"]
