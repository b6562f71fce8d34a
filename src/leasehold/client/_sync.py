"""``SyncClient``: the blocking client, for scripts and web applications. Every call is a
flow of ``Calls`` (written once for both clients), run here on plain keep-alive sockets:
no event loop, no thread."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from leasehold.client._blocking import BlockingTransport, SocketTransport, drive
from leasehold.client._calls import Calls, Front
from leasehold.client._exchange import HEADERS, MAX_READ_BYTES, Flow, Reply, Send
from leasehold.client._parse import DEFAULT_TIMEOUT_SECONDS, DEFAULT_URL
from leasehold.client._retry import RetryPolicy

if TYPE_CHECKING:  # the async client and aiohttp are not imported for a SyncClient
    from leasehold.client._aio import AsyncTransport
    from leasehold.client._client import Client

P = ParamSpec("P")
T = TypeVar("T")


def _blocking(
    flow: Callable[Concatenate[Calls, P], Flow[T]],
) -> Callable[Concatenate[SyncClient, P], T]:
    """The ``SyncClient`` method of a call: its flow, run on the client's sockets."""

    def call(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return drive(flow(self._calls, *args, **kwargs), self._transport)

    call.__name__, call.__qualname__ = flow.__name__, f"SyncClient.{flow.__name__}"
    call.__doc__ = flow.__doc__
    return call


class _OnLoop:
    """Each ``Send`` step handed to an async transport on a loop another thread runs."""

    def __init__(self, transport: AsyncTransport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.loop = loop

    def send(self, step: Send) -> Reply:
        if _on_thread_of(self.loop):
            raise RuntimeError(
                "a SyncClient call from code running on its own event loop would wait"
                " forever: use an async Client there (in an async def handler, say)"
            )
        return asyncio.run_coroutine_threadsafe(self.transport.send(step), self.loop).result()

    def close(self) -> None:
        """Nothing: the transport and the loop are their owner's to close."""


def _on_thread_of(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class SyncClient(Front):
    """A blocking client: every method is the ``Client`` method of the same name, with the
    same arguments and the same answers, retries and failover, and returns when the
    ``Client`` call would.

    Safe to share between the threads of a process (each call takes a connection of its
    own from a pool), and across ``fork``: a child opens connections of its own.
    """

    def __init__(
        self,
        url: str | Sequence[str] = DEFAULT_URL,
        *,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_read_bytes: int | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._calls = Calls.of(url, retry, timeout_seconds, rng)
        self._transport: BlockingTransport = SocketTransport(
            token, HEADERS, max_read_bytes or MAX_READ_BYTES
        )

    @classmethod
    def _on_loop(cls, client: Client, loop: asyncio.AbstractEventLoop) -> SyncClient:
        """A SyncClient whose requests ``client``'s transport performs on ``loop``, a loop
        that another owner runs on a thread of its own (``leasehold.testing``'s in-process
        coordinator): the same calls and options as ``client``. ``close`` leaves the loop
        and the transport to that owner."""
        view = cls.__new__(cls)
        view._calls = client._calls
        view._transport = _OnLoop(client._transport, loop)
        return view

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    enqueue = _blocking(Calls.enqueue)
    enqueue_many = _blocking(Calls.enqueue_many)
    enqueue_graph = _blocking(Calls.enqueue_graph)

    lease = _blocking(Calls.lease)
    renew = _blocking(Calls.renew)
    complete = _blocking(Calls.complete)
    fail = _blocking(Calls.fail)
    release = _blocking(Calls.release)
    spawn = _blocking(Calls.spawn)
    renew_many = _blocking(Calls.renew_many)
    complete_many = _blocking(Calls.complete_many)
    fail_many = _blocking(Calls.fail_many)
    heartbeat = _blocking(Calls.heartbeat)
    get = _blocking(Calls.get)
    wait = _blocking(Calls.wait)
    result = _blocking(Calls.result)
    attempts = _blocking(Calls.attempts)
    parents = _blocking(Calls.parents)
    dependents = _blocking(Calls.dependents)
    explain = _blocking(Calls.explain)
    cancel = _blocking(Calls.cancel)
    requeue = _blocking(Calls.requeue)
    requeue_dead = _blocking(Calls.requeue_dead)
    delete = _blocking(Calls.delete)
    delete_where = _blocking(Calls.delete_where)
    run_now = _blocking(Calls.run_now)
    queues = _blocking(Calls.queues)
    pause = _blocking(Calls.pause)
    resume = _blocking(Calls.resume)
    workers = _blocking(Calls.workers)
    stats = _blocking(Calls.stats)
    list = _blocking(Calls.list)
    put_schedule = _blocking(Calls.put_schedule)
    schedules = _blocking(Calls.schedules)
    get_schedule = _blocking(Calls.get_schedule)
    delete_schedule = _blocking(Calls.delete_schedule)
    put_limit = _blocking(Calls.put_limit)
    delete_limit = _blocking(Calls.delete_limit)
    limits = _blocking(Calls.limits)
