"""The process's client: made once, on first use (safe across a fork of the server), and
closed when the process exits, so that its connections end cleanly."""

from __future__ import annotations

import atexit
import functools

from leasehold import SyncClient


@functools.cache
def client() -> SyncClient:
    made = SyncClient.from_env()  # $LEASEHOLD_URL, or http://127.0.0.1:8080
    atexit.register(made.close)  # Django has no shutdown hook; a process's exit is the end
    return made
