"""The readiness check's statement answers on every backend, and not once closed."""

from __future__ import annotations

import pytest

from leasehold.coordinator.store.contract import Store
from leasehold.errors import Unavailable


async def test_ping_answers_on_an_open_store(store: Store) -> None:
    await store.ping()


async def test_ping_on_a_closed_store_is_unavailable(store: Store) -> None:
    await store.close()
    with pytest.raises(Unavailable):
        await store.ping()
    await store.open()  # the fixture closes it again
