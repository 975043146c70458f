"""Schedules: each stored workflow with a schedule runs on its cron expression while a server
runs, as a `scheduled` job; a firing is skipped while the workflow's last run is unfinished.

APScheduler does the timekeeping. `INGESTFLOW_SCHEDULE_SPEED` (a factor, default 1) runs the
schedule clock faster than the wall clock — for tests and demonstrations only: at 900, "every 15
minutes" fires every second.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger

log = logging.getLogger("ingestflow.server")


class ScaledCronTrigger(BaseTrigger):
    """A cron trigger on a clock that runs `speed` times faster than real time from `origin`."""

    def __init__(self, cron: str, speed: float = 1.0, origin: datetime | None = None) -> None:
        self.cron_expression = cron
        self.cron = CronTrigger.from_crontab(cron, timezone=UTC)
        self.speed = speed
        self.origin = origin or datetime.now(UTC)

    def _virtual(self, real: datetime) -> datetime:
        return self.origin + (real - self.origin) * self.speed

    def _real(self, virtual: datetime) -> datetime:
        return self.origin + (virtual - self.origin) / self.speed

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        """The next real time at which the cron expression fires on the scaled clock."""
        if self.speed == 1:
            return self.cron.get_next_fire_time(previous_fire_time, now)
        previous = None if previous_fire_time is None else self._virtual(previous_fire_time)
        virtual_next = self.cron.get_next_fire_time(previous, self._virtual(now))
        if virtual_next is None:
            return None
        real = self._real(virtual_next)
        # a scaled clock rounds; never answer a time at or before the previous firing
        if previous_fire_time is not None and real <= previous_fire_time:
            real = previous_fire_time + timedelta(milliseconds=1)
        return real

    def __str__(self) -> str:
        return f"cron[{self.cron_expression}] x{self.speed:g}"


class Schedules:
    """The scheduled workflows of a workspace, kept in step with the store."""

    def __init__(self, workspace: Path, on_submitted: Callable[[], None] | None = None) -> None:
        self.workspace = Path(workspace)
        self.on_submitted = on_submitted or (lambda: None)
        self.speed = float(os.environ.get("INGESTFLOW_SCHEDULE_SPEED", "1") or 1)
        self.scheduler = BackgroundScheduler(
            timezone=UTC,
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60},
        )

    def start(self) -> None:
        """Schedule every stored workflow that has a schedule, and start the clock."""
        from ingestflow.service import Service

        with Service(self.workspace) as service:
            for record in service.workflows.scheduled():
                self._add(record)
        self.scheduler.start()

    def stop(self) -> None:
        """Stop the clock (running jobs are the launcher's)."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def sync(self, record: dict[str, Any] | None, workflow_id: str) -> None:
        """Follow a workflow's create, update (`record`) or delete (`record` None)."""
        if self.scheduler.get_job(workflow_id) is not None:
            self.scheduler.remove_job(workflow_id)
        if record is not None and record.get("schedule"):
            self._add(record)

    def jobs(self) -> list[str]:
        """Ids of the scheduled workflows."""
        return [job.id for job in self.scheduler.get_jobs()]

    def _add(self, record: dict[str, Any]) -> None:
        cron = record["schedule"]["crontab_entries"][0]["cron_expression"]
        self.scheduler.add_job(
            self.fire,
            ScaledCronTrigger(cron, self.speed),
            args=[record["id"]],
            id=record["id"],
            name=record["name"],
            replace_existing=True,
        )

    def fire(self, workflow_id: str) -> str | None:
        """Submit a `scheduled` job of the workflow, unless its last run is unfinished."""
        from ingestflow.service import Service

        try:
            with Service(self.workspace) as service:
                active = service.ws.active_jobs(workflow_id)
                if active:
                    log.info(
                        "schedule: %s still has job %s unfinished; skipped", workflow_id, active[0]
                    )
                    return None
                record = service.runs.submit(workflow_id, job_type="scheduled")
        except Exception as exc:  # a deleted or broken workflow: say so, keep the clock going
            log.error("schedule: workflow %s: %s", workflow_id, str(exc).splitlines()[0])
            return None
        self.on_submitted()
        return record["id"]
