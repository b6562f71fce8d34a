"""The worker's context: what start-up hooks prepare once and every handler can reach.

::

    @registry.on_startup
    async def open_pool(ctx: WorkerContext) -> None:
        ctx.state["db"] = await create_pool(...)

    @registry.on_shutdown
    async def close_pool(ctx: WorkerContext) -> None:
        await ctx.state["db"].close()

    @registry.handler("report")
    async def report(job: LeasedJob) -> None:
        db = current_context().state["db"]

Start-up hooks run once per worker, in order, before it leases anything; shutdown hooks
run in reverse order after the last job has been reported. Both may be ``async def`` or
plain functions (run on a thread). ``current_context()`` and ``current_job()`` work in
async and sync handlers alike (a sync handler's thread runs in a copy of the job's
context).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from leasehold.worker.job import LeasedJob

Hook: TypeAlias = Callable[["WorkerContext"], Awaitable[None]] | Callable[["WorkerContext"], None]


@dataclass(eq=False, slots=True)
class WorkerContext:
    """One per worker: its id, the coordinators' URLs (as ``Client`` takes them: several
    separated by commas), and ``state`` for what hooks open."""

    worker_id: str
    url: str
    state: dict[str, Any] = field(default_factory=dict)


_context: ContextVar[WorkerContext] = ContextVar("leasehold_worker_context")
_job: ContextVar[LeasedJob] = ContextVar("leasehold_job")


def current_context() -> WorkerContext:
    """The running worker's context; ``RuntimeError`` outside a worker."""
    try:
        return _context.get()
    except LookupError:
        raise RuntimeError("current_context() is only available inside a worker") from None


def current_job() -> LeasedJob:
    """The job the calling handler is running (its id, attempt, token, ...); for typed
    tasks, whose function gets the payload's values rather than the job."""
    try:
        return _job.get()
    except LookupError:
        raise RuntimeError("current_job() is only available inside a handler") from None


def enter_worker(context: WorkerContext) -> None:
    """Make ``context`` current; tasks started after this see it."""
    _context.set(context)


def enter_job(job: LeasedJob) -> None:
    """Make ``job`` current, in the job's own task (a copy of the worker's context)."""
    _job.set(job)


async def run_hook(hook: Hook, context: WorkerContext) -> None:
    if inspect.iscoroutinefunction(hook):
        await hook(context)
        return
    result = await asyncio.to_thread(hook, context)
    if inspect.isawaitable(result):
        await result
