"""Schedules: each stored workflow with a schedule runs on its cron expression while a server
runs, as a `scheduled` job; a firing is skipped while the workflow's last run is unfinished, and
submitted by one server when several serve the workspace.

APScheduler does the timekeeping; croniter reads the cron expressions (standard crontab: in
`0 0 * * 0`, day 0 is a Sunday), in UTC. A `ScheduleClock` maps the wall clock onto the
schedules' clock: a server uses the wall clock itself; tests pass a faster one.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from croniter import croniter

from ingestflow.errors import one_line

if TYPE_CHECKING:
    from ingestflow.service.core import Service
    from ingestflow.service.records import WorkflowInformation

log = logging.getLogger("ingestflow.server")
_RESYNC = "ingestflow:resync"  # the scheduler's own job: no workflow id looks like it
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
    """The scheduled workflows of a workspace, kept in step with the store.

    Several servers may serve one workspace, and the CLI may change its workflows: each server
    reads the stored schedules again every `resync_s` seconds, and each firing is claimed in the
    store (`store.claims.claim_firing`), so one server submits it."""

    def __init__(
        self,
        workspace: Path,
        on_submitted: Callable[[], None] | None = None,
        clock: ScheduleClock | None = None,
        resync_s: float = 2.0,
    ) -> None:
        self.workspace = Path(workspace)
        self.on_submitted = on_submitted or (lambda: None)
        self.clock: ScheduleClock = clock or WallClock()
        self.resync_s = resync_s
        self.name = f"pid {os.getpid()} ({uuid.uuid4().hex[:8]})"  # this server, in the store
        self.triggers: dict[str, CronOnClock] = {}
        self._lock = threading.Lock()  # a resync and a route's sync do not interleave
        self.scheduler = BackgroundScheduler(
            timezone=UTC,
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60},
        )

    def start(self) -> None:
        """Schedule every stored workflow that has a schedule, and start the clock."""
        self.resync()
        self.scheduler.add_job(
            self._resync_quietly, "interval", seconds=self.resync_s, id=_RESYNC, name="resync"
        )
        self.scheduler.start()

    def stop(self) -> None:
        """Stop the clock (running jobs are the launcher's)."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def sync(self, record: WorkflowInformation | None, workflow_id: str) -> None:
        """Follow a workflow's create, update (`record`) or delete (`record` None) at once."""
        with self._lock:
            self._follow(workflow_id, record)

    def resync(self) -> None:
        """Follow the stored schedules, whoever changed them (another server, the CLI)."""
        from ingestflow.service import Service

        with self._lock:
            with Service(self.workspace) as service:
                stored = {r.id: r for r in service.workflows.scheduled() if r.schedule}
            for workflow_id in set(self.triggers) - set(stored):
                self._follow(workflow_id, None)
            for workflow_id, record in stored.items():
                self._follow(workflow_id, record)

    def scheduled(self) -> dict[str, str]:
        """The cron expression of each scheduled workflow, by workflow id."""
        return {workflow_id: trigger.cron for workflow_id, trigger in self.triggers.items()}

    def _resync_quietly(self) -> None:
        try:
            self.resync()
        except Exception as exc:  # a busy or broken store now: the next resync tries again
            log.error("schedule: reading the stored schedules failed: %s", one_line(exc))

    def _follow(self, workflow_id: str, record: WorkflowInformation | None) -> None:
        """Schedule the workflow as `record` says (None or no schedule: not at all)."""
        cron = _cron(record)
        known = self.triggers.get(workflow_id)
        if known is not None and known.cron == cron:
            return
        if known is not None:
            self.triggers.pop(workflow_id)
            if self.scheduler.get_job(workflow_id) is not None:
                self.scheduler.remove_job(workflow_id)
        if record is None or cron is None:
            if known is not None:
                log.info("schedule: workflow %s is no longer scheduled", workflow_id)
            return
        trigger = CronOnClock(cron, self.clock)
        self.triggers[workflow_id] = trigger
        self.scheduler.add_job(
            self.fire,
            trigger,
            args=[workflow_id],
            id=workflow_id,
            name=record.name,
            replace_existing=True,
        )
        log.info("schedule: workflow %s (%r) runs on %s", workflow_id, record.name, cron)

    def fire(self, workflow_id: str) -> str | None:
        """Submit the `scheduled` job of the workflow's firing now, unless another server has,
        or its last run is unfinished; the job's id, or None."""
        trigger = self.triggers.get(workflow_id)
        if trigger is None:
            return None  # unscheduled while this firing was on its way
        from ingestflow.service import Service

        when = trigger.fire_time(datetime.now(UTC)).isoformat()
        try:
            with Service(self.workspace) as service:
                job_id = fire_once(service, workflow_id, when, self.name)
        except Exception as exc:  # a deleted or broken workflow: say so, keep the clock going
            log.error("schedule: workflow %s at %s: %s", workflow_id, when, one_line(exc))
            return None
        if job_id is not None:
            self.on_submitted()
        return job_id


def fire_once(service: Service, workflow_id: str, fire_time: str, server: str) -> str | None:
    """Submit the `scheduled` job of the workflow's firing at `fire_time` (a cron time, ISO
    8601), unless that firing was claimed already, the workflow has a job unfinished, or
    another firing of it is being submitted; the job's id, or None."""
    from ingestflow.store import claims

    db = service.ws.db
    if not claims.claim_firing(db, workflow_id, fire_time, server):
        log.info(
            "schedule: workflow %s: %s; skipped",
            workflow_id,
            _why_not(service, workflow_id, fire_time),
        )
        return None
    try:
        job_id = service.runs.submit(workflow_id, job_type="scheduled")["id"]
    except BaseException as exc:
        claims.settle_firing(db, workflow_id, fire_time, note=one_line(exc))
        raise
    claims.settle_firing(db, workflow_id, fire_time, job_id=job_id)
    return job_id


def _why_not(service: Service, workflow_id: str, fire_time: str) -> str:
    """Why a firing was not this server's to submit, for the log."""
    from ingestflow.store import claims

    taken = claims.firing(service.ws.db, workflow_id, fire_time)
    if taken is not None:
        return f"{fire_time} was fired already (by {taken['server']})"
    active = service.ws.active_jobs(workflow_id)
    if active:
        return f"job {active[0]} is still unfinished"
    return "another firing of it is being submitted"


def _cron(record: WorkflowInformation | None) -> str | None:
    schedule = record.schedule if record is not None else None
    return schedule.crontab_entries[0].cron_expression if schedule else None
