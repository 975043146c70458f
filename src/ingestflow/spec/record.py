"""SPEC.md's workflow record, as create, update, get and list return it."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from ingestflow.spec.catalog import SCHEDULES
from ingestflow.spec.models import MASK, SECRET_FIELDS, WorkflowCreate, WorkflowNode


def cron_of(schedule: str | None) -> str | None:
    """The cron expression a schedule phrase stands for (None for no schedule)."""
    if schedule is None:
        return None
    try:
        return SCHEDULES[schedule]
    except KeyError:
        raise ValueError(
            f"unknown schedule phrase {schedule!r}; allowed: {list(SCHEDULES)}"
        ) from None


def mask_secrets(value: Any) -> Any:
    """A copy of a settings or config object with every secret replaced by a mask (secret fields,
    and passwords written into URLs)."""
    if isinstance(value, dict):
        return {
            k: (MASK if k in SECRET_FIELDS and v is not None else mask_secrets(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [mask_secrets(v) for v in value]
    if isinstance(value, str):
        return mask_url_credentials(value)
    return value


# scheme://user:password@ — the user name holds none of : / ? # @, the password may hold any of
# them but blanks (a generated one often does), up to the last @ before a blank: better to mask a
# little more of an odd URL than to show a password
_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s@/?#:]*):(?P<password>\S*)@"
)


def url_credentials(text: str) -> bool:
    """True when `text` holds a `scheme://user:password@` URL."""
    return "@" in text and _CREDENTIALS.search(text) is not None


def mask_url_credentials(text: str) -> str:
    """`text` with the password of every `scheme://user:password@host` in it masked."""
    if "@" not in text:
        return text
    return _CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)


def node_record(node: WorkflowNode) -> dict[str, Any]:
    """A node as records show it: with an id, secrets masked."""
    return {
        "id": node.id or str(uuid.uuid4()),
        "name": node.name,
        "type": node.type,
        "subtype": node.subtype,
        "settings": mask_secrets(node.settings),
    }


def workflow_record(
    workflow: WorkflowCreate,
    workflow_id: str,
    status: str = "active",
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
) -> dict[str, Any]:
    """Render SPEC.md's record: name, id, status, workflow_type, sources, destinations, schedule."""
    cron = cron_of(workflow.schedule)
    record: dict[str, Any] = {
        "id": workflow_id,
        "name": workflow.name,
        "status": status,
        "workflow_type": workflow.workflow_type,
        "sources": [] if workflow.source_id is None else [workflow.source_id],
        "destinations": [] if workflow.destination_id is None else [workflow.destination_id],
        "workflow_nodes": [node_record(n) for n in workflow.workflow_nodes or []],
        "schedule": None if cron is None else {"crontab_entries": [{"cron_expression": cron}]},
        "reprocess_all": workflow.reprocess_all,
        "created_at": (created_at or datetime.now().astimezone()).isoformat(),
    }
    if workflow.template_id is not None:
        record["template_id"] = workflow.template_id
    if updated_at is not None:
        record["updated_at"] = updated_at.isoformat()
    return record
