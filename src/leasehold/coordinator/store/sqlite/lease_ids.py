"""Lease request ids on SQLite: remember what a lease request got, and replay it.

Called inside the writer thread's transaction, around the lease itself, so the lease and
its record commit together (PROTOCOL.md, "Lease idempotency").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from leasehold.coordinator.store.contract import LEASE_REQUEST_WINDOW_SECONDS, LeaseRequest
from leasehold.model import Job


def replay(
    conn: sqlite3.Connection,
    request: LeaseRequest,
    now: float,
    columns: str,
    to_job: Callable[[tuple[Any, ...]], Job],
) -> list[Job] | None:
    """The jobs an earlier request with this id got and still holds, or None when the id
    is new (or older than the window). Forgets ids past the window first."""
    conn.execute(
        "DELETE FROM lease_requests WHERE created_at < ?", (now - LEASE_REQUEST_WINDOW_SECONDS,)
    )
    got = conn.execute(
        "SELECT leases FROM lease_requests WHERE worker_id = ? AND request_id = ?",
        (request.worker_id, request.request_id),
    ).fetchone()
    if got is None:
        return None
    # Only leases still held: a job since reported, expired or leased again is not handed
    # out again (its token moved on, or it is no longer running).
    held = []
    for job_id, token in orjson.loads(got[0]):
        row = conn.execute(
            f"SELECT {columns} FROM jobs WHERE id = ? AND lease_token = ?"
            " AND status = 'running' AND report IS NULL",
            (job_id, token),
        ).fetchone()
        if row is not None:
            held.append(to_job(row))
    return held


def remember(
    conn: sqlite3.Connection, request: LeaseRequest, jobs: Sequence[Job], now: float
) -> None:
    """Record the leases a request with an id was given: one row, however many jobs. An
    answer with none is not recorded: a long poll asks again under the same id, and its
    next look (or an enqueue's handoff) must lease afresh, not replay the empty one."""
    if not jobs:
        return
    conn.execute(
        "INSERT OR REPLACE INTO lease_requests (worker_id, request_id, leases, created_at)"
        " VALUES (?, ?, ?, ?)",
        (
            request.worker_id,
            request.request_id,
            orjson.dumps([[j.id, j.lease_token] for j in jobs]),
            now,
        ),
    )
