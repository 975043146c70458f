"""Schedule changes flow from the service: whatever changes a workflow through a `Service` tells
its listener (a server's schedules, at once), with no route keeping them in step; a change made
by another process (the CLI) reaches a running server when it reads the store again."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ingestflow.cli import app
from ingestflow.service import Service
from ingestflow.service.records import WorkflowInformation
from tests.fakes.confluence import FakeConfluence
from tests.server.clocks import StoppedClock
from tests.server.conftest import API, NODES, Servers, wiki_source

T0 = datetime(2030, 1, 1, 12, 7, tzinfo=UTC)


def body(source_id: str, schedule: str | None) -> dict[str, Any]:
    """A create body of a wiki-source workflow with `schedule`."""
    return {
        "name": "wiki sync",
        "workflow_type": "custom",
        "source_id": source_id,
        "workflow_nodes": NODES,
        "schedule": schedule,
    }


def cron(record: WorkflowInformation | dict[str, Any] | None) -> str | None:
    """A workflow record's cron expression (None: no schedule, or no workflow)."""
    data = record.wire() if isinstance(record, WorkflowInformation) else record
    schedule = (data or {}).get("schedule")
    return schedule["crontab_entries"][0]["cron_expression"] if schedule else None


def test_the_service_tells_its_listener_each_workflow_change(
    wiki: FakeConfluence, tmp_path: Path
) -> None:
    heard: list[tuple[str, str | None, bool]] = []
    with Service(
        tmp_path / "ws",
        on_workflow_change=lambda wid, record: heard.append((wid, cron(record), record is None)),
    ) as service:
        source = service.connectors.create(wiki_source(wiki), role="source")
        workflow_id = service.workflows.create(body(source.id, "every 15 minutes")).id
        service.workflows.update(workflow_id, {"schedule": "every hour"})
        service.workflows.update(workflow_id, {"schedule": None})
        service.workflows.delete(workflow_id)
    assert heard == [
        (workflow_id, "*/15 * * * *", False),
        (workflow_id, "0 * * * *", False),
        (workflow_id, None, False),
        (workflow_id, None, True),
    ]


def test_a_server_follows_changes_through_its_api_at_once_and_the_clis_on_its_next_read(
    wiki: FakeConfluence, serve: Servers, tmp_path: Path
) -> None:
    workspace = serve.root / "ws"
    workspace.mkdir()
    with Service(workspace) as service:
        source = service.connectors.create(wiki_source(wiki), role="source")
    server = serve("ws", clock=StoppedClock(T0))
    schedules = server.app.state.ingestflow.schedules
    http = server.client()

    # through the API: the service's listener, before the answer comes back
    answer = http.post(f"{API}/workflows", json=body(source.id, "every 15 minutes"))
    assert answer.status_code == 200, answer.text
    workflow_id = answer.json()["id"]
    assert schedules.scheduled() == {workflow_id: "*/15 * * * *"}
    answer = http.put(f"{API}/workflows/{workflow_id}", json={"schedule": "every hour"})
    assert answer.status_code == 200, answer.text
    assert schedules.scheduled() == {workflow_id: "0 * * * *"}

    # through the CLI (in this process, on the same workspace, no listener): the server's next
    # read of the stored schedules
    update = tmp_path / "update.json"
    update.write_text(json.dumps({"schedule": "daily"}))
    result = CliRunner().invoke(
        app, ["workflows", "update", workflow_id, str(update), "--workspace", str(workspace)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["schedule"]["crontab_entries"][0]["cron_expression"] == (
        "0 0 * * *"
    )
    schedules.resync()  # what the server does every few seconds, done now
    assert schedules.scheduled() == {workflow_id: "0 0 * * *"}

    answer = http.delete(f"{API}/workflows/{workflow_id}")
    assert answer.status_code == 200, answer.text
    assert schedules.scheduled() == {}
