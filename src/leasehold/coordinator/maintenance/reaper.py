"""The background task that finds leases that ran out and puts their jobs back."""

from __future__ import annotations

import asyncio

import structlog

from leasehold.coordinator.service.job_service import JobService

log = structlog.get_logger("leasehold")

ROLLUP_KEEP_SECONDS = 3600  # windowed figures look back 5 minutes at most
PRUNE_INTERVAL_SECONDS = 60.0


class Reaper:
    """Calls ``service.reap()`` every ``interval`` seconds until stopped, and ends the jobs
    whose start deadline passed (``service.miss_deadlines()``).

    ``passes`` counts finished sweeps and ``swept`` is set after each one, so tests can
    wait for a sweep instead of sleeping.
    """

    def __init__(self, service: JobService, interval: float) -> None:
        self.service = service
        self.interval = interval
        self.passes = 0
        self.swept = asyncio.Event()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        next_prune = loop.time()
        while True:
            try:
                await self.service.sweep()
                if loop.time() >= next_prune:
                    await self.service.store.prune(ROLLUP_KEEP_SECONDS)
                    await self.service.store.flow_prune()
                    next_prune = loop.time() + PRUNE_INTERVAL_SECONDS
            except Exception:
                log.exception("reaper.error")
            self.passes += 1
            self.swept.set()
            self.swept = asyncio.Event()
            await asyncio.sleep(self.interval)
