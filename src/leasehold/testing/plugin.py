"""leasehold's pytest plugin: the ``leasehold_coordinator`` fixture.

Registered by the package's ``pytest11`` entry point, so installing leasehold is enough
(``-p no:leasehold`` turns it off). It imports nothing of leasehold until a test asks for
the fixture::

    # conftest.py
    @pytest.fixture
    def leasehold_registry() -> Registry:
        return registry  # what leasehold_coordinator.drain() runs

    # test_tasks.py
    def test_welcome(leasehold_coordinator: TestCoordinator) -> None:
        ...
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from leasehold.testing import TestCoordinator
    from leasehold.worker import Handler, Registry


@pytest.fixture
def leasehold_registry() -> Registry | Mapping[str, Handler] | None:
    """The registry ``leasehold_coordinator`` runs jobs with, and whose schedules it syncs:
    none unless a conftest.py overrides this fixture (``drain`` may then be given one)."""
    return None


@pytest.fixture
def leasehold_coordinator(
    leasehold_registry: Registry | Mapping[str, Handler] | None,
) -> Iterator[TestCoordinator]:
    """A fresh in-process coordinator on an empty database and a fake clock, closed after
    the test (``leasehold.testing.TestCoordinator``)."""
    from leasehold.testing import TestCoordinator

    with TestCoordinator(leasehold_registry) as coordinator:
        yield coordinator
