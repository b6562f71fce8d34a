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
        for kind, handler in (handlers or {}).items():
            self.add(kind, handler)

    @classmethod
    def of(cls, handlers: Registry | Mapping[str, Handler]) -> Registry:
        return handlers if isinstance(handlers, Registry) else cls(handlers)

    def add(self, kind: str, handler: Handler) -> None:
        if not isinstance(kind, str) or not kind.strip():
            raise ValueError(f"a job kind is a non-empty string, not {kind!r}")
        if not callable(handler):
            raise TypeError(f"the handler for {kind!r} is not callable: {handler!r}")
        if kind in self._handlers:
            raise ValueError(f"kind {kind!r} already has a handler: {self._handlers[kind]!r}")
        self._handlers[kind] = handler

    def handler(self, kind: str) -> Callable[[H], H]:
        """A decorator that registers the function as the handler of ``kind``."""

        def register(handler: H) -> H:
            self.add(kind, handler)
            return handler

        return register

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._handlers)

    def __getitem__(self, kind: str) -> Handler:
        return self._handlers[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)
