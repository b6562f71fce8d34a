"""Running one handler and deciding what its run amounts to."""

from __future__ import annotations

import asyncio
import functools
import inspect
import traceback
from dataclasses import dataclass
from typing import Any, Literal

import structlog

from leasehold.model import JSON
from leasehold.worker.errors import PermanentFailure, Retry
from leasehold.worker.job import LeasedJob
from leasehold.worker.registry import Handler
from leasehold.worker.renewal import LeaseKeeper
from leasehold.worker.retries import DEFAULT_RULES, RetryRules
from leasehold.worker.threads import in_daemon_thread
from leasehold.worker.waiting import Flag, cancel_and_wait

log = structlog.get_logger("leasehold.worker")

# How long a cancelled async handler gets to clean up before we stop waiting for it.
CANCEL_WAIT_SECONDS = 5.0
# Error texts are capped well under the coordinator's limit; the end of a traceback (the
# exception itself) is the part kept.
MAX_ERROR_CHARS = 8000


@dataclass(frozen=True, slots=True)
class Succeeded:
    result: JSON


@dataclass(frozen=True, slots=True)
class Failed:
    error: str
    retryable: bool = True
    retry_after_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The handler was cut short, or finished too late: there is no result to report."""

    why: Literal["lease_lost", "forced", "cancelled"]


Outcome = Succeeded | Failed | Interrupted


async def call_handler(handler: Handler, job: LeasedJob) -> Any:
    """``async def`` handlers run on the loop; anything else on a thread of its own."""
    if inspect.iscoroutinefunction(handler):
        return await handler(job)
    result = await in_daemon_thread(handler, job)
    if inspect.isawaitable(result):  # e.g. a partial of an async function
        result = await result
    return result


async def execute(
    handler: Handler,
    job: LeasedJob,
    keeper: LeaseKeeper,
    forced: Flag,
    timeout_seconds: float | None = None,
    rules: RetryRules = DEFAULT_RULES,
) -> Outcome:
    """Run the handler until it ends, its lease is lost, its time limit passes or a forced
    stop; what it came to.

    On a lost lease, a cancelled job, a time limit or a forced stop the handler is
    cancelled (a thread cannot be, and runs on with its result dropped). A result that
    arrives after the lease ran out is dropped too: another worker may hold the job by then.
    A time limit fails the attempt with a ``timeout`` error, retried as a ``TimeoutError``
    would be under the kind's ``rules``.
    """
    loop = asyncio.get_running_loop()
    task = loop.create_task(call_handler(handler, job), name=f"leasehold-job-{job.id}")
    ended: asyncio.Future[None] = loop.create_future()
    end = functools.partial(_end, ended)
    task.add_done_callback(end)
    keeper.lost.add_callback(end)
    forced.add_callback(end)
    timer = loop.call_later(timeout_seconds, end) if timeout_seconds else None
    try:
        await ended
    except BaseException:
        task.cancel()
        raise
    finally:
        if timer is not None:
            timer.cancel()
        task.remove_done_callback(end)
        keeper.lost.remove_callback(end)
        forced.remove_callback(end)
    if task.done() and not task.cancelled():
        # Read here whatever comes of it: a handler that raised as its lease was lost (a
        # spawn refused with 409, say) has its error dropped, and an error never read is
        # logged with its traceback when the task is collected, at any later moment.
        task.exception()
    timed_out = not task.done() and not keeper.lost.is_set() and not forced.is_set()
    if timed_out and timeout_seconds is not None:
        if not await cancel_and_wait(task, CANCEL_WAIT_SECONDS):
            log.warning("job.cancel_ignored", waited_seconds=CANCEL_WAIT_SECONDS)
        log.warning("job.timed_out", timeout_seconds=timeout_seconds)
        limit = TimeoutError(timeout_error(timeout_seconds))
        retryable = rules.retryable(limit)
        delay = rules.delay(limit, job.attempt) if retryable else None
        return Failed(timeout_error(timeout_seconds), retryable, delay)
    if not task.done():
        if not await cancel_and_wait(task, CANCEL_WAIT_SECONDS):
            log.warning("job.cancel_ignored", waited_seconds=CANCEL_WAIT_SECONDS)
        return Interrupted(_why(keeper))
    if keeper.cancelled:
        return Interrupted("cancelled")  # finished as the cancel arrived: do not record it
    if not keeper.held():
        if not keeper.lost.is_set():
            log.warning("lease.lost", reason="expired", error="the handler finished too late")
        return Interrupted("lease_lost")
    return outcome_of(task, rules, job.attempt)


def timeout_error(seconds: float) -> str:
    """The error a timed-out attempt is failed with: its first word is the error type."""
    return f"timeout: the handler ran longer than its time limit of {seconds:g} s"


def _end(ended: asyncio.Future[None], *_: object) -> None:
    if not ended.done():
        ended.set_result(None)


def _why(keeper: LeaseKeeper) -> Literal["lease_lost", "forced", "cancelled"]:
    if keeper.cancelled:
        return "cancelled"
    return "lease_lost" if keeper.lost.is_set() else "forced"


def outcome_of(
    task: asyncio.Task[Any], rules: RetryRules = DEFAULT_RULES, attempt: int = 1
) -> Succeeded | Failed:
    """What the handler's finished task came to; a failure is retried (or not, and after
    how long) as the kind's ``rules`` say (``worker/retries.py``)."""
    if task.cancelled():  # the handler cancelled itself: not a result, so try again
        return Failed("the handler was cancelled")
    error = task.exception()
    if error is None:
        return Succeeded(task.result())
    # The handler's own verdicts need no traceback: they say why already.
    text = describe(error, with_traceback=not isinstance(error, PermanentFailure | Retry))
    retryable = rules.retryable(error)
    delay = rules.delay(error, attempt) if retryable else None
    return Failed(text, retryable=retryable, retry_after_seconds=delay)


def describe(error: BaseException, *, with_traceback: bool = True) -> str:
    if with_traceback:
        text = "".join(traceback.format_exception(error)).rstrip()
    else:
        text = f"{type(error).__name__}: {error}"
    return text if len(text) <= MAX_ERROR_CHARS else "..." + text[-MAX_ERROR_CHARS:]
