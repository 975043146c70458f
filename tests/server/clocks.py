"""Schedule clocks for tests (`create_app(..., clock=...)`): a fast one, on which "every 15
minutes" comes every second of wall-clock time, and a stopped one that the test moves itself.

Servers given one clock object agree on what time it is on the schedules' clock, as servers on
the wall clock do."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta


class FastClock:
    """The schedules' clock runs `speed` times faster than the wall clock from `origin`."""

    def __init__(self, speed: float = 900.0, origin: datetime | None = None) -> None:
        self.speed = speed
        self.origin = origin or datetime.now(UTC)

    def schedule_time(self, real: datetime) -> datetime:
        """The schedules' time at wall-clock time `real`."""
        return self.origin + (real - self.origin) * self.speed

    def real_time(self, moment: datetime) -> datetime:
        """The wall-clock time at which the schedules' clock reads `moment`, rounded up to the
        microsecond (never earlier)."""
        micros = (moment - self.origin) / timedelta(microseconds=1) / self.speed
        return self.origin + timedelta(microseconds=math.ceil(micros))


class StoppedClock:
    """The schedules' clock stands at `now` until the test moves it: nothing fires by itself,
    and a firing the test asks for reads the time the test set."""

    NEVER = datetime(9000, 1, 1, tzinfo=UTC)

    def __init__(self, now: datetime) -> None:
        self.now = now

    def schedule_time(self, real: datetime) -> datetime:
        """The time the test set, whatever the wall clock says."""
        return self.now

    def real_time(self, moment: datetime) -> datetime:
        """Never, as far as the wall clock goes: the test fires schedules itself."""
        return self.NEVER
