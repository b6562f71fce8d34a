"""Lease request ids on PostgreSQL: remember what a lease request got, and replay it.

Run in the lease's own transaction, under a transaction-scoped advisory lock on the
(worker, request id) pair, so two copies of one request arriving at two coordinators at
once lease only once (PROTOCOL.md, "Lease idempotency").
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from leasehold.coordinator.store.contract import LEASE_REQUEST_WINDOW_SECONDS, LeaseRequest
from leasehold.model import Job


async def replay(
    conn: asyncpg.Connection, request: LeaseRequest, columns: str
) -> list[asyncpg.Record] | None:
    """The rows of the jobs an earlier request with this id got and still holds, or None
    when the id is new (or older than the window). Forgets ids past the window first."""
    await conn.execute(
        # Length-prefixed, so no two (worker, id) pairs spell the same text.
        "SELECT pg_advisory_xact_lock(hashtextextended(length($1) || ':' || $1 || $2, 0))",
        request.worker_id,
        request.request_id,
    )
    await conn.execute(
        "DELETE FROM lease_requests WHERE created_at < now() - make_interval(secs => $1)",
        LEASE_REQUEST_WINDOW_SECONDS,
    )
    known = await conn.fetchval(
        "SELECT count(*) FROM lease_requests WHERE worker_id = $1 AND request_id = $2",
        request.worker_id,
        request.request_id,
    )
    if not known:
        return None
    # Only leases still held: a job since reported, expired or leased again is not handed
    # out again (its token moved on, or it is no longer running).
    rows: list[asyncpg.Record] = await conn.fetch(
        f"SELECT {columns} FROM jobs j WHERE (j.id, j.lease_token) IN"
        " (SELECT unnest(job_ids), unnest(tokens) FROM lease_requests"
        " WHERE worker_id = $1 AND request_id = $2)"
        " AND j.status = 'running' AND j.report IS NULL",
        request.worker_id,
        request.request_id,
    )
    return rows


async def remember(conn: asyncpg.Connection, request: LeaseRequest, jobs: Sequence[Job]) -> None:
    """Record the leases a request with an id was given: one row, however many jobs. An
    answer with none is not recorded: a long poll asks again under the same id, and its
    next look (or an enqueue's handoff) must lease afresh, not replay the empty one."""
    if not jobs:
        return
    await conn.execute(
        "INSERT INTO lease_requests (worker_id, request_id, job_ids, tokens)"
        " VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (worker_id, request_id) DO UPDATE SET job_ids = excluded.job_ids,"
        " tokens = excluded.tokens, created_at = now()",
        request.worker_id,
        request.request_id,
        [j.id for j in jobs],
        [j.lease_token for j in jobs],
    )
