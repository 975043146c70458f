"""Workflow templates, as the service lists and shows them (the data is in `spec.templates`)."""

from __future__ import annotations

from ingestflow.service.records import TemplateDetail, TemplateListItem
from ingestflow.spec.templates import TEMPLATES, get_template


class Templates:
    """The built-in templates."""

    def list(self) -> list[TemplateListItem]:
        """TemplateListItem of every template."""
        return [TemplateListItem.model_validate(t.list_item()) for t in TEMPLATES.values()]

    def get(self, template_id: str) -> TemplateDetail:
        """TemplateDetail: the list item plus its nodes; NotFound names the ones that exist."""
        return TemplateDetail.model_validate(get_template(template_id).detail())
