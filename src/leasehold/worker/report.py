"""Reporting outcomes in batches: the reports that are ready within a few milliseconds go
to the coordinator in one ``/batch/complete`` (or ``/batch/fail``) request.

Each job still awaits its own answer, which is exactly what the single call would have
said: its job, or the error it would have raised (``StaleToken``, ``ReportConflict``, ...).
A batch the coordinator refuses as a whole (422 or 413: one result that is not JSON, or
too big, or all of them too big together) is sent again item by item, so the refusal lands
on the item that earned it and the others are reported as usual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from leasehold.client import (
    MAX_BATCH,
    Client,
    CompleteItem,
    FailItem,
    ItemOutcome,
    ItemResult,
)
from leasehold.errors import InvalidRequest, PayloadTooLarge
from leasehold.model import Job
from leasehold.worker.renewal import try_seconds

ItemT = TypeVar("ItemT")  # a report item: CompleteItem or FailItem

# How long a report waits for others to share its request. A few milliseconds cost the
# job nothing (its handler has ended and its slot is free again) and save most requests.
LINGER_SECONDS = 0.002
# Batches of one kind in flight at once: while they are out, the next one fills up.
IN_FLIGHT = 2
# Error texts add up fast (tracebacks); a fail batch stops well under the body limit.
MAX_FAIL_BATCH_CHARS = 256 * 1024


@dataclass(slots=True)
class _Pending(Generic[ItemT]):
    item: ItemT
    deadline: float  # the lease's, on the loop's clock: no use reporting after it
    lease_seconds: float  # the lease's length, which bounds one try (renewal.try_seconds)
    answer: asyncio.Future[ItemResult]  # ok; an item refused raises its error instead


class _Batcher(Generic[ItemT]):
    """Collects items of one kind and sends them in batches."""

    def __init__(
        self,
        client: Client,
        send_many: Callable[[Client, Sequence[ItemT]], Awaitable[list[ItemResult]]],
        send_one: Callable[[Client, ItemT], Awaitable[Job]],
        weight: Callable[[ItemT], int],
        max_weight: int,
    ) -> None:
        self._client = client
        self._send_many = send_many
        self._send_one = send_one
        self._weight = weight
        self._max_weight = max_weight
        self._pending: list[_Pending[ItemT]] = []
        self._ready = asyncio.Event()
        self._slots = asyncio.Semaphore(IN_FLIGHT)
        self.requests = 0  # batch requests sent, for tests and curiosity

    async def submit(self, item: ItemT, deadline: float, lease_seconds: float) -> ItemResult:
        """The item's answer; TimeoutError if there is none by ``deadline`` (the lease's:
        after it, another worker may hold the job)."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[ItemResult] = loop.create_future()
        # A timer rather than asyncio.timeout: a third of a no-op job's reporting cost.
        expiry = loop.call_at(deadline, _expire, answer)
        answer.add_done_callback(lambda _: expiry.cancel())
        self._pending.append(_Pending(item, deadline, lease_seconds, answer))
        self._ready.set()
        return await answer

    async def run(self) -> None:
        async with asyncio.TaskGroup() as sending:
            while True:
                await self._ready.wait()
                await asyncio.sleep(LINGER_SECONDS)
                await self._slots.acquire()
                batch = self._take()
                if not self._pending:
                    self._ready.clear()
                if batch:
                    sending.create_task(self._send(batch))
                else:
                    self._slots.release()

    def _take(self) -> list[_Pending[ItemT]]:
        """The next batch: the oldest pending reports whose callers still wait."""
        self._pending = [p for p in self._pending if not p.answer.done()]
        batch: list[_Pending[ItemT]] = []
        weight = 0
        for pending in self._pending[:MAX_BATCH]:
            weight += self._weight(pending.item)
            if batch and weight > self._max_weight:
                break
            batch.append(pending)
        del self._pending[: len(batch)]
        return batch

    async def _send(self, batch: list[_Pending[ItemT]]) -> None:
        try:
            self.requests += 1
            client = self._client_for(batch)
            async with asyncio.timeout_at(max(p.deadline for p in batch)):
                results = await self._send_many(client, [p.item for p in batch])
        except (InvalidRequest, PayloadTooLarge):
            await asyncio.gather(*(self._one(p) for p in batch))
        except Exception as exc:  # no answer in time, or refused as a whole (401, ...)
            for pending in batch:
                _settle(pending.answer, error=exc)
        else:
            for pending, result in zip(batch, results, strict=True):
                if result.ok:
                    _settle(pending.answer, result=result)
                else:
                    _settle(pending.answer, error=result.error or InvalidRequest(result.outcome))
        finally:
            self._slots.release()

    async def _one(self, pending: _Pending[ItemT]) -> None:
        try:
            async with asyncio.timeout_at(pending.deadline):
                job = await self._send_one(self._client_for([pending]), pending.item)
        except Exception as exc:
            _settle(pending.answer, error=exc)
        else:
            _settle(pending.answer, result=ItemResult(job.id, ItemOutcome.OK, job=job))

    def _client_for(self, batch: list[_Pending[ItemT]]) -> Client:
        """The client, with tries bounded by the shortest lease of the batch."""
        shortest = min(p.lease_seconds for p in batch)
        return self._client.with_timeout(try_seconds(self._client, shortest))


def _expire(answer: asyncio.Future[ItemResult]) -> None:
    if not answer.done():
        answer.set_exception(TimeoutError("no answer before the lease ran out"))


def _settle(
    answer: asyncio.Future[ItemResult],
    *,
    result: ItemResult | None = None,
    error: Exception | None = None,
) -> None:
    if answer.done():  # its caller gave up (the lease ran out, or a forced stop)
        return
    if error is not None:
        answer.set_exception(error)
    else:
        assert result is not None
        answer.set_result(result)


class Reporter:
    """The worker's completes and fails, sent in batches; see the module docstring."""

    def __init__(self, client: Client) -> None:
        self.completes: _Batcher[CompleteItem] = _Batcher(
            client,
            lambda c, items: c.complete_many(items),
            lambda c, i: c.complete(i.job_id, i.token, i.result),
            weight=lambda i: 1,
            max_weight=MAX_BATCH,
        )
        self.fails: _Batcher[FailItem] = _Batcher(
            client,
            lambda c, items: c.fail_many(items),
            lambda c, i: c.fail(
                i.job_id,
                i.token,
                i.error,
                retryable=i.retryable,
                retry_after_seconds=i.retry_after_seconds,
            ),
            weight=lambda i: len(i.error) + 100,
            max_weight=MAX_FAIL_BATCH_CHARS,
        )

    async def complete(self, item: CompleteItem, deadline: float, lease_seconds: float) -> None:
        """Returns once the completion is accepted; raises what ``Client.complete`` would
        have raised."""
        await self.completes.submit(item, deadline, lease_seconds)

    async def fail(self, item: FailItem, deadline: float, lease_seconds: float) -> Job:
        """The job as failed; raises what ``Client.fail`` would have raised."""
        return (await self.fails.submit(item, deadline, lease_seconds)).job_or_raise()

    async def run(self) -> None:
        """Until cancelled (once no job waits for a report any more)."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self.completes.run())
            group.create_task(self.fails.run())
