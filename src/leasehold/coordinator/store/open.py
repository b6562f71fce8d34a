"""Choosing a backend from a database URL."""

from __future__ import annotations

import importlib
from urllib.parse import urlparse

from leasehold.coordinator.clock import Clock
from leasehold.coordinator.rules.graph import RULES
from leasehold.coordinator.store.contract import Store

MISSING_POSTGRES = (
    "a postgresql:// database needs the postgres extra:"
    " pip install 'leasehold-queue[postgres]' (or: make install EXTRAS=postgres)"
)


def postgres_missing() -> str | None:
    """Why a ``postgresql://`` database cannot be used here (the extra is not installed),
    or None. An import rather than a look-up: an asyncpg that is found but cannot load
    (a broken install) is missing too."""
    try:
        importlib.import_module("asyncpg")
    except ImportError:
        return MISSING_POSTGRES
    return None


def sqlite_path(url: str) -> str:
    """``sqlite:///relative.db``, ``sqlite:////abs/path.db`` or ``sqlite:///:memory:``."""
    if not url.startswith("sqlite:///"):
        raise ValueError(f"not a sqlite URL: {url!r} (expected sqlite:///PATH)")
    return url.removeprefix("sqlite:///")


def dialect_of(url: str) -> str:
    """The migrations' folder for ``url``: ``sqlite`` or ``postgres``."""
    return "sqlite" if urlparse(url).scheme == "sqlite" else "postgres"


def open_store(url: str, *, clock: Clock | None = None, synchronous: str = "FULL") -> Store:
    """A store for ``url``: ``sqlite:///PATH`` or ``postgresql://...``, with the rules it
    applies of its own accord (``rules.graph.RULES``). Not yet opened."""
    scheme = urlparse(url).scheme
    if scheme == "sqlite":
        from leasehold.coordinator.store.sqlite.driver import SqliteStore

        return SqliteStore(sqlite_path(url), clock=clock, synchronous=synchronous, rules=RULES)
    if scheme in ("postgres", "postgresql"):
        # Imported by name so that the embedded default never loads asyncpg, which is an
        # extra: without it, say how to install it rather than show an ImportError.
        missing = postgres_missing()
        if missing is not None:
            raise ValueError(missing)
        postgres = importlib.import_module("leasehold.coordinator.store.postgres.driver")
        store: Store = postgres.PostgresStore(url, rules=RULES)
        return store
    raise ValueError(f"unsupported database URL scheme {scheme!r}: use sqlite:/// or postgresql://")
