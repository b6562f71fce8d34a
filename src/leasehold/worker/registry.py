"""Which handler runs which kind of job."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeAlias, TypeVar

from leasehold.worker.job import LeasedJob

# A handler is `async def handler(job)` or a plain `def handler(job)` (run on a thread);
# what it returns (JSON) is the job's result.
Handler: TypeAlias = Callable[[LeasedJob], Awaitable[Any]] | Callable[[LeasedJob], Any]
H = TypeVar("H", bound=Handler)


class Registry(Mapping[str, Handler]):
    """Handlers by job kind::

        registry = Registry()

        @registry.handler("send-email")
        async def send_email(job: LeasedJob) -> dict[str, str]:
            ...

    A plain dict ``{kind: handler}`` works wherever a Registry does (``Registry.of``).
    """

    def __init__(self, handlers: Mapping[str, Handler] | None = None) -> None:
        self._handlers: dict[str, Handler] = {}
        self._timeouts: dict[str, float] = {}
        for kind, handler in (handlers or {}).items():
            self.add(kind, handler)

    @classmethod
    def of(cls, handlers: Registry | Mapping[str, Handler]) -> Registry:
        return handlers if isinstance(handlers, Registry) else cls(handlers)

    def add(self, kind: str, handler: Handler, *, timeout_seconds: float | None = None) -> None:
        """Register ``handler`` for ``kind``; ``timeout_seconds`` is the time limit of its
        jobs that carry none of their own."""
        if not isinstance(kind, str) or not kind.strip():
            raise ValueError(f"a job kind is a non-empty string, not {kind!r}")
        if not callable(handler):
            raise TypeError(f"the handler for {kind!r} is not callable: {handler!r}")
        if kind in self._handlers:
            raise ValueError(f"kind {kind!r} already has a handler: {self._handlers[kind]!r}")
        if timeout_seconds is not None:
            if not timeout_seconds > 0:
                raise ValueError(f"a time limit is over 0 seconds, not {timeout_seconds!r}")
            self._timeouts[kind] = timeout_seconds
        self._handlers[kind] = handler

    def handler(self, kind: str, *, timeout_seconds: float | None = None) -> Callable[[H], H]:
        """A decorator that registers the function as the handler of ``kind``."""

        def register(handler: H) -> H:
            self.add(kind, handler, timeout_seconds=timeout_seconds)
            return handler

        return register

    def timeout_of(self, kind: str) -> float | None:
        """The time limit the kind's handler declared, if any."""
        return self._timeouts.get(kind)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._handlers)

    def __getitem__(self, kind: str) -> Handler:
        return self._handlers[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)
