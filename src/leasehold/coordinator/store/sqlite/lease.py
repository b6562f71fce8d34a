"""Which queued jobs a lease takes, on SQLite: index reads only, flat at a million jobs.

Queries name their index (INDEXED BY): without ANALYZE statistics SQLite prefers
jobs_status for "status = 'queued'" and then sorts every queued job. Each narrowing of a
lease (kinds, queues, both) reads one index range per kind, queue or (queue, kind) pair
and merges the heads here: an IN list in one scan would make SQLite sort every queued job
of those kinds.

Per-kind concurrency limits: this process is the database's only writer, so counting a
kind's running jobs (from the job counts) and leasing in one transaction cannot race.
"""

from __future__ import annotations

import dataclasses
import itertools
import sqlite3
from collections import Counter
from collections.abc import Iterable
from typing import Final

from leasehold.coordinator.store.contract import LeaseRequest
from leasehold.coordinator.store.sqlite import ops as ops

_ORDER: Final = "ORDER BY priority DESC, run_after, id"
# How many distinct kinds an unfiltered lease considers when some kind is limited.
MAX_KINDS_SCANNED: Final = 10_000

Head = tuple[int, float, int, str]  # (priority, run_after, id, kind)


def pick(conn: sqlite3.Connection, request: LeaseRequest, now: float) -> list[int]:
    """Ids of up to ``max_jobs`` jobs to lease, in lease order.

    A paused queue is left out by narrowing the lease to the queues that are not paused
    (read in this transaction: a pause that has committed is always seen)."""
    paused = ops.paused_queues(conn)
    if paused:
        wanted = request.queues if request.queues is not None else ops.queued_queues(conn)
        open_queues = tuple(q for q in dict.fromkeys(wanted) if q not in paused)
        if not open_queues:
            return []
        request = dataclasses.replace(request, queues=open_queues)
    limits = dict(conn.execute("SELECT kind, max_running FROM kind_limits").fetchall())
    kinds = request.kinds
    if limits and kinds is None:
        quick = _pick_unnarrowed(conn, request, now, limits)
        if quick is not None:
            return quick
    if limits and (kinds is None or not limits.keys().isdisjoint(kinds)):
        room = _room(conn, limits, kinds)
        if kinds is None:
            kinds = tuple(queued_kinds(conn))
        kinds = tuple(k for k in kinds if room.get(k, 1) > 0)
        if not kinds:
            return []
        return _merge(_heads(conn, request, now, kinds, room), request.max_jobs, room)
    return _merge(_heads(conn, request, now, kinds, {}), request.max_jobs, {})


def _pick_unnarrowed(
    conn: sqlite3.Connection, request: LeaseRequest, now: float, limits: dict[str, int]
) -> list[int] | None:
    """The lease that ignores limits, if no limit stops any of its jobs; None otherwise.

    The usual case when some kind is limited: its jobs are not among the first due ones,
    or its room is not used up. Only the limited kinds among these jobs are counted, so a
    lease does not probe every queued kind (thousands of tenant kinds) to honour a limit
    on one of them; otherwise the full per-kind pick below runs.
    """
    heads = sorted(_heads(conn, request, now, None, {}), key=lambda h: (-h[0], h[1], h[2]))
    heads = heads[: request.max_jobs]
    wanted = Counter(kind for _, _, _, kind in heads if kind in limits)
    for kind, n in wanted.items():
        if limits[kind] - running(conn, kind) < n:
            return None
    return [job_id for _, _, job_id, _ in heads]


def _room(
    conn: sqlite3.Connection, limits: dict[str, int], kinds: tuple[str, ...] | None
) -> dict[str, int]:
    """How many more jobs of each limited kind (among ``kinds``) may run now."""
    room = {}
    for kind, max_running in limits.items():
        if kinds is None or kind in kinds:
            room[kind] = max_running - running(conn, kind)
    return room


def running(conn: sqlite3.Connection, kind: str) -> int:
    """A kind's running jobs, from the counts the triggers keep (exact, and no index on
    running jobs to maintain on every lease)."""
    (n,) = conn.execute(
        "SELECT coalesce(sum(n), 0) FROM job_counts WHERE kind = ? AND status = 'running'",
        (kind,),
    ).fetchone()
    return int(n)


def queued_kinds(conn: sqlite3.Connection) -> list[str]:
    """The kinds that have queued jobs, one index probe each (a loose index scan)."""
    rows = conn.execute(
        "WITH RECURSIVE k(kind) AS ("
        " SELECT (SELECT kind FROM jobs INDEXED BY jobs_pick_kind WHERE status = 'queued'"
        " ORDER BY kind LIMIT 1)"
        " UNION ALL SELECT (SELECT kind FROM jobs INDEXED BY jobs_pick_kind"
        " WHERE status = 'queued' AND kind > k.kind ORDER BY kind LIMIT 1)"
        " FROM k WHERE k.kind IS NOT NULL"
        ") SELECT kind FROM k WHERE kind IS NOT NULL LIMIT ?",
        (MAX_KINDS_SCANNED,),
    )
    return [kind for (kind,) in rows]


def _heads(
    conn: sqlite3.Connection,
    request: LeaseRequest,
    now: float,
    kinds: tuple[str, ...] | None,
    room: dict[str, int],
) -> list[Head]:
    """The first jobs of each requested kind / queue / (queue, kind) range."""
    heads: list[Head] = []
    n = request.max_jobs
    queues: Iterable[str | None] = request.queues if request.queues is not None else [None]
    narrowed: Iterable[str | None] = kinds if kinds is not None else [None]
    for queue, kind in itertools.product(dict.fromkeys(queues), dict.fromkeys(narrowed)):
        where, params = ["status = 'queued'"], []
        if queue is not None:
            where.append("queue = ?")
            params.append(queue)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        index = "jobs_pick" + ("_queue" if queue is not None else "")
        index += "_kind" if kind is not None else ""
        limit = min(n, room.get(kind, n)) if kind is not None else n
        heads += _due_heads(conn, index, " AND ".join(where), params, now, limit)
    return heads


def _due_heads(
    conn: sqlite3.Connection,
    index: str,
    where: str,
    params: list[str],
    now: float,
    limit: int,
) -> list[Head]:
    """The first ``limit`` due jobs of one index range, a priority level at a time.

    Within a level the index is ordered by run_after, so its due jobs are one contiguous
    range that a seek finds; the levels are walked by a loose index scan (one probe each).
    Jobs not yet due are thus never stepped over one by one, however many a level holds:
    a lease costs a probe per distinct priority above its jobs (at most 2,001 values).
    """
    heads: list[Head] = []
    level = conn.execute(
        f"SELECT max(priority) FROM jobs INDEXED BY {index} WHERE {where}", params
    ).fetchone()[0]
    while level is not None and len(heads) < limit:
        heads += conn.execute(
            f"SELECT priority, run_after, id, kind FROM jobs INDEXED BY {index}"
            f" WHERE {where} AND priority = ? AND run_after <= ? {_ORDER} LIMIT ?",
            (*params, level, now, limit - len(heads)),
        ).fetchall()
        level = conn.execute(
            f"SELECT max(priority) FROM jobs INDEXED BY {index} WHERE {where} AND priority < ?",
            (*params, level),
        ).fetchone()[0]
    return heads


def _merge(heads: list[Head], n: int, room: dict[str, int]) -> list[int]:
    """The first ``n`` heads in lease order, no limited kind taken past its room."""
    taken: Counter[str] = Counter()
    ids: list[int] = []
    for _, _, job_id, kind in sorted(heads, key=lambda h: (-h[0], h[1], h[2])):
        if len(ids) == n:
            break
        if kind in room and taken[kind] >= room[kind]:
            continue
        taken[kind] += 1
        ids.append(job_id)
    return ids


def oldest_available(conn: sqlite3.Connection, now: float) -> float | None:
    """run_after of the longest-waiting available job: the oldest of the heads of each
    priority level (one probe per distinct priority: a loose index scan)."""
    (oldest,) = conn.execute(
        "WITH RECURSIVE p(priority) AS ("
        " SELECT (SELECT priority FROM jobs INDEXED BY jobs_pick WHERE status = 'queued'"
        " ORDER BY priority DESC LIMIT 1)"
        " UNION ALL SELECT (SELECT priority FROM jobs INDEXED BY jobs_pick"
        " WHERE status = 'queued' AND priority < p.priority ORDER BY priority DESC LIMIT 1)"
        " FROM p WHERE p.priority IS NOT NULL"
        ") SELECT min((SELECT run_after FROM jobs INDEXED BY jobs_pick"
        " WHERE status = 'queued' AND priority = p.priority"
        " ORDER BY priority DESC, run_after LIMIT 1)) FROM p WHERE p.priority IS NOT NULL",
    ).fetchone()
    # The oldest head of all is the oldest queued job: available if any job is.
    return oldest if oldest is not None and oldest <= now else None


def next_run_after(conn: sqlite3.Connection, after: float) -> float | None:
    """The earliest run_after later than ``after`` among queued jobs: the earliest of each
    priority level's (one seek per distinct priority: a loose index scan)."""
    (earliest,) = conn.execute(
        "WITH RECURSIVE p(priority) AS ("
        " SELECT (SELECT max(priority) FROM jobs INDEXED BY jobs_pick WHERE status = 'queued')"
        " UNION ALL SELECT (SELECT max(priority) FROM jobs INDEXED BY jobs_pick"
        " WHERE status = 'queued' AND priority < p.priority)"
        " FROM p WHERE p.priority IS NOT NULL"
        ") SELECT min((SELECT run_after FROM jobs INDEXED BY jobs_pick"
        " WHERE status = 'queued' AND priority = p.priority AND run_after > ?"
        " ORDER BY priority DESC, run_after LIMIT 1)) FROM p WHERE p.priority IS NOT NULL",
        (after,),
    ).fetchone()
    return float(earliest) if earliest is not None else None
