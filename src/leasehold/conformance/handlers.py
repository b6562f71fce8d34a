"""The certification workload's handlers for leasehold's own worker:
``leasehold certify-worker -- leasehold worker leasehold.conformance.handlers:registry``.

Any worker being certified implements the same kinds (PROTOCOL.md §11):

- ``cert.echo``: answers ``{"echo": payload}``.
- ``cert.sleep``: sleeps ``payload.ms`` milliseconds, then answers ``{"slept": ms}``.
- ``cert.flaky``: fails (retryable) while its attempt number is at most
  ``payload.fail_times``, then answers ``{"ok": true}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from leasehold.worker import LeasedJob, Registry

registry = Registry()


def _field(job: LeasedJob, name: str) -> Any:
    return job.payload.get(name) if isinstance(job.payload, dict) else None


@registry.handler("cert.echo")
async def echo(job: LeasedJob) -> dict[str, Any]:
    return {"echo": job.payload}


@registry.handler("cert.sleep")
async def sleep(job: LeasedJob) -> dict[str, Any]:
    ms = int(_field(job, "ms") or 0)
    await asyncio.sleep(ms / 1000)
    return {"slept": ms}


@registry.handler("cert.flaky")
async def flaky(job: LeasedJob) -> dict[str, Any]:
    if job.attempt <= int(_field(job, "fail_times") or 0):
        raise ConnectionError(f"flaky on attempt {job.attempt}")
    return {"ok": True}
