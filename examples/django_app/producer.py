"""The process's client: made once, on first use (safe across a fork of the server)."""

from __future__ import annotations

import functools

from leasehold import SyncClient


@functools.cache
def client() -> SyncClient:
    return SyncClient.from_env()  # $LEASEHOLD_URL, or http://127.0.0.1:8080
