"""Workflow templates, as the service lists and shows them (the data is in `spec.templates`)."""

from __future__ import annotations

from typing import Any

from ingestflow.spec.templates import TEMPLATES, get_template


class Templates:
    """The built-in templates."""

    def list(self) -> list[dict[str, Any]]:
        """TemplateListItem of every template."""
        return [t.list_item() for t in TEMPLATES.values()]

    def get(self, template_id: str) -> dict[str, Any]:
        """TemplateDetail: the list item plus its nodes; NotFound names the ones that exist."""
        return get_template(template_id).detail()
