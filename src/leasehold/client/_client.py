"""``Client``: the async client. Every call is a flow of ``Calls`` (written once for both
clients), awaited here on aiohttp."""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Sequence
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from leasehold.client._aio import AioTransport, AsyncTransport, drive
from leasehold.client._calls import Calls, Front
from leasehold.client._exchange import HEADERS, MAX_READ_BYTES, Flow
from leasehold.client._parse import DEFAULT_TIMEOUT_SECONDS, DEFAULT_URL
from leasehold.client._retry import RetryPolicy

P = ParamSpec("P")
T = TypeVar("T")


def _awaited(
    flow: Callable[Concatenate[Calls, P], Flow[T]],
) -> Callable[Concatenate[Client, P], Coroutine[Any, Any, T]]:
    """The ``Client`` method of a call: its flow, awaited."""

    async def call(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await drive(flow(self._calls, *args, **kwargs), self._transport)

    call.__name__, call.__qualname__ = flow.__name__, f"Client.{flow.__name__}"
    call.__doc__ = flow.__doc__
    return call


class Client(Front):
    """An async client for a coordinator, or several. Use ``async with Client(url) as c:``.

    ``url`` is one coordinator's URL, or several (a list, or one string with commas) of
    coordinators on one database: a call that gets no answer from one moves on to the
    next (DESIGN.md §14, "Several coordinators"). ``token`` is sent as ``Authorization:
    Bearer <token>``. ``retry`` says how calls that got no answer (``Unavailable``) are
    tried again; 4xx answers are never retried. ``timeout_seconds`` bounds one try.
    ``max_read_bytes`` bounds what one answer may make the client read (64 MiB by
    default, ``MAX_READ_BYTES``): a longer one is ``Unavailable``, as is a 2xx answer that
    is not JSON. An answer that is JSON but not what the call asked for (more leases than
    ``max_jobs``, a job twice, a batch answered for other jobs) is a ``LeaseholdError``.
    A malformed URL is a ``ValueError``.
    """

    def __init__(
        self,
        url: str | Sequence[str] = DEFAULT_URL,
        *,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_connections: int = 100,
        rng: random.Random | None = None,
        max_read_bytes: int | None = None,
    ) -> None:
        self._calls = Calls.of(url, retry, timeout_seconds, rng)
        self._transport: AsyncTransport = AioTransport(
            token, HEADERS, max_connections, max_read_bytes or MAX_READ_BYTES
        )

    @classmethod
    def _over(
        cls,
        transport: AsyncTransport,
        url: str,
        retry: RetryPolicy | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> Client:
        """A client whose requests go through ``transport`` rather than a connection pool
        of its own: ``leasehold.testing`` hands them to an in-process coordinator. The
        calls, retries and answers are every other client's."""
        client = cls.__new__(cls)
        client._calls = Calls.of(url, retry, timeout_seconds, None)
        client._transport = transport
        return client

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    enqueue = _awaited(Calls.enqueue)
    enqueue_many = _awaited(Calls.enqueue_many)
    enqueue_graph = _awaited(Calls.enqueue_graph)

    lease = _awaited(Calls.lease)
    renew = _awaited(Calls.renew)
    complete = _awaited(Calls.complete)
    fail = _awaited(Calls.fail)
    release = _awaited(Calls.release)
    spawn = _awaited(Calls.spawn)
    renew_many = _awaited(Calls.renew_many)
    complete_many = _awaited(Calls.complete_many)
    fail_many = _awaited(Calls.fail_many)
    heartbeat = _awaited(Calls.heartbeat)
    get = _awaited(Calls.get)
    wait = _awaited(Calls.wait)
    result = _awaited(Calls.result)
    attempts = _awaited(Calls.attempts)
    parents = _awaited(Calls.parents)
    dependents = _awaited(Calls.dependents)
    explain = _awaited(Calls.explain)
    cancel = _awaited(Calls.cancel)
    requeue = _awaited(Calls.requeue)
    requeue_dead = _awaited(Calls.requeue_dead)
    delete = _awaited(Calls.delete)
    delete_where = _awaited(Calls.delete_where)
    run_now = _awaited(Calls.run_now)
    queues = _awaited(Calls.queues)
    pause = _awaited(Calls.pause)
    resume = _awaited(Calls.resume)
    workers = _awaited(Calls.workers)
    stats = _awaited(Calls.stats)
    list = _awaited(Calls.list)
    put_schedule = _awaited(Calls.put_schedule)
    schedules = _awaited(Calls.schedules)
    get_schedule = _awaited(Calls.get_schedule)
    delete_schedule = _awaited(Calls.delete_schedule)
    put_limit = _awaited(Calls.put_limit)
    delete_limit = _awaited(Calls.delete_limit)
    limits = _awaited(Calls.limits)
