"""The workflow benchmark's no-op task on Celery, Redis as broker and result backend
(Celery is a benchmark extra; bench/workflows.py --compare celery).

The Redis URL comes from $LEASEHOLD_BENCH_CELERY_REDIS, read at import, because the worker
imports this module by name (``celery -A bench.celeryapp worker``). Each task appends
``task_id start end`` to the file $LEASEHOLD_BENCH_STARTS: its end stands for its
completion (Celery stores the result just after, which favours it by that write).
"""

from __future__ import annotations

import os
import time
from typing import Any

from celery import Celery, Task

CELERY_REDIS_ENV = "LEASEHOLD_BENCH_CELERY_REDIS"
STARTS_ENV = "LEASEHOLD_BENCH_STARTS"

app = Celery(
    "bench", broker=os.environ.get(CELERY_REDIS_ENV), backend=os.environ.get(CELERY_REDIS_ENV)
)
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)
_fd: int | None = None


@app.task(name="bench.step", bind=True)
def step(self: Task, *parents: Any) -> None:
    """A no-op: ``parents`` are the chord header's results (a chain's steps are immutable)."""
    global _fd
    started = time.time()
    if _fd is None:
        _fd = os.open(os.environ[STARTS_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_fd, f"{self.request.id} {started:.6f} {time.time():.6f}\n".encode())
