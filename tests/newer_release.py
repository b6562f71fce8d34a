"""``leasehold`` as a newer release would run it: this release's code, knowing migrations
this one does not (``LEASEHOLD_TEST_MIGRATIONS``, a JSON list of ``[version, name, sql]``).

A rolling upgrade's test runs it beside a plain ``leasehold`` (the older release) on one
PostgreSQL database: ``python -m tests.newer_release serve ...`` from the repository.
"""

from __future__ import annotations

import json
import os

from leasehold.cli import main
from leasehold.coordinator.store import migrate
from leasehold.coordinator.store.migrations import Migration, migrations

EXTRA = [Migration(v, n, sql) for v, n, sql in json.loads(os.environ["LEASEHOLD_TEST_MIGRATIONS"])]


def _known(dialect: str) -> list[Migration]:
    return [*migrations(dialect), *EXTRA]


if __name__ == "__main__":
    setattr(migrate, "migrations", _known)  # noqa: B010 (what the schema's operations read)
    main()
