"""One coordinator-wide timer for jobs that become due as time passes.

A waiting long poll is woken when something makes work available (an enqueue, a release, a
requeue, an expiry, another coordinator's NOTIFY). What no event announces is time itself:
a retry's backoff ending, a ``run_after`` reached. Rather than every waiting poll looking
again on a timer of its own (1,000 idle polls made 2,000 lease statements a second), this
task alone watches the clock: it asks the store when the next queued job becomes due, sleeps
until then, and wakes every waiting poll once that moment has passed.

It only runs while some poll waits. It sleeps at most ``max_sleep_seconds`` between looks,
because the store's clock is not the event loop's (the database's clock on PostgreSQL, an
injected clock in tests) and because another coordinator may enqueue a job for later without
telling this one when. ``arm(when)`` cuts a sleep short when this coordinator itself makes a
job due earlier than the one it sleeps for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Final

import structlog

from leasehold.errors import LeaseholdError

log = structlog.get_logger("leasehold")

MAX_SLEEP_SECONDS: Final = 1.0


class DueTimer:
    """Wakes waiting polls when queued jobs become due (see the module docstring)."""

    def __init__(
        self,
        next_due: Callable[[datetime], Awaitable[datetime | None]],
        now: Callable[[], Awaitable[datetime]],
        wake: Callable[[], None],
        waiters: Callable[[], int],
        *,
        max_sleep_seconds: float = MAX_SLEEP_SECONDS,
    ) -> None:
        self._next_due = next_due
        self._now = now
        self._wake = wake
        self._waiters = waiters
        self.max_sleep_seconds = max_sleep_seconds
        self._someone_waits = asyncio.Event()
        self._rearm = asyncio.Event()
        self._planned: datetime | None = None  # the due time being slept for
        self._held: datetime | None = None  # when a rate limit lets held-back jobs go
        self.looks = 0  # looks at the store, for tests

    def poll_registered(self) -> None:
        """A poll has joined the wake-up queue: the timer runs while any is there."""
        self._someone_waits.set()

    def arm(self, when: datetime | None) -> None:
        """A job becomes due at ``when``: look again now if that is before the planned wake."""
        if when is not None and (self._planned is None or when < self._planned):
            self._rearm.set()

    def hold(self, until: datetime) -> None:
        """A rate limit held jobs back until ``until``: no job becomes due then, yet
        waiting polls should look again (DESIGN.md §19)."""
        if self._held is None or until < self._held:
            self._held = until
            self.arm(until)

    async def run(self) -> None:
        """The timer's loop, until cancelled."""
        checked: datetime | None = None
        while True:
            if not self._waiters():
                self._someone_waits.clear()
                await self._someone_waits.wait()
                checked = None
            try:
                checked = await self._look(checked)
            except LeaseholdError as exc:  # the store is unavailable: try again later
                log.warning("due_timer.unavailable", error=exc.code)
                checked = None
                await self._sleep(self.max_sleep_seconds)

    async def _look(self, checked: datetime | None) -> datetime:
        self._rearm.clear()
        now = await self._now()
        self.looks += 1
        # A poll that has just joined looked for itself a moment ago; the margin covers
        # jobs that became due between its look and this one.
        since = checked or now - timedelta(seconds=self.max_sleep_seconds)
        passed = await self._next_due(since)
        held, self._held = self._held, None
        if (passed is not None and passed <= now) or (held is not None and held <= now):
            self._wake()  # their moment has passed unannounced
        elif held is not None:
            self._held = held
        upcoming = await self._next_due(now)
        if self._held is not None and (upcoming is None or self._held < upcoming):
            upcoming = self._held
        self._planned = upcoming
        delay = self.max_sleep_seconds
        if upcoming is not None:
            delay = min(delay, max(0.0, (upcoming - now).total_seconds()))
        await self._sleep(delay)
        return now

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._rearm.wait(), seconds)
        self._planned = None
