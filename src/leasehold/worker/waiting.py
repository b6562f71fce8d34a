"""Small helpers for waiting on events without cancelling the wrong thing."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Preempted(Exception):
    """An event fired before the awaited call finished; the call was cancelled."""


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """Wait until ``event`` is set or ``seconds`` pass; whether it was set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
    return event.is_set()


class Flag:
    """A switch that is set once, like ``asyncio.Event``, that also calls back when set.

    Waiting for "the handler ends, or its lease is lost, or a forced stop" with callbacks on
    one future costs nothing per job; waiting on Events took a task for each of them.
    """

    def __init__(self) -> None:
        self._set = False
        self._callbacks: list[Callable[[], object]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` when the flag is set (at once if it is)."""
        if self._set:
            callback()
        else:
            self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], object]) -> None:
        with contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    async def wait(self) -> None:
        if self._set:
            return
        flagged = asyncio.get_running_loop().create_future()
        callback = functools.partial(_resolve, flagged)
        self.add_callback(callback)
        try:
            await flagged
        finally:
            self.remove_callback(callback)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def unless_set(flag: Flag, awaitable: Awaitable[T]) -> T:
    """``await awaitable``, unless ``flag`` is set first: then cancel it and raise
    ``Preempted``."""
    call = asyncio.ensure_future(awaitable)
    interrupt = functools.partial(_interrupt, call)
    flag.add_callback(interrupt)
    try:
        return await call
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if flag.is_set() and call.cancelled() and not (task and task.cancelling()):
            raise Preempted() from None
        raise
    finally:
        flag.remove_callback(interrupt)


def _interrupt(call: asyncio.Future[Any]) -> None:
    call.cancel()


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
