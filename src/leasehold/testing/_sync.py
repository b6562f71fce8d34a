"""``TestCoordinator``: the async test coordinator for plain (synchronous) tests.

The coordinator runs on an event loop of its own, on a thread this object starts and
stops; the test calls blocking methods and uses a ``SyncClient``. Each method is the
``AsyncTestCoordinator`` method of the same name, run on that loop: there is no second
implementation to keep in step.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar, overload

from leasehold.client import Client, SyncClient
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.model import JSON, Job
from leasehold.tasks import Task
from leasehold.testing._core import AsyncTestCoordinator
from leasehold.testing._matching import ANY
from leasehold.worker.context import WorkerContext
from leasehold.worker.registry import Handler, Registry

P = ParamSpec("P")
Q = ParamSpec("Q")
R = TypeVar("R")
T = TypeVar("T")


def _blocking(
    method: Callable[Concatenate[AsyncTestCoordinator, Q], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[TestCoordinator, Q], T]:
    """The blocking form of an ``AsyncTestCoordinator`` method."""

    def call(self: TestCoordinator, /, *args: Q.args, **kwargs: Q.kwargs) -> T:
        return self._run(method(self.core, *args, **kwargs))

    call.__name__, call.__qualname__ = method.__name__, f"TestCoordinator.{method.__name__}"
    call.__doc__ = method.__doc__
    return call


class TestCoordinator:
    """A coordinator for plain tests, started at once (``with`` closes it)::

        with TestCoordinator(registry) as tc:
            handle = send_welcome.enqueue(tc.client, "ada@example.com", name="Ada")
            tc.assert_enqueued(send_welcome, "ada@example.com", name="Ada")
            tc.drain()
            assert handle.result() == "welcomed Ada <ada@example.com>"

    The arguments are ``AsyncTestCoordinator``'s. ``client`` is a ``SyncClient``;
    ``async_client`` an async ``Client`` that works from any event loop (an application
    under test that runs its own, say).
    """

    __test__ = False  # not a test class, whatever pytest makes of the name

    def __init__(
        self,
        registry: Registry | Mapping[str, Handler] | None = None,
        *,
        inline: bool = False,
        start: datetime | None = None,
        database_url: str = "sqlite:///:memory:",
        settings: CoordinatorSettings | None = None,
        seed: int = 0,
    ) -> None:
        self.core = AsyncTestCoordinator(
            registry,
            inline=inline,
            start=start,
            database_url=database_url,
            settings=settings,
            seed=seed,
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="leasehold-testing", daemon=True
        )
        self._thread.start()
        try:
            self._run(self.core.start())
        except BaseException:
            self._stop_loop()
            raise
        self.client = SyncClient._on_loop(self.core.client, self._loop)

    @property
    def async_client(self) -> Client:
        return self.core.client

    @property
    def registry(self) -> Registry | None:
        return self.core.registry

    @property
    def context(self) -> WorkerContext:
        """The worker context the default registry's hooks and jobs see (see
        ``AsyncTestCoordinator.context``)."""
        return self.core.context

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        """Run the registries' shutdown hooks, stop the coordinator and its thread."""
        if self._loop.is_closed():
            return
        try:
            self._run(self.core.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> TestCoordinator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def now(self) -> datetime:
        """The coordinator's now: the fake clock's."""
        return self.core.now()

    advance = _blocking(AsyncTestCoordinator.advance)
    advance_to = _blocking(AsyncTestCoordinator.advance_to)
    run_due = _blocking(AsyncTestCoordinator.run_due)
    drain = _blocking(AsyncTestCoordinator.drain)
    jobs = _blocking(AsyncTestCoordinator.jobs)

    # The assertions take a task's own arguments (typed by its signature), so each is
    # written out with its overloads; the work is the async method's.

    @overload
    def enqueued(self, task: Task[P, R], /, *args: P.args, **kwargs: P.kwargs) -> list[Job]: ...

    @overload
    def enqueued(self, kind: str, payload: JSON = ANY, /) -> list[Job]: ...

    def enqueued(self, what: Any, /, *args: Any, **kwargs: Any) -> list[Job]:
        """The jobs enqueued by ``task.enqueue(client, *args, **kwargs)``, or of ``kind``
        with ``payload`` (any payload if none is given), in any status since."""
        return self._run(self.core.enqueued(what, *args, **kwargs))

    @overload
    def assert_enqueued(self, task: Task[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Job: ...

    @overload
    def assert_enqueued(self, kind: str, payload: JSON = ANY, /) -> Job: ...

    def assert_enqueued(self, what: Any, /, *args: Any, **kwargs: Any) -> Job:
        """The latest such job (see ``enqueued``); AssertionError, listing the jobs of that
        kind, if there is none."""
        return self._run(self.core.assert_enqueued(what, *args, **kwargs))

    @overload
    def assert_not_enqueued(
        self, task: Task[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> None: ...

    @overload
    def assert_not_enqueued(self, kind: str, payload: JSON = ANY, /) -> None: ...

    def assert_not_enqueued(self, what: Any, /, *args: Any, **kwargs: Any) -> None:
        """AssertionError, listing them, if any such job was enqueued."""
        self._run(self.core.assert_not_enqueued(what, *args, **kwargs))
