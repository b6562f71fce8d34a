"""Persistence behind one protocol; SQL stays inside the backends."""

from leasehold.store.base import Store
from leasehold.store.open import open_store

__all__ = ["Store", "open_store"]
