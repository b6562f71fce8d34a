"""Test mode: a real coordinator inside the test process, on a fake clock.

::

    from leasehold.testing import TestCoordinator

    def test_welcome() -> None:
        with TestCoordinator(registry) as tc:
            handle = send_welcome.enqueue(tc.client, "ada@example.com", name="Ada")
            tc.assert_enqueued(send_welcome, "ada@example.com", name="Ada")
            tc.drain()
            assert handle.result() == "welcomed Ada <ada@example.com>"

Not a mock: the coordinator ``leasehold serve`` runs (its routes, service, rules and
SQLite store, in memory), reached by the ordinary clients without a socket, with jobs run
through the registry's handlers by the worker's own parts. No port, no thread for the test
to manage; time moves when the test says (``advance``). ``TestCoordinator`` is for plain
tests, ``AsyncTestCoordinator`` runs in an async test's own event loop. The pytest plugin
(installed with leasehold) gives a ``leasehold_coordinator`` fixture; override the
``leasehold_registry`` fixture to give it your registry.

The names are imported on first use (``leasehold._lazy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from leasehold._lazy import exports

if TYPE_CHECKING:
    from leasehold.testing._core import AsyncTestCoordinator
    from leasehold.testing._runner import Drained
    from leasehold.testing._sync import TestCoordinator

_HOMES: dict[str, str] = {
    "AsyncTestCoordinator": "leasehold.testing._core",
    "Drained": "leasehold.testing._runner",
    "TestCoordinator": "leasehold.testing._sync",
}

__all__ = ["AsyncTestCoordinator", "Drained", "TestCoordinator"]

__getattr__, __dir__ = exports(__name__, _HOMES)
