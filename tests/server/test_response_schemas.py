"""/openapi.json documents the records each operation answers, in the official SDK's shapes.

The SDK's operations are read from the SDK itself (each one's method, path, success status and
the shared model it parses the body into), so an operation it gains or a field it comes to
require shows up here. For every such operation the served response schema must hold each field
of the SDK's model, require what the SDK requires, and give it the SDK's JSON type (nested
models compared the same way); a field the SDK cannot take as null is never nullable here.
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
import typing
from datetime import datetime
from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel
from unstructured_client.models import shared
from unstructured_client.types.basemodel import Unset

from tests.server.conftest import Server

SDK_GROUPS = ("workflows", "jobs", "sources", "destinations", "templates")
_SUCCESS = re.compile(
    r'match_response\(http_res, "(2\d\d)", "application/json"\):\s*'
    r"return operations\.\w+\(\s*\w+=unmarshal_json_response\(\s*Optional\[(.+?)\],\s*http_res",
    re.S,
)


def sdk_operations() -> list[tuple[str, str, str, str, str]]:
    """(operation, method, path with `{}` for each parameter, success status, body type) of
    every operation of the SDK's REST groups."""
    found = []
    for group in SDK_GROUPS:
        module = importlib.import_module(f"unstructured_client.{group}")
        cls = next(
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if c.__module__ == module.__name__
        )
        for name, func in vars(cls).items():  # its own operations, not what BaseSDK has
            if not inspect.isfunction(func) or name.startswith("_") or name.endswith("_async"):
                continue
            source = inspect.getsource(func)
            method = re.search(r'method="(\w+)"', source)
            path = re.search(r'path="([^"]+)"', source)
            success = _SUCCESS.search(source)
            assert method and path and success, f"cannot read the SDK's {group}.{name}"
            where = re.sub(r"\{\w+\}", "{}", path[1]).rstrip("/")
            found.append((f"{group}.{name}", method[1].lower(), where, success[1], success[2]))
    return found


def sdk_type(annotation: Any) -> tuple[Any, bool]:
    """The type an SDK field holds, and whether it may be null."""
    nullable = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is not None and hasattr(origin, "__value__"):  # Nullable[T], OptionalNullable[T]
            nullable, annotation = True, typing.get_args(annotation)[0]
        elif hasattr(annotation, "__value__"):  # a named union (a connector's config)
            annotation = annotation.__value__
        elif origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a not in (type(None), Unset)]
            nullable |= len(args) < len(typing.get_args(annotation))
            if len(args) > 1:
                return args, nullable  # one of several models
            annotation = args[0]
        else:
            return annotation, nullable


def json_type(annotation: Any) -> str | None:
    """The JSON type of an SDK type (None: anything)."""
    origin = typing.get_origin(annotation) or annotation
    if isinstance(annotation, list):
        return "object" if all(issubclass(a, BaseModel) for a in annotation) else None
    if not isinstance(origin, type):
        return None
    for kind, name in (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
        (datetime, "string"),
        (list, "array"),
        (dict, "object"),
        (BaseModel, "object"),
    ):
        if issubclass(origin, kind) or (kind is str and issubclass(origin, Enum)):
            return name
    return None


class Schemas:
    """The served OpenAPI document's schemas, `$ref`s followed."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self.doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    def options(self, schema: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
        """The non-null alternatives of a schema, and whether null is one."""
        schema = self.resolve(schema)
        every = [self.resolve(s) for s in schema.get("anyOf", [schema])]
        kept = [s for s in every if s.get("type") != "null"]
        return kept, len(kept) < len(every)

    def compare(self, where: str, ours: dict[str, Any], annotation: Any) -> list[str]:
        """What differs between a served schema and an SDK type."""
        wanted, sdk_nullable = sdk_type(annotation)
        kind = json_type(wanted)
        if kind is None:
            return []
        options, nullable = self.options(ours)
        if len(options) != 1 or options[0].get("type") != kind:
            return [f"{where}: the SDK reads {kind}, served {[o.get('type') for o in options]}"]
        problems = (
            [f"{where}: nullable here, not in the SDK"] if nullable and not sdk_nullable else []
        )
        if kind == "array":
            item = typing.get_args(wanted)[0] if typing.get_args(wanted) else Any
            problems += self.compare(f"{where}[]", options[0].get("items", {}), item)
        elif isinstance(wanted, type) and issubclass(wanted, BaseModel):
            problems += self.model(where, options[0], wanted)
        return problems

    def model(self, where: str, ours: dict[str, Any], model: type[BaseModel]) -> list[str]:
        """What differs between a served object schema and an SDK model, field by field."""
        properties, required = ours.get("properties", {}), set(ours.get("required", ()))
        problems = []
        for name, field in model.model_fields.items():
            key = field.alias or name
            if key not in properties:
                problems.append(f"{where}.{key}: missing (the SDK's {model.__name__} has it)")
                continue
            if field.is_required() and key not in required:
                problems.append(f"{where}.{key}: the SDK requires it, the schema does not")
            problems += self.compare(f"{where}.{key}", properties[key], field.annotation)
        return problems


def test_every_sdk_operation_answers_the_sdks_shape(server: Server) -> None:
    doc = server.client().get("/openapi.json").json()
    schemas = Schemas(doc)
    served = {
        (method, re.sub(r"\{\w+\}", "{}", path)): operation
        for path, operations in doc["paths"].items()
        for method, operation in operations.items()
    }
    problems: list[str] = []
    operations = sdk_operations()
    assert len(operations) >= 25, operations  # the reading of the SDK found them all
    for name, method, path, status, body in operations:
        operation = served.get((method, path))
        if operation is None:
            problems.append(f"{name}: {method.upper()} {path} is not served")
            continue
        response = operation["responses"].get(status)
        schema = (response or {}).get("content", {}).get("application/json", {}).get("schema")
        if not schema:
            problems.append(f"{name}: no {status} response schema")
            continue
        if body == "Any":
            continue  # the SDK takes any JSON (delete, cancel, download)
        named = re.fullmatch(r"(List\[)?shared\.(\w+)\]?", body)
        assert named, f"{name}: cannot read the SDK's body type {body!r}"
        model: Any = getattr(shared, named[2])
        problems += schemas.compare(name, schema, list[model] if named[1] else model)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("path", "model"),
    [("/api/v1/jobs/{job_id}/cancel", "JobCancel"), ("/api/v1/workflows/{workflow_id}", "Deleted")],
)
def test_answers_the_sdk_takes_as_any_are_documented_too(
    server: Server, path: str, model: str
) -> None:
    doc = server.client().get("/openapi.json").json()
    method = "post" if path.endswith("cancel") else "delete"
    schema = doc["paths"][path][method]["responses"]["200"]["content"]["application/json"]
    assert schema["schema"]["$ref"].endswith(f"/{model}")
    assert "id" in Schemas(doc).resolve(schema["schema"])["required"]
