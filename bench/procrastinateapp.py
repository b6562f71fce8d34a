"""The benchmarks' no-op job as a procrastinate task on PostgreSQL (a benchmark extra).

The connection string comes from $LEASEHOLD_BENCH_PROCRASTINATE_DSN, read at import:
procrastinate's command imports this module by name (``bench.procrastinateapp.app``).
"""

from __future__ import annotations

import os
from typing import Any

from procrastinate import App, PsycopgConnector

from bench.apps import record_start

PROCRASTINATE_DSN_ENV = "LEASEHOLD_BENCH_PROCRASTINATE_DSN"

app = App(connector=PsycopgConnector(conninfo=os.environ.get(PROCRASTINATE_DSN_ENV, "")))


@app.task(name="noop")
async def noop(tag: Any = None) -> None:
    record_start(tag)
