"""The background task that finds leases that ran out and puts their jobs back."""

from __future__ import annotations

import asyncio

import structlog

from leasehold.core.service import JobService

log = structlog.get_logger("leasehold")


class Reaper:
    """Calls ``service.reap()`` every ``interval`` seconds until stopped.

    ``passes`` counts finished sweeps and ``swept`` is set after each one, so tests can
    wait for a sweep instead of sleeping.
    """

    def __init__(self, service: JobService, interval: float) -> None:
        self.service = service
        self.interval = interval
        self.passes = 0
        self.swept = asyncio.Event()

    async def run(self) -> None:
        while True:
            try:
                # Drain a backlog in full before sleeping again.
                while await self.service.reap() > 0:
                    pass
            except Exception:
                log.exception("reaper.error")
            self.passes += 1
            self.swept.set()
            self.swept = asyncio.Event()
            await asyncio.sleep(self.interval)
