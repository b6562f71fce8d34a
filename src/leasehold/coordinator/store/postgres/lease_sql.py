"""The lease statement on PostgreSQL, for each way a lessee narrows its choice.

A lease is one statement: an UPDATE of the jobs picked in an InitPlan
(``= ANY(ARRAY(...))``, so the UPDATE finds them by primary key whatever the plan), which
also writes the history records and the counts. The pick reads the head of one partial
index (highest priority, oldest run_after, lowest id) per requested kind, queue or
(queue, kind) pair, merged: ``kind = ANY(...)`` in one scan would either sort every
queued job of those kinds or walk the whole queue for a rare kind. Each head locks up to
``n`` rows (``FOR UPDATE SKIP LOCKED``) and only ``n`` are leased; the rest are unlocked at
commit, a moment later.

Paused queues take the same way: the plain statement leases nothing when a queue it could
pick from is paused, and the store runs the capped form narrowed to the queues that are
not paused (an empty or tiny table probed once per lease while nothing is paused).

Per-kind concurrency limits. The plain statement leases only when no limit applies to
what it could pick (a one-time filter on ``kind_limits``, so it costs one probe of an
empty or small table), and says so in its answer. Otherwise the store runs the capped form
in a transaction that first locks the limited kinds' rows and counts their running jobs
(from the kept job counts, see ``RUNNING``):
leases of a limited kind take turns, and each sees the jobs the previous one leased.
Times are ``statement_timestamp()``: in the capped form that is after the lock was taken,
so a lease is never recorded as starting before a completion it waited for.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from leasehold import job_fields

COLUMNS: Final = job_fields.columns()
SHARD: Final = "pg_backend_pid() % 16"
SECOND: Final = "floor(extract(epoch FROM now()))::bigint"
_ORDER: Final = "ORDER BY priority DESC, run_after, id"
_NOW: Final = "statement_timestamp()"
# The priority levels that have queued jobs, highest first, one index probe each (a loose
# index scan over jobs_pick): the walk every unnarrowed pick and due-time read starts from.
_LEVELS: Final = (
    "WITH RECURSIVE p(priority) AS ("
    " (SELECT priority FROM jobs WHERE status = 'queued' ORDER BY priority DESC LIMIT 1)"
    " UNION ALL SELECT (SELECT priority FROM jobs WHERE status = 'queued'"
    " AND priority < p.priority ORDER BY priority DESC LIMIT 1)"
    " FROM p WHERE p.priority IS NOT NULL"
    ")"
)

# $1 worker_id, $2 lease seconds, $3 n; then kinds, caps (capped form), queues as used.
_LEASE: Final = (
    "WITH lim AS (SELECT {limited} AS limited), leased AS ("
    " UPDATE jobs SET status = 'running', lease_token = nextval('lease_tokens'),"
    f" attempts = attempts + 1, lease_owner = $1, lease_expires_at = {_NOW}"
    f" + make_interval(secs => $2), lease_seconds = $2, leased_at = {_NOW}, report = NULL"
    " WHERE id = ANY(ARRAY({pick})) AND status = 'queued'"
    f" RETURNING {COLUMNS}"
    "), history AS ("
    " INSERT INTO attempts (job_id, token, worker_id, leased_at, outcome)"
    " SELECT id, lease_token, lease_owner, leased_at, 'running' FROM leased"
    "), agg AS ("
    " SELECT kind, queue, count(*) AS n,"
    " sum(greatest(0, extract(epoch FROM leased_at - run_after)))::float8 AS waited"
    " FROM leased GROUP BY kind, queue"
    "), grouped AS ("
    " INSERT INTO group_counts (kind, group_key, shard, running)"
    f" SELECT kind, group_key, {SHARD}, count(*) FROM leased WHERE group_key IS NOT NULL"
    " GROUP BY kind, group_key ORDER BY kind, group_key"
    " ON CONFLICT (kind, group_key, shard)"
    " DO UPDATE SET running = group_counts.running + excluded.running"
    "), counted AS ("
    " INSERT INTO counters (name, kind, queue, shard, value)"
    f" SELECT c.name, agg.kind, agg.queue, {SHARD}, c.sign * agg.n FROM agg CROSS JOIN"
    " (VALUES ('jobs:queued', -1), ('jobs:running', 1)) AS c(name, sign)"
    f" UNION ALL SELECT 'leased', kind, '', {SHARD}, sum(n) FROM agg GROUP BY kind"
    " ORDER BY 1, 2, 3"
    " ON CONFLICT (name, kind, queue, shard)"
    " DO UPDATE SET value = counters.value + excluded.value"
    "), rolled AS ("
    " INSERT INTO rollups (second, name, kind, shard, count, total)"
    f" SELECT {SECOND}, 'leased', kind, {SHARD}, sum(n), sum(waited) FROM agg"
    " GROUP BY kind ORDER BY kind"
    " ON CONFLICT (second, name, kind, shard) DO UPDATE"
    " SET count = rollups.count + excluded.count, total = rollups.total + excluded.total"
    f") SELECT lim.limited, leased.* FROM lim LEFT JOIN leased ON true"
)


# A planned lease (store/flow.py) takes the jobs it chose, by id ($3): rows it has locked.
LEASE_TAKE: Final = _LEASE.format(limited="false", pick="SELECT unnest($3::bigint[])")
_HEAD: Final = "priority, run_after, id, kind, group_key, weight"
_DUE_NOW: Final = (
    f"status = 'queued' AND run_after <= {_NOW} AND (start_by IS NULL OR start_by > {_NOW})"
)


@lru_cache(maxsize=4)
def heads_sql(*, queues: bool) -> str:
    """The first due jobs of each kind ($1) up to its cap ($2) and ``$3`` in all, from each
    queue ($4), locked (``SKIP LOCKED``): what a planned lease chooses among."""
    ranges = "unnest($1::text[], $2::int[]) AS k(kind, cap)"
    match = "jobs.kind = k.kind"
    if queues:
        ranges += " CROSS JOIN unnest($4::text[]) AS q(queue)"
        match += " AND jobs.queue = q.queue"
    return (
        f"SELECT h.* FROM (SELECT head.* FROM {ranges} CROSS JOIN LATERAL ("
        f" SELECT {_HEAD} FROM jobs WHERE {_DUE_NOW} AND {match}"
        f" {_ORDER} LIMIT least($3, k.cap) FOR UPDATE SKIP LOCKED) AS head) AS h"
        f" {_ORDER} LIMIT $3"
    )


@lru_cache(maxsize=4)
def group_heads_sql(*, grouped: bool, queues: bool) -> str:
    """The first ``$2`` due jobs of one group of kind ``$1`` (``$3`` its key, or the jobs
    without one), from the queues ``$4``, locked (``SKIP LOCKED``)."""
    where = f"{_DUE_NOW} AND kind = $1 AND "
    where += "group_key = $3" if grouped else "group_key IS NULL"
    if queues:
        where += f" AND queue = ANY(${4 if grouped else 3}::text[])"
    return f"SELECT {_HEAD} FROM jobs WHERE {where} {_ORDER} LIMIT $2 FOR UPDATE SKIP LOCKED"


@lru_cache(maxsize=2)
def group_next_due_sql(*, grouped: bool) -> str:
    """The earliest run_after of a group's queued jobs: each priority level's first."""
    where = "status = 'queued' AND kind = $1 AND " + (
        "group_key = $2" if grouped else "group_key IS NULL"
    )
    return (
        "WITH RECURSIVE p(priority) AS ("
        f" (SELECT priority FROM jobs WHERE {where} ORDER BY priority DESC LIMIT 1)"
        f" UNION ALL SELECT (SELECT priority FROM jobs WHERE {where}"
        " AND priority < p.priority ORDER BY priority DESC LIMIT 1)"
        " FROM p WHERE p.priority IS NOT NULL"
        f") SELECT min((SELECT run_after FROM jobs WHERE {where} AND priority = p.priority"
        " ORDER BY priority DESC, run_after LIMIT 1)) FROM p WHERE p.priority IS NOT NULL"
    )


@lru_cache(maxsize=16)
def lease_sql(*, kinds: bool, queues: bool, capped: bool) -> str:
    """The lease statement for one shape of request (cached: asyncpg prepares by text)."""
    n_kinds, n_caps = "$4", "$5"
    n_queues = f"${4 + kinds + capped}"
    if capped:
        limited = "false"
    elif kinds:
        limited = f"EXISTS (SELECT 1 FROM kind_limits WHERE kind = ANY({n_kinds}::text[]))"
    else:
        limited = "EXISTS (SELECT 1 FROM kind_limits)"
    if not capped:
        # A paused queue sends the lease to the capped form too, which leaves it out.
        paused = f" WHERE queue = ANY({n_queues}::text[])" if queues else ""
        limited += f" OR EXISTS (SELECT 1 FROM queue_pauses{paused})"
    pick = _pick(kinds, queues, capped, n_kinds, n_caps, n_queues)
    return _LEASE.format(limited=limited, pick=pick)


def _pick(kinds: bool, queues: bool, capped: bool, n_kinds: str, n_caps: str, n_q: str) -> str:
    due = f"{_DUE_NOW} AND NOT (SELECT limited FROM lim)"
    if not kinds and not queues:
        return _plain_pick(due)
    ranges, match = [], []
    if kinds:
        if capped:
            ranges.append(f"unnest({n_kinds}::text[], {n_caps}::int[]) AS k(kind, cap)")
        else:
            ranges.append(f"unnest({n_kinds}::text[]) AS k(kind)")
        match.append("jobs.kind = k.kind")
    if queues:
        ranges.append(f"unnest({n_q}::text[]) AS q(queue)")
        match.append("jobs.queue = q.queue")
    limit = "least($3, k.cap)" if capped else "$3"
    heads = (
        f"SELECT head.* FROM {' CROSS JOIN '.join(ranges)} CROSS JOIN LATERAL ("
        f" SELECT id, priority, run_after, jobs.kind FROM jobs WHERE {due}"
        f" AND {' AND '.join(match)} {_ORDER} LIMIT {limit} FOR UPDATE SKIP LOCKED) AS head"
    )
    if not capped:
        return f"SELECT id FROM ({heads}) AS h {_ORDER} LIMIT $3"
    # A kind's heads from several queues together must still fit in its room.
    return (
        f"SELECT id FROM (SELECT h.*, c.cap, row_number() OVER"
        f" (PARTITION BY h.kind {_ORDER}) AS nth FROM ({heads}) AS h"
        f" JOIN unnest({n_kinds}::text[], {n_caps}::int[]) AS c(kind, cap) ON c.kind = h.kind"
        f") AS ranked WHERE nth <= cap {_ORDER} LIMIT $3"
    )


def _plain_pick(due: str) -> str:
    """The due jobs of highest priority, a priority level at a time.

    Priority leads the index, so ``run_after <= now`` cannot bound one scan of it: a level
    full of jobs not yet due would be stepped over row by row. Instead the levels are walked
    by a loose index scan (one probe each, highest first) and each level's due jobs are one
    seek, as run_after orders them within it. PostgreSQL evaluates a recursive CTE only as
    far as its reader fetches, so the walk stops once ``$3`` jobs are found.
    """
    return (
        f"{_LEVELS} SELECT head.id FROM p CROSS JOIN LATERAL ("
        f" SELECT id FROM jobs WHERE {due} AND priority = p.priority"
        f" {_ORDER} LIMIT $3 FOR UPDATE SKIP LOCKED) AS head LIMIT $3"
    )


QUEUED_KINDS: Final = (
    # A loose index scan: one probe of jobs_pick_kind per kind that has queued jobs. The
    # order names its second column, so no plan can prefer jobs_kind and walk finished jobs.
    "WITH RECURSIVE k(kind) AS ("
    " (SELECT kind FROM jobs WHERE status = 'queued' ORDER BY kind, priority DESC LIMIT 1)"
    " UNION ALL SELECT (SELECT kind FROM jobs WHERE status = 'queued' AND kind > k.kind"
    " ORDER BY kind, priority DESC LIMIT 1) FROM k WHERE k.kind IS NOT NULL"
    ") SELECT kind FROM k WHERE kind IS NOT NULL LIMIT $1"
)
# Running jobs per kind from the kept job counts: exact for what has committed (the deltas
# commit with the changes they count), and no index on running jobs to maintain.
RUNNING: Final = (
    "SELECT kind, sum(value)::bigint AS n FROM counters WHERE name = 'jobs:running'"
    " AND kind = ANY($1::text[]) GROUP BY kind"
)
OLDEST_QUEUED: Final = (
    # The oldest head of each priority level (a loose index scan over jobs_pick).
    f"{_LEVELS} SELECT min((SELECT run_after FROM jobs WHERE status = 'queued'"
    " AND priority = p.priority ORDER BY priority DESC, run_after LIMIT 1))"
    " FROM p WHERE p.priority IS NOT NULL"
)
NEXT_RUN_AFTER: Final = (
    # The earliest future run_after of each priority level (a loose index scan over jobs_pick).
    f"{_LEVELS} SELECT min((SELECT run_after FROM jobs WHERE status = 'queued'"
    " AND priority = p.priority AND run_after > $1 ORDER BY priority DESC, run_after LIMIT 1))"
    " FROM p WHERE p.priority IS NOT NULL"
)
QUEUED_QUEUES: Final = (
    # A loose index scan over jobs_pick_queue: one probe per queue that has queued jobs.
    "WITH RECURSIVE q(queue) AS ("
    " (SELECT queue FROM jobs WHERE status = 'queued' ORDER BY queue, priority DESC LIMIT 1)"
    " UNION ALL SELECT (SELECT queue FROM jobs WHERE status = 'queued' AND queue > q.queue"
    " ORDER BY queue, priority DESC LIMIT 1) FROM q WHERE q.queue IS NOT NULL"
    ") SELECT queue FROM q WHERE queue IS NOT NULL"
)
OLDEST_QUEUED_IN: Final = (
    # The oldest queued job of one queue: the oldest head of each of its priority levels.
    "WITH RECURSIVE p(priority) AS ("
    " (SELECT priority FROM jobs WHERE status = 'queued' AND queue = $1"
    " ORDER BY priority DESC LIMIT 1)"
    " UNION ALL SELECT (SELECT priority FROM jobs WHERE status = 'queued' AND queue = $1"
    " AND priority < p.priority ORDER BY priority DESC LIMIT 1)"
    " FROM p WHERE p.priority IS NOT NULL"
    ") SELECT min((SELECT run_after FROM jobs WHERE status = 'queued' AND queue = $1"
    " AND priority = p.priority ORDER BY priority DESC, run_after LIMIT 1))"
    " FROM p WHERE p.priority IS NOT NULL"
)


@lru_cache(maxsize=2)
def head_kinds_sql(*, queues: bool) -> str:
    """The kinds of the first ``$1`` due jobs an unnarrowed lease would take if no limit
    applied (by queue when ``$2`` names the queues), with how many of each: read without
    locks, to learn whether any limit can stop this lease before probing every kind."""
    due = f"status = 'queued' AND run_after <= {_NOW}"
    if queues:
        heads = (
            "SELECT head.* FROM unnest($2::text[]) AS q(queue) CROSS JOIN LATERAL ("
            f" SELECT kind, priority, run_after, id FROM jobs WHERE {due}"
            f" AND jobs.queue = q.queue {_ORDER} LIMIT $1) AS head {_ORDER} LIMIT $1"
        )
    else:
        heads = (
            f"{_LEVELS} SELECT head.kind FROM p CROSS JOIN LATERAL ("
            f" SELECT kind, id FROM jobs WHERE {due} AND priority = p.priority"
            f" {_ORDER} LIMIT $1) AS head LIMIT $1"
        )
    return f"SELECT kind, count(*) AS n FROM ({heads}) AS h GROUP BY kind"
