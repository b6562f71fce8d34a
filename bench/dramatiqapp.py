"""The benchmarks' no-op job as a Dramatiq actor on Redis (Dramatiq is a benchmark extra).

The broker's URL comes from $LEASEHOLD_BENCH_DRAMATIQ_REDIS, read at import: Dramatiq's
worker command imports this module by name (``dramatiq bench.dramatiqapp``).
"""

from __future__ import annotations

import os
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from bench.apps import record_start

DRAMATIQ_REDIS_ENV = "LEASEHOLD_BENCH_DRAMATIQ_REDIS"

broker = RedisBroker(url=os.environ.get(DRAMATIQ_REDIS_ENV, "redis://127.0.0.1:6379/0"))
dramatiq.set_broker(broker)


@dramatiq.actor(max_retries=0)
def noop(tag: Any = None) -> None:
    record_start(tag)
