"""Small helpers for waiting on events without cancelling the wrong thing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class Preempted(Exception):
    """An event fired before the awaited call finished; the call was cancelled."""


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """Wait until ``event`` is set or ``seconds`` pass; whether it was set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
    return event.is_set()


async def unless_set(event: asyncio.Event, awaitable: Awaitable[T]) -> T:
    """``await awaitable``, unless ``event`` is set first: then cancel it and raise
    ``Preempted``."""
    call = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({call, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        call.cancel()  # we are cancelled ourselves: leave nothing running behind us
        raise
    finally:
        waiter.cancel()
    if not call.done():
        await cancel_and_wait(call)
        raise Preempted()
    return call.result()


async def cancel_and_wait(task: asyncio.Future[T], seconds: float | None = None) -> bool:
    """Cancel ``task`` and wait (up to ``seconds``) for it to end; whether it ended.

    Whatever it ended with is dropped: the caller has already given up on it.
    """
    task.cancel()
    await asyncio.wait({task}, timeout=seconds)
    if not task.done():
        return False
    if not task.cancelled():
        task.exception()  # mark it retrieved, so asyncio does not log it as lost
    return True
