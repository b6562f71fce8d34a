"""The store every contract test runs against: each backend, on a fresh database."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from leasehold.coordinator.store.contract import Store
from leasehold.coordinator.store.open import open_store
from leasehold.coordinator.store.schema import SchemaReport


@pytest.fixture
async def opened(database_url: str) -> AsyncIterator[tuple[Store, SchemaReport]]:
    """An opened store on a fresh database of each backend, and what its open did."""
    store = open_store(database_url)
    report = await store.open()
    yield store, report
    await store.close()


@pytest.fixture
def store(opened: tuple[Store, SchemaReport]) -> Store:
    """An opened store on a fresh database of each backend."""
    return opened[0]


@pytest.fixture
def t0(opened: tuple[Store, SchemaReport]) -> int:
    """The fresh store's first lease token: its time-derived floor (DESIGN.md §4). The
    tokens after it follow one by one, as the tests lease."""
    return opened[1].tokens_from
