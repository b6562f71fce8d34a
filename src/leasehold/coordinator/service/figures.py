"""The figures (/stats, /metrics), computed once for everyone who asks at the same time;
and the readings /metrics' gauges show.

Computing them reads every kind's and queue's counts and rollups: cheap for a few names,
not for thousands, and pointless to repeat for every scraper and dashboard polling at once.
So concurrent requests share one computation, and its result serves requests for up to
``max_age_seconds`` (1 s) afterwards, unless this coordinator has changed something since:
a client still reads its own writes. Changes made by other coordinators show within a
second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final

from leasehold.coordinator.metrics import Readings
from leasehold.coordinator.rules.stats import Figures, queue_ages
from leasehold.coordinator.store.contract import QueuesSnapshot

MAX_AGE_SECONDS: Final = 1.0


def readings(figures: Figures, queues: QueuesSnapshot) -> Readings:
    """What /metrics' gauges show: the figures, and each queue's oldest waiting job and
    pause (``queues``, read at the scrape)."""
    stats = figures.stats
    return Readings(
        by_status=stats.by_status,
        by_kind=stats.by_kind,
        by_queue=stats.by_queue,
        queued=figures.queued,
        oldest_seconds=queue_ages(queues),
        paused=frozenset(queues.paused),
        live_workers=figures.live_workers,
        unserved={(u.queue, u.kind): u.queued for u in stats.unserved},
    )


class FiguresCache:
    """One computation of the figures at a time, reused while fresh."""

    def __init__(
        self, compute: Callable[[], Awaitable[Figures]], max_age_seconds: float = MAX_AGE_SECONDS
    ) -> None:
        self._compute = compute
        self._max_age = max_age_seconds
        self._lock = asyncio.Lock()
        self._figures: Figures | None = None
        self._at = 0.0
        self._generation = 0  # bumped by every change made here
        self._valid_for = -1  # the generation the kept figures were computed in

    def changed(self) -> None:
        """Something this coordinator did changed the figures."""
        self._generation += 1

    def _fresh(self, generation: int) -> Figures | None:
        age = asyncio.get_running_loop().time() - self._at
        if self._figures is not None and self._valid_for == generation and age <= self._max_age:
            return self._figures
        return None

    async def get(self) -> Figures:
        """Fresh figures: shared with concurrent callers, reused for up to a second."""
        generation = self._generation
        if (figures := self._fresh(generation)) is not None:
            return figures
        async with self._lock:  # the first caller computes; the others wait and reuse
            generation = self._generation
            if (figures := self._fresh(generation)) is not None:
                return figures
            started = asyncio.get_running_loop().time()
            figures = await self._compute()
            self._figures, self._at, self._valid_for = figures, started, generation
            return figures
