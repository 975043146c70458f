"""Schedules: each stored workflow with a schedule runs on its cron expression while a server
runs, as a `scheduled` job; a firing is skipped while the workflow's last run is unfinished.

APScheduler does the timekeeping; croniter reads the cron expressions (standard crontab: in
`0 0 * * 0`, day 0 is a Sunday), in UTC. A `ScheduleClock` maps the wall clock onto the
schedules' clock: a server uses the wall clock itself; tests pass a faster one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from croniter import croniter

log = logging.getLogger("ingestflow.server")
# a firing's own time, on the schedules' clock, may read a little before its cron time when a
# clock maps times with rounding; cron times are whole minutes apart, so a second is safe
_SLACK = timedelta(seconds=1)


class ScheduleClock(Protocol):
    """Maps wall-clock times to the schedules' clock and back."""

    def schedule_time(self, real: datetime) -> datetime:
        """The schedules' time at wall-clock time `real`."""
        ...

    def real_time(self, moment: datetime) -> datetime:
        """The wall-clock time at which the schedules' clock reads `moment` (never earlier)."""
        ...


class WallClock:
    """The schedules' clock is the wall clock (UTC)."""

    def schedule_time(self, real: datetime) -> datetime:
        """`real` itself."""
        return real

    def real_time(self, moment: datetime) -> datetime:
        """`moment` itself."""
        return moment


class CronOnClock(BaseTrigger):
    """An APScheduler trigger: a cron expression (UTC) on a schedule clock."""

    def __init__(self, cron: str, clock: ScheduleClock) -> None:
        self.cron = cron
        self.clock = clock

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        """The wall-clock time of the first cron time after `now` (and after the last firing)."""
        moment = self.clock.schedule_time(now)
        if previous_fire_time is not None:
            # past the firing's own cron time, even where the clock's mapping rounded it
            moment = max(moment, self.clock.schedule_time(previous_fire_time) + _SLACK)
        return self.clock.real_time(croniter(self.cron, moment).get_next(datetime))

    def fire_time(self, real: datetime) -> datetime:
        """The cron time a firing at wall-clock time `real` stands for: the last one by then."""
        moment = self.clock.schedule_time(real) + _SLACK
        return croniter(self.cron, moment).get_prev(datetime).astimezone(UTC)

    def __str__(self) -> str:
        return f"cron[{self.cron}]"


class Schedules:
    """The scheduled workflows of a workspace, kept in step with the store."""

    def __init__(
        self,
        workspace: Path,
        on_submitted: Callable[[], None] | None = None,
        clock: ScheduleClock | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.on_submitted = on_submitted or (lambda: None)
        self.clock: ScheduleClock = clock or WallClock()
        self.triggers: dict[str, CronOnClock] = {}
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
        self.triggers.pop(workflow_id, None)
        if record is not None and record.get("schedule"):
            self._add(record)

    def scheduled(self) -> dict[str, str]:
        """The cron expression of each scheduled workflow, by workflow id."""
        return {workflow_id: trigger.cron for workflow_id, trigger in self.triggers.items()}

    def _add(self, record: dict[str, Any]) -> None:
        cron = record["schedule"]["crontab_entries"][0]["cron_expression"]
        trigger = CronOnClock(cron, self.clock)
        self.triggers[record["id"]] = trigger
        self.scheduler.add_job(
            self.fire,
            trigger,
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
