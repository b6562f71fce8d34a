"""The schema watch: a serving coordinator stops when a newer release raises the floor.

Every ``WATCH_SECONDS`` it reads the schema's floor (DESIGN.md §24). A newer release's
migration that an older coordinator cannot serve raises it above what this release knows;
then this coordinator must take no more work under rules it does not know: it says so once
(``schema.superseded``) and sets ``reason``, on which the server stops at once, as on
SIGTERM, and exits with status 5. The newer coordinator waits ``SETTLE_SECONDS`` after the
raise before it serves.
"""

from __future__ import annotations

import asyncio

import structlog

from leasehold.coordinator.store.contract import Store
from leasehold.coordinator.store.schema import WATCH_SECONDS

log = structlog.get_logger("leasehold")


class SchemaWatch:
    """Sets ``reason`` (and ``superseded``) once the floor passes what this release knows."""

    def __init__(self, store: Store, interval: float = WATCH_SECONDS) -> None:
        self.store = store
        self.interval = interval
        self.superseded = asyncio.Event()
        self.reason: str | None = None

    async def run(self) -> None:
        while True:
            try:
                reason = (await self.store.schema_state()).superseded()
            except Exception as exc:  # the database unreachable: the next look will tell
                log.warning("schema.watch_failed", error=f"{type(exc).__name__}: {exc}")
                reason = None
            if reason is not None:
                self.reason = reason
                log.error("schema.superseded", reason=reason)
                self.superseded.set()
                return
            await asyncio.sleep(self.interval)
