"""The OpenAPI document, as a running server serves it, declares the error statuses each
operation answers: 404 where a path names a resource, 409 where the resource's state can clash,
413 where a body or upload is bounded, with the body shape the server sends."""

from __future__ import annotations

from typing import Any

from tests.server.conftest import API, Server

CONFLICTS = {
    ("delete", "/workflows/{workflow_id}"),
    ("post", "/jobs/{job_id}/cancel"),
    ("delete", "/sources/{connector_id}"),
    ("delete", "/destinations/{connector_id}"),
}
BOUNDED = {
    ("post", "/workflows"),
    ("put", "/workflows/{workflow_id}"),
    ("post", "/workflows/{workflow_id}/run"),
    ("post", "/jobs"),
    ("post", "/sources"),
    ("put", "/sources/{connector_id}"),
    ("post", "/destinations"),
    ("put", "/destinations/{connector_id}"),
}
JSON_BODIES = {(m, p) for m, p in BOUNDED if p != "/jobs" and not p.endswith("/run")}


def expected(method: str, path: str) -> set[str]:
    """The error statuses an operation must declare."""
    codes = {"404"} if "{" in path else set()
    codes |= {"409"} if (method, path) in CONFLICTS else set()
    codes |= {"413", "422"} if (method, path) in BOUNDED else set()
    return codes


def schema_of(doc: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    ref = response["content"]["application/json"]["schema"]["$ref"]
    return doc["components"]["schemas"][ref.rsplit("/", 1)[-1]]


def test_every_operation_declares_the_errors_it_answers(server: Server) -> None:
    doc = server.client().get("/openapi.json").json()
    seen = set()
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            short = path.removeprefix(API)
            seen.add((method, short))
            declared = set(operation["responses"])
            missing = expected(method, short) - declared
            assert not missing, f"{method.upper()} {path} does not declare {sorted(missing)}"
            for code in {"404", "409", "413"} & declared:
                error = schema_of(doc, operation["responses"][code])
                assert error["properties"]["detail"]["type"] == "string", (path, code)
                assert operation["responses"][code]["description"], (path, code)
            if "422" in declared:
                invalid = schema_of(doc, operation["responses"]["422"])
                assert invalid["properties"]["detail"]["type"] == "array", path
            if (method, short) in JSON_BODIES:
                body = operation["requestBody"]
                assert body["required"] and "application/json" in body["content"], path
    assert seen >= CONFLICTS | BOUNDED
