"""The store every contract test runs against: each backend, on a fresh database."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from leasehold.coordinator.store.contract import Store
from leasehold.coordinator.store.open import open_store


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    """An opened store on a fresh database of each backend."""
    opened = open_store(database_url)
    await opened.open()
    yield opened
    await opened.close()
