"""The schedules' trigger: cron expressions read as crontab reads them, on the wall clock or on a
test's faster clock; a firing names the cron time it stands for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ingestflow.service.schedules import CronOnClock, WallClock
from ingestflow.spec.catalog import SCHEDULES
from tests.server.clocks import FastClock

NEW_YEAR = datetime(2025, 1, 1, tzinfo=UTC)  # a Wednesday


def test_each_schedule_phrase_fires_when_crontab_says() -> None:
    expected = {
        "every 15 minutes": datetime(2025, 1, 1, 0, 15, tzinfo=UTC),
        "every hour": datetime(2025, 1, 1, 1, tzinfo=UTC),
        "every 2 hours": datetime(2025, 1, 1, 2, tzinfo=UTC),
        "daily": datetime(2025, 1, 2, tzinfo=UTC),
        "weekly": datetime(2025, 1, 5, tzinfo=UTC),  # day 0 is a Sunday
        "monthly": datetime(2025, 2, 1, tzinfo=UTC),
    }
    for phrase, first in expected.items():
        trigger = CronOnClock(SCHEDULES[phrase], WallClock())
        assert trigger.get_next_fire_time(None, NEW_YEAR) == first, phrase
        assert trigger.fire_time(first + timedelta(milliseconds=3)) == first, phrase
    weekly = CronOnClock(SCHEDULES["weekly"], WallClock())
    sunday = weekly.get_next_fire_time(None, NEW_YEAR)
    assert sunday is not None and sunday.strftime("%A") == "Sunday"


def test_the_next_firing_comes_after_the_last_one_even_on_a_rounding_clock() -> None:
    clock = FastClock(speed=900, origin=NEW_YEAR + timedelta(microseconds=7))
    trigger = CronOnClock("*/15 * * * *", clock)
    fired = trigger.get_next_fire_time(None, NEW_YEAR + timedelta(microseconds=7))
    assert fired is not None and clock.schedule_time(fired) >= NEW_YEAR + timedelta(minutes=15)
    assert trigger.fire_time(fired) == NEW_YEAR + timedelta(minutes=15)
    # asked again at the moment it fired, it names the next quarter hour, not the same one
    again = trigger.get_next_fire_time(fired, fired)
    assert again is not None and again > fired
    assert trigger.fire_time(again) == NEW_YEAR + timedelta(minutes=30)
