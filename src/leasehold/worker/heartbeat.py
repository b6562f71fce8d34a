"""The worker's heartbeat: who it is and what it serves, every few seconds, so operators
see it in ``GET /workers`` and the coordinator can tell queued work no live worker takes."""

from __future__ import annotations

import asyncio
import os
import socket
from datetime import UTC, datetime
from typing import Any

import structlog

from leasehold._version import __version__
from leasehold.client import Client
from leasehold.errors import LeaseholdError
from leasehold.model import BEAT_SECONDS  # the coordinator counts a worker live for 3 beats

log = structlog.get_logger("leasehold.worker")


def beat_body(
    worker_id: str,
    kinds: tuple[str, ...],
    queues: tuple[str, ...] | None,
    concurrency: int,
    started_at: datetime,
) -> dict[str, Any]:
    """The ``POST /workers/heartbeat`` body."""
    return {
        "worker_id": worker_id,
        "host": socket.gethostname()[:200] or "unknown",
        "pid": os.getpid(),
        "version": __version__,
        "kinds": list(kinds),
        "queues": list(queues) if queues is not None else None,
        "concurrency": concurrency,
        "started_at": started_at.isoformat(),
    }


async def beat_forever(client: Client, body: dict[str, Any], every: float = BEAT_SECONDS) -> None:
    """Send the heartbeat every ``every`` seconds until cancelled; a failed beat is logged
    and the next one tried on time (a worker never stops working for want of a beat)."""
    while True:
        try:
            await client.heartbeat(body)
        except LeaseholdError as exc:
            log.warning("worker.heartbeat_failed", error=exc.message)
        await asyncio.sleep(every)


def now() -> datetime:
    return datetime.now(UTC)
