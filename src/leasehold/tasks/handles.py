"""What a typed task's enqueue returns: the job, and a way to wait for its result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from leasehold.client import Client, SyncClient
from leasehold.model import JSON, Job

R = TypeVar("R")


class AsyncHandle(Generic[R]):
    """An enqueued job of an async client. ``await handle.result(timeout=...)`` waits for
    it to finish (long polls of the coordinator) and gives its result as the task's return
    type; ``JobFailed`` if it ended dead, ``JobCancelled`` if it was cancelled,
    ``ResultTimeout`` (a ``TimeoutError``) if it did not finish in time."""

    def __init__(self, client: Client, job: Job, decode: Callable[[JSON], R]) -> None:
        self.client = client
        self.job = job  # as the enqueue answered
        self._decode = decode

    @property
    def id(self) -> int:
        return self.job.id

    async def result(self, timeout: float | None = None) -> R:  # noqa: ASYNC109 (sent as the long poll's wait)
        """The job's result as the task's return type, once it has completed."""
        return self._decode(await self.client.result(self.job.id, timeout=timeout))

    async def wait(self, timeout: float | None = None) -> Job:  # noqa: ASYNC109 (sent as the long poll's wait)
        """The job once it has ended, whichever way (``ResultTimeout`` if not in time)."""
        return await self.client.wait(self.job.id, timeout=timeout)

    def __repr__(self) -> str:
        return f"<AsyncHandle job {self.job.id} {self.job.kind}>"


class Handle(Generic[R]):
    """An enqueued job of a ``SyncClient``; ``handle.result(timeout=...)`` blocks. The same
    errors as ``AsyncHandle.result``."""

    def __init__(self, client: SyncClient, job: Job, decode: Callable[[JSON], R]) -> None:
        self.client = client
        self.job = job
        self._decode = decode

    @property
    def id(self) -> int:
        return self.job.id

    def result(self, timeout: float | None = None) -> R:
        """The job's result as the task's return type, once it has completed."""
        return self._decode(self.client.result(self.job.id, timeout=timeout))

    def wait(self, timeout: float | None = None) -> Job:
        """The job once it has ended, whichever way (``ResultTimeout`` if not in time)."""
        return self.client.wait(self.job.id, timeout=timeout)

    def __repr__(self) -> str:
        return f"<Handle job {self.job.id} {self.job.kind}>"


def as_json(value: JSON) -> Any:
    """The result as stored, for tasks that declare no return type."""
    return value
