"""Rules and behaviours the fixtures alone do not pin down."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest

from ingestflow.connectors.registry import validate_connector
from ingestflow.spec.catalog import SCHEDULES
from ingestflow.spec.models import WorkflowCreate, WorkflowUpdate
from ingestflow.spec.record import cron_of, workflow_record
from ingestflow.spec.validate import validate_workflow


def workflow(*nodes: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": "w", "workflow_type": "custom", "workflow_nodes": list(nodes), **extra}


FAST: dict[str, Any] = {
    "name": "p",
    "type": "partition",
    "subtype": "unstructured_api",
    "settings": {"strategy": "fast"},
}
RETIRED = {
    "name": "p",
    "type": "partition",
    "subtype": "vlm",
    "settings": {"is_dynamic": False, "model": "claude-3-5-sonnet-20241022"},
}


def paths(data: Any, **kw: Any) -> list[str]:
    return [p.path for p in validate_workflow(data, **kw).problems]


def test_retirement_depends_on_the_date() -> None:
    assert paths(workflow(RETIRED), today=date(2025, 10, 21)) == []
    assert paths(workflow(RETIRED), today=date(2025, 10, 22)) == [
        "workflow_nodes[0].settings.model"
    ]


def test_vendor_spellings_normalise_to_spec_names() -> None:
    node = {"name": "n", "type": "prompter", "subtype": "Anthropic_NER", "settings": {}}
    part = {
        "name": "p",
        "type": "partition",
        "subtype": "vlm",
        "settings": {
            "is_dynamic": True,
            "allow_fast": True,
            "provider": "openai",
            "model": "gpt-4o",
        },
    }
    chunk = {"name": "c", "type": "chunk", "subtype": "chunk_by_title", "settings": {}}
    checked = validate_workflow(workflow(part, node, chunk, workflow_type="CUSTOM"))
    assert checked.valid, checked.problems
    assert checked.workflow is not None and checked.workflow.workflow_type == "custom"
    assert checked.nodes[1].subtype == "provider_a_ner"
    assert checked.nodes[0].settings.provider == "provider_c"  # type: ignore[union-attr]


@pytest.mark.parametrize(("given", "expected"), [("true", True), ("FALSE", False), (False, False)])
def test_reprocess_all_accepts_bool_or_word(given: Any, expected: bool) -> None:
    checked = validate_workflow(workflow(FAST, reprocess_all=given))
    assert checked.valid and checked.workflow is not None
    assert checked.workflow.reprocess_all is expected


def test_reprocess_all_defaults_true() -> None:
    checked = validate_workflow(workflow(FAST))
    assert checked.workflow is not None and checked.workflow.reprocess_all is True


@pytest.mark.parametrize(("phrase", "cron"), list(SCHEDULES.items()))
def test_schedule_phrases_map_to_cron(phrase: str, cron: str) -> None:
    body = workflow(FAST, source_id="s", schedule=phrase.upper())
    checked = validate_workflow(body)
    assert checked.valid, checked.problems
    assert checked.workflow is not None
    record = workflow_record(checked.workflow, "wf-1")
    assert record["schedule"] == {"crontab_entries": [{"cron_expression": cron}]}
    assert cron_of(phrase) == cron


def test_unknown_schedule_phrase_raises_in_cron_of() -> None:
    with pytest.raises(ValueError, match="unknown schedule phrase 'hourly-ish'"):
        cron_of("hourly-ish")


def test_record_has_spec_fields() -> None:
    body = workflow(FAST, destination_id="d-1")
    checked = validate_workflow(body)
    assert checked.workflow is not None
    record = workflow_record(checked.workflow, "wf-1", status="active")
    for key in ("name", "id", "status", "workflow_type", "sources", "destinations", "schedule"):
        assert key in record
    assert record["sources"] == [] and record["destinations"] == ["d-1"]
    assert record["schedule"] is None
    assert record["workflow_nodes"][0]["subtype"] == "unstructured_api"


def test_record_masks_secrets() -> None:
    part = {
        "name": "p",
        "type": "partition",
        "subtype": "vlm",
        "settings": {"is_dynamic": False, "provider_api_key": "sk-very-secret"},
    }
    checked = validate_workflow(workflow(part))
    assert checked.valid and checked.workflow is not None
    record = workflow_record(checked.workflow, "wf-1")
    assert "sk-very-secret" not in str(record)
    assert record["workflow_nodes"][0]["settings"]["provider_api_key"] == "********"


def test_secrets_never_reach_problems() -> None:
    part = {
        "name": "p",
        "type": "partition",
        "subtype": "vlm",
        "settings": {"is_dynamic": False, "provider_api_key": 12345678},
    }
    problems = validate_workflow(workflow(part)).problems
    assert problems and "12345678" not in str([p.as_dict() for p in problems])
    bad = {"name": "w", "type": "wiki", "config": {"url": "https://x.example", "token": 987654321}}
    problems = validate_connector(bad).problems
    assert problems and "987654321" not in str([p.as_dict() for p in problems])


def test_problems_are_all_collected_across_nodes() -> None:
    chunk = {
        "name": "c",
        "type": "chunk",
        "subtype": "chunk_by_title",
        "settings": {"max_characters": 2000, "overlap": 2500, "bogus": 1},
    }
    embed = {
        "name": "e",
        "type": "embed",
        "subtype": "ibm",
        "settings": {"model_name": "sentence-transformers/all-minilm-l6-v2"},
    }
    got = paths(workflow(FAST, chunk, embed, schedule="daily", name=""))
    assert set(got) == {
        "name",
        "schedule",
        "workflow_nodes[1].settings.bogus",
        "workflow_nodes[1].settings.overlap",
        "workflow_nodes[1].settings.max_characters",
    }


def test_broken_top_level_still_reports_node_settings() -> None:
    body = workflow({**FAST, "settings": {"strategy": "fastest"}})
    del body["name"]
    assert set(paths(body)) == {"name", "workflow_nodes[0].settings.strategy"}


def test_fast_only_settings_warn_without_failing() -> None:
    node = copy.deepcopy(FAST)
    node["settings"]["infer_table_structure"] = True
    checked = validate_workflow(workflow(node))
    assert checked.valid
    assert [w.path for w in checked.warnings] == [
        "workflow_nodes[0].settings.infer_table_structure"
    ]


def test_defaults_follow_spec() -> None:
    from ingestflow.spec import settings as s

    fast = s.UnstructuredPartitionSettings(strategy="fast")
    assert fast.ocr_languages == ["eng"] and fast.encoding == "utf-8"
    assert fast.include_page_breaks is False and fast.coordinates is False
    vlm = s.VLMPartitionSettings(is_dynamic=False)
    assert (vlm.provider, vlm.output_format, vlm.format_html, vlm.unique_element_ids) == (
        "provider_a",
        "text/html",
        True,
        True,
    )
    assert vlm.fast_allowed is True
    by_title = s.ChunkByTitleSettings()
    assert by_title.include_orig_elements is False and by_title.multipage_sections is False


def test_wiki_auth_modes() -> None:
    base = {"url": "https://wiki.example.com"}
    modes: dict[str, dict[str, Any]] = {
        "api_token": {"username": "u", "token": "t", "cloud": True},
        "pat": {"token": "t"},
        "basic": {"username": "u", "password": "p"},
    }
    for mode, creds in modes.items():
        checked = validate_connector(
            {"name": "w", "type": "confluence", "config": {**base, **creds}}, role="source"
        )
        assert checked.valid, checked.problems
        assert checked.config.auth_mode == mode


def test_connector_role_restricts_types() -> None:
    body = {
        "name": "m",
        "type": "vectordb",
        "config": {
            "user": "",
            "uri": "./m.db",
            "db_name": "default",
            "password": "",
            "collection_name": "c",
        },
    }
    assert validate_connector(body, role="destination").valid
    problems = validate_connector(body, role="source").problems
    assert [p.message for p in problems] == ["unknown connector type for a source"]


def test_update_body_is_partial() -> None:
    update = WorkflowUpdate.model_validate({"schedule": "daily", "reprocess_all": "false"})
    assert update.reprocess_all is False and update.name is None
    with pytest.raises(ValueError, match="workflow_node"):
        WorkflowUpdate.model_validate({"workflow_node": []})


def test_create_model_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        WorkflowCreate.model_validate({"name": "x", "workflow_type": "custom", "nodes": []})


def test_user_catalog_extends_models(tmp_path, monkeypatch) -> None:
    from ingestflow.spec import catalog as cat

    extra = tmp_path / "catalog.json"
    extra.write_text('{"vlm_models": {"provider_a": ["local-qwen-vl"]}}')
    monkeypatch.setenv("INGESTFLOW_CATALOG", str(extra))
    cat.catalog.cache_clear()
    try:
        part = {
            "name": "p",
            "type": "partition",
            "subtype": "vlm",
            "settings": {"is_dynamic": False, "model": "local-qwen-vl"},
        }
        assert validate_workflow(workflow(part)).valid
    finally:
        monkeypatch.delenv("INGESTFLOW_CATALOG")
        cat.catalog.cache_clear()
    assert not validate_workflow(workflow(part)).valid


@pytest.mark.parametrize("languages", [["xyz"], ["english"], ["eng", "eng+kor"]])
def test_an_ocr_language_tesseract_does_not_know_is_refused(languages: list[str]) -> None:
    # the library would read it as English, silently
    node = {**FAST, "settings": {"strategy": "hi_res", "ocr_languages": languages}}
    checked = validate_workflow(workflow(node))
    assert [p.path for p in checked.problems] == ["workflow_nodes[0].settings.ocr_languages"]
    assert "one language per entry" in checked.problems[0].message


@pytest.mark.parametrize("languages", [["eng"], ["en", "de"], ["eng", "kor"], ["chi_sim"], ["zh"]])
def test_tesseract_codes_and_iso_639_codes_are_languages(languages: list[str]) -> None:
    node = {**FAST, "settings": {"strategy": "hi_res", "ocr_languages": languages}}
    assert paths(workflow(node)) == []
