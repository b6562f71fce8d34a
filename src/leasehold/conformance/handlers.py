"""The certification workload's handlers for leasehold's own worker:
``leasehold certify-worker -- leasehold worker leasehold.conformance.handlers:registry``.

Any worker being certified implements the same kinds (PROTOCOL.md §11):

- ``cert.echo``: answers ``{"echo": payload}``.
- ``cert.sleep``: sleeps ``payload.ms`` milliseconds, then answers ``{"slept": ms}``.
- ``cert.flaky``: fails (retryable) while its attempt number is at most
  ``payload.fail_times``, then answers ``{"ok": true}``.

and, for ``--workflows``:

- ``cert.spawn``: spawns ``payload.children`` ``cert.echo`` children keyed ``child-{i}``
  and a ``cert.join`` continuation keyed ``join`` that depends on them. Its first attempt
  spawns the first child, then sleeps ``payload.pause_ms`` (the certifier kills its worker
  meanwhile); a later one spawns every key again. Answers ``{"spawned": n}``.
- ``cert.join``: answers ``{"joined": [each parent's result, in id order]}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from leasehold.client import NewJob
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


@registry.handler("cert.spawn")
async def spawn(job: LeasedJob) -> dict[str, Any]:
    n = int(_field(job, "children") or 0)
    children = [NewJob("cert.echo", {"child": i}, ref=f"child-{i}") for i in range(n)]
    if job.attempt == 1:
        await job.spawn(children[:1])
        await asyncio.sleep(int(_field(job, "pause_ms") or 0) / 1000)
    await job.spawn(children, then=NewJob("cert.join", ref="join"))
    return {"spawned": n}


@registry.handler("cert.join")
async def join(job: LeasedJob) -> dict[str, Any]:
    return {"joined": [parent.result for parent in job.parents]}
