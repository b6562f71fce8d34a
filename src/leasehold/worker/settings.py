"""The worker's settings, built once (by the CLI or a test) and passed down."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from leasehold.client import DEFAULT_URL
from leasehold.model import BEAT_SECONDS


def default_worker_id() -> str:
    """host-pid: unique among live workers, and says where to look."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    # The coordinator, or several on one database separated by commas (as Client takes
    # them): a call that gets no answer from one moves on to the next.
    url: str = DEFAULT_URL
    concurrency: int = 4
    # The kinds to lease; None: every kind the registry has a handler for.
    kinds: tuple[str, ...] | None = None
    # The queues to lease from; None: every queue.
    queues: tuple[str, ...] | None = None
    # None: the coordinator's default lease length.
    lease_seconds: float | None = None
    worker_id: str = field(default_factory=default_worker_id)
    token: str | None = None
    # How long one lease request waits for a job (a long poll) before trying again. A
    # graceful stop waits for polls in flight, so this also bounds how long it takes.
    wait_seconds: float = 5.0
    # After the first stop signal, how long running handlers get before they are cancelled
    # and their jobs released, as a second signal would.
    grace_seconds: float = 30.0
    # How often the worker tells the coordinator it is alive (GET /workers lists it).
    beat_seconds: float = BEAT_SECONDS
    # A worker started by `leasehold worker --processes/--reload`: the supervisor's process
    # id. If that process goes (killed outright), the worker stops as on SIGTERM.
    parent_pid: int | None = None
