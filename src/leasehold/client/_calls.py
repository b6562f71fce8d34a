"""Every call of the client, once: ``Calls``.

Each call is a flow (``_exchange.py``) that yields the requests it needs and decides what
the answers mean; ``Client`` awaits these flows and ``SyncClient`` runs them on blocking
sockets. The methods of both clients are made from the functions of ``Calls``, with their
arguments and docstrings (``_client.py``, ``_sync.py``): there is no second
implementation to keep in step.
"""

from __future__ import annotations

import copy
import os
import random
from collections.abc import Sequence
from typing import Any, Self

from leasehold.client._endpoints import Endpoints
from leasehold.client._exchange import Shared
from leasehold.client._operator_calls import OperatorCalls
from leasehold.client._parse import DEFAULT_URL
from leasehold.client._retry import RetryPolicy
from leasehold.client._worker_calls import WorkerCalls


class Calls(WorkerCalls, OperatorCalls):
    """Every call of the client, as flows, with the options of one client or view."""

    @classmethod
    def of(
        cls,
        url: str | Sequence[str],
        retry: RetryPolicy | None,
        timeout_seconds: float,
        rng: random.Random | None,
    ) -> Calls:
        shared = Shared(Endpoints(url), rng or random.Random())
        return cls(shared, retry or RetryPolicy(), timeout_seconds)


class Front:
    """What both clients share besides their calls: the coordinators, the options, and
    views with other options on the same connections."""

    _calls: Calls

    @classmethod
    def from_env(cls, **options: Any) -> Self:
        """A client for ``$LEASEHOLD_URL`` (one URL, or several separated by commas) with
        ``$LEASEHOLD_TOKEN``, if they are set."""
        url = os.environ.get("LEASEHOLD_URL") or DEFAULT_URL
        return cls(url, token=os.environ.get("LEASEHOLD_TOKEN"), **options)  # type: ignore[call-arg]

    @property
    def url(self) -> str:
        """The coordinator this client asks now (the one that answered last)."""
        return self._calls.shared.endpoints.current.url

    @property
    def urls(self) -> tuple[str, ...]:
        """Every coordinator this client knows, in the order given."""
        return self._calls.shared.endpoints.urls

    @property
    def retry(self) -> RetryPolicy:
        return self._calls.retry

    @property
    def timeout_seconds(self) -> float:
        """The bound on one try of a call (a long poll adds its wait)."""
        return self._calls.timeout_seconds

    def with_retry(self, retry: RetryPolicy) -> Self:
        """The same client (same connections, same coordinators) with another retry policy."""
        return self._view(self._calls.view(retry, None))

    def with_timeout(self, seconds: float) -> Self:
        """The same client with another bound on one try of a call."""
        return self._view(self._calls.view(None, seconds))

    def _view(self, calls: Calls) -> Self:
        view = copy.copy(self)  # the same transport: its connections and session
        view._calls = calls
        return view
