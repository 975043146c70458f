"""/templates: the built-in workflow templates."""

from __future__ import annotations

from fastapi import APIRouter

from ingestflow.server.deps import ServiceDep, both
from ingestflow.server.errors import responses
from ingestflow.service.records import TemplateDetail, TemplateListItem

router = APIRouter(tags=["templates"])


@both(router, "GET", "/templates")
def list_templates(svc: ServiceDep) -> list[TemplateListItem]:
    """Every template: id, name, description, version, last_updated."""
    return svc.templates.list()


@both(router, "GET", "/templates/{template_id}", responses=responses(404))
def get_template(template_id: str, svc: ServiceDep) -> TemplateDetail:
    """One template with its nodes."""
    return svc.templates.get(template_id)
