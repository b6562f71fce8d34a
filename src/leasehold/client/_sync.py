"""``SyncClient``: the async client run on a private event-loop thread, for scripts."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from leasehold.client._client import Client
from leasehold.client._parse import DEFAULT_TIMEOUT_SECONDS, DEFAULT_URL
from leasehold.client._retry import RetryPolicy

P = ParamSpec("P")
T = TypeVar("T")


def _blocking(
    method: Callable[Concatenate[Client, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncClient, P], T]:
    """The blocking form of a ``Client`` method: run on the SyncClient's loop, waited for."""

    def call(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        self._forked()  # before the call is made on a client of the parent's
        return self._run(method(self._client, *args, **kwargs))

    call.__name__, call.__qualname__ = method.__name__, f"SyncClient.{method.__name__}"
    call.__doc__ = method.__doc__
    return call


def _on_thread_of(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class SyncClient:
    """A blocking client for scripts: ``Client`` run on a private event-loop thread.

    Every method is the ``Client`` method of the same name and takes the same arguments;
    there is no second implementation to keep in step. Safe across ``fork``: a child
    notices the new process id and reconnects on its first call.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_read_bytes: int | None = None,
    ) -> None:
        self._options = (url, token, retry, timeout_seconds, max_read_bytes)
        self._owns_loop = True
        self._start()

    @classmethod
    def _on_loop(cls, client: Client, loop: asyncio.AbstractEventLoop) -> SyncClient:
        """A SyncClient whose calls run ``client``'s on ``loop``, a loop that another owner
        runs on a thread of its own (``leasehold.testing``'s in-process coordinator).
        ``close`` leaves the loop to that owner; no fork-safety (a test's client)."""
        view = cls.__new__(cls)
        view._client, view._loop, view._owns_loop = client, loop, False
        view._thread = None
        view._pid = os.getpid()
        return view

    def _start(self) -> None:
        url, token, retry, timeout_seconds, max_read_bytes = self._options
        self._client = Client(
            url,
            token=token,
            retry=retry,
            timeout_seconds=timeout_seconds,
            max_read_bytes=max_read_bytes,
        )
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = threading.Thread(
            target=self._loop.run_forever, name="leasehold-client", daemon=True
        )
        self._thread.start()
        self._pid = os.getpid()

    def _forked(self) -> bool:
        """Whether this is a child forked after the client was made. Its loop thread did
        not survive the fork (only the forking thread does), so every call would wait
        forever: the child starts a loop, a thread and connections of its own instead.
        The parent's are left alone; they still serve the parent."""
        if self._pid == os.getpid() or not self._owns_loop:
            return False
        self._start()
        return True

    @classmethod
    def from_env(cls) -> SyncClient:
        """A client for ``$LEASEHOLD_URL`` with ``$LEASEHOLD_TOKEN``, if they are set."""
        url = os.environ.get("LEASEHOLD_URL", DEFAULT_URL)
        return cls(url, token=os.environ.get("LEASEHOLD_TOKEN"))

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if not self._owns_loop and _on_thread_of(self._loop):
            coroutine.close()
            raise RuntimeError(
                "a SyncClient call from code running on its own event loop would wait"
                " forever: use an async Client there (in an async def handler, say)"
            )
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except BaseException:
            # Interrupted while waiting (Ctrl+C in a script): cancel the call on the loop
            # thread too, or close() would find it still pending and the loop would be
            # closed under it ("Task was destroyed but it is pending").
            future.cancel()
            raise

    def close(self) -> None:
        if self._pid != os.getpid() or self._loop.is_closed():  # the parent's to close
            return
        if not self._owns_loop:
            return  # the client and the loop are the owner's to close
        self._run(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join()
        self._loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    enqueue = _blocking(Client.enqueue)
    enqueue_many = _blocking(Client.enqueue_many)
    lease = _blocking(Client.lease)
    renew = _blocking(Client.renew)
    renew_many = _blocking(Client.renew_many)
    complete = _blocking(Client.complete)
    complete_many = _blocking(Client.complete_many)
    fail = _blocking(Client.fail)
    fail_many = _blocking(Client.fail_many)
    release = _blocking(Client.release)
    get = _blocking(Client.get)
    wait = _blocking(Client.wait)
    result = _blocking(Client.result)
    attempts = _blocking(Client.attempts)
    parents = _blocking(Client.parents)
    dependents = _blocking(Client.dependents)
    explain = _blocking(Client.explain)
    requeue = _blocking(Client.requeue)
    requeue_dead = _blocking(Client.requeue_dead)
    stats = _blocking(Client.stats)
    list = _blocking(Client.list)
    cancel = _blocking(Client.cancel)
    put_schedule = _blocking(Client.put_schedule)
    schedules = _blocking(Client.schedules)
    get_schedule = _blocking(Client.get_schedule)
    delete_schedule = _blocking(Client.delete_schedule)
    put_limit = _blocking(Client.put_limit)
    delete_limit = _blocking(Client.delete_limit)
    limits = _blocking(Client.limits)
    delete = _blocking(Client.delete)
    delete_where = _blocking(Client.delete_where)
    run_now = _blocking(Client.run_now)
    queues = _blocking(Client.queues)
    pause = _blocking(Client.pause)
    resume = _blocking(Client.resume)
    heartbeat = _blocking(Client.heartbeat)
    workers = _blocking(Client.workers)
