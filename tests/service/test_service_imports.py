"""The service reaches connectors through their registry and their public admin functions: no
Milvus client, destination or config internals (issue 38)."""

from __future__ import annotations

from tests.test_layers import SRC, _imports

#: Connector modules the service may import: the registry, the connection check, and the
#: vectordb commands' own functions (`ingestflow vectordb …`).
ALLOWED = {
    "ingestflow.connectors.registry",
    "ingestflow.connectors.check",
    "ingestflow.connectors.vectordb_admin",
    "ingestflow.connectors.local",  # file_record_id: the record id of an uploaded file
}


def test_the_service_imports_no_connector_internals() -> None:
    wrong = []
    for path in sorted((SRC / "service").rglob("*.py")):
        for target in _imports(path)[0]:
            module = ".".join(target.split(".")[:3])
            if module.startswith("ingestflow.connectors.") and module not in ALLOWED:
                wrong.append(f"{path.name} -> {target}")
    assert not wrong, wrong


def test_the_service_and_the_runner_import_no_concrete_stage() -> None:
    """Stages are reached through the node-kind registry (`spec.registry.stage_class`) and the
    stage contract (`stages.base`), never by module (issue 38: a search embeds its query by the
    registered embed kind)."""
    wrong = []
    for folder in ("service", "runner"):
        for path in sorted((SRC / folder).rglob("*.py")):
            for target in _imports(path)[0]:
                if target.startswith("ingestflow.stages") and not target.startswith(
                    "ingestflow.stages.base"
                ):
                    wrong.append(f"{folder}/{path.name} -> {target}")
    assert not wrong, wrong
