"""The benchmarks' no-op task on huey with its SQLite storage (huey is a benchmark extra).

The database file comes from $LEASEHOLD_BENCH_HUEY_DB, read at import: huey's consumer
imports this module by name (``bench.hueyapp.huey``).
"""

from __future__ import annotations

import os
from typing import Any

from huey import SqliteHuey

from bench.apps import record_start

HUEY_DB_ENV = "LEASEHOLD_BENCH_HUEY_DB"

# fsync=True is synchronous=FULL, as leasehold's default (huey would leave SQLite's own
# default, FULL on this machine's build too; said explicitly so that it cannot differ).
huey = SqliteHuey("bench", filename=os.environ.get(HUEY_DB_ENV, "huey.db"), fsync=True)


@huey.task()
def noop_task(tag: Any = None) -> None:
    record_start(tag)
