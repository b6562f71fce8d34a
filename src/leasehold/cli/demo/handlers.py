"""Example handlers for ``leasehold demo``; run them with
``leasehold worker leasehold.cli.demo.handlers:registry``.

What each does is decided by its payload (see ``workload.py``), so a run's retries and dead
jobs are known in advance and the figures at the end can be checked against them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from leasehold.worker import LeasedJob, PermanentFailure, Registry

registry = Registry()


def _field(job: LeasedJob, name: str, default: Any) -> Any:
    return job.payload.get(name, default) if isinstance(job.payload, dict) else default


@registry.handler("resize-image")
async def resize_image(job: LeasedJob) -> dict[str, Any]:
    """Quick: most of the demo's jobs, a few milliseconds each."""
    await asyncio.sleep(_field(job, "ms", 1) / 1000)
    return {"thumbnail": f"{_field(job, 'image', 'image')}-thumb.webp"}


@registry.handler("send-email")
async def send_email(job: LeasedJob) -> dict[str, Any]:
    """Flaky: fails its first ``fail_times`` attempts, then sends. An ordinary exception
    is retried after the coordinator's backoff; with attempts used up the job is dead."""
    if job.attempt <= _field(job, "fail_times", 0):
        raise ConnectionError(f"SMTP server did not answer (attempt {job.attempt})")
    return {"message_id": f"<{job.id}.{job.token}@demo.leasehold>"}


@registry.handler("charge-card")
async def charge_card(job: LeasedJob) -> dict[str, Any]:
    """Some cards are declined: ``PermanentFailure`` makes the job dead at once, no retry."""
    if _field(job, "card", "") == "declined":
        raise PermanentFailure("the card was declined")
    await asyncio.sleep(0.005)
    return {"charged_cents": _field(job, "cents", 0)}


@registry.handler("build-report")
async def build_report(job: LeasedJob) -> dict[str, Any]:
    """Slow: a fraction of a second; long enough to see it running on the dashboard."""
    await asyncio.sleep(_field(job, "seconds", 0.5))
    return {"pages": _field(job, "pages", 1)}
