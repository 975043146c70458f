"""/templates: the built-in workflow templates."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ingestflow.server.deps import ServiceDep, both
from ingestflow.server.errors import responses

router = APIRouter(tags=["templates"])


@both(router, "GET", "/templates")
def list_templates(svc: ServiceDep) -> list[dict[str, Any]]:
    """Every template: id, name, description, version, last_updated."""
    return svc.templates.list()


@both(router, "GET", "/templates/{template_id}", responses=responses(404))
def get_template(template_id: str, svc: ServiceDep) -> dict[str, Any]:
    """One template with its nodes."""
    return svc.templates.get(template_id)
