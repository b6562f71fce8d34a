"""The benchmarks' no-op task on huey, with its SQLite or its Redis storage (huey is a
benchmark extra).

The storage comes from the environment, read at import, because huey's consumer imports
this module by name (``bench.hueyapp.huey``): $LEASEHOLD_BENCH_HUEY_REDIS (a redis:// URL)
for Redis, else the SQLite file $LEASEHOLD_BENCH_HUEY_DB.
"""

from __future__ import annotations

import os
from typing import Any

from huey import Huey, RedisHuey, SqliteHuey

from bench.apps import record_start

HUEY_DB_ENV = "LEASEHOLD_BENCH_HUEY_DB"
HUEY_REDIS_ENV = "LEASEHOLD_BENCH_HUEY_REDIS"


def _huey() -> Huey:
    redis_url = os.environ.get(HUEY_REDIS_ENV)
    if redis_url:
        # Durability is the Redis server's (bench/peers.py starts it with appendfsync always).
        return RedisHuey("bench", url=redis_url)
    # fsync=True is synchronous=FULL, as leasehold's default (huey would leave SQLite's own
    # default, FULL on this machine's build too; said explicitly so that it cannot differ).
    return SqliteHuey("bench", filename=os.environ.get(HUEY_DB_ENV, "huey.db"), fsync=True)


huey = _huey()


@huey.task()
def noop_task(tag: Any = None) -> None:
    record_start(tag)
