"""Running a plain-function handler off the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

import structlog

log = structlog.get_logger("leasehold.worker")

A = TypeVar("A")
T = TypeVar("T")


async def in_daemon_thread(fn: Callable[[A], T], arg: A) -> T:
    """``fn(arg)`` on a thread of its own; await its result.

    A thread cannot be interrupted. If the awaiting task is cancelled (the lease was lost,
    or a forced stop), the thread runs on and its late result is dropped. The thread is a
    daemon, unlike ``asyncio.to_thread``'s pool threads, so a handler that never returns
    cannot keep the process from exiting after its job was released.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()  # the job's log fields go along

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():  # cancelled meanwhile: the late result is dropped here
            log.warning("job.late_result_dropped", failed=error is not None)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type] # T when error is None

    def target() -> None:
        try:
            result, error = context.run(fn, arg), None
        except Exception as exc:
            result, error = None, exc
        except BaseException as exc:  # SystemExit in a handler must not hang its job
            result, error = None, RuntimeError(f"the handler raised {exc!r}")
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            # Scheduled from within the job's context, so the log line carries its fields.
            context.run(loop.call_soon_threadsafe, settle, result, error)

    threading.Thread(target=target, name="leasehold-handler", daemon=True).start()
    return await future
