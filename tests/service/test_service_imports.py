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
