"""Which queued jobs a lease takes, on SQLite: index reads only, flat at a million jobs.

Queries name their index (INDEXED BY): without ANALYZE statistics SQLite prefers
jobs_status for "status = 'queued'" and then sorts every queued job. Each narrowing of a
lease (kinds, queues, both) reads one index range per kind, queue or (queue, kind) pair
and merges the heads here: an IN list in one scan would make SQLite sort every queued job
of those kinds. The policy that chooses the narrowing is ``store.leasing``'s.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

import orjson

from leasehold.coordinator.store.driver import Head

_ORDER: Final = "ORDER BY priority DESC, run_after, id"
# A due job's head as a lease reads it (driver.Head), and what makes it due: its run_after
# reached and its start deadline, if it has one, not passed.
_HEAD: Final = "priority, run_after, id, kind, group_key, weight"
_DUE: Final = "run_after <= ? AND (start_by IS NULL OR start_by > ?)"


def heads(
    conn: sqlite3.Connection,
    now: float,
    n: int,
    kinds: Sequence[str] | None,
    queues: Sequence[str] | None,
    caps: dict[str, int] | None = None,
) -> list[Head]:
    """The first ``n`` due jobs (each kind at most its ``caps`` entry), in lease order."""
    found: list[Head] = []
    ranges = itertools.product(
        dict.fromkeys(queues) if queues is not None else [None],
        dict.fromkeys(kinds) if kinds is not None else [None],
    )
    for queue, kind in ranges:
        where, params = ["status = 'queued'"], []
        if queue is not None:
            where.append("queue = ?")
            params.append(queue)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        index = "jobs_pick" + ("_queue" if queue is not None else "")
        index += "_kind" if kind is not None else ""
        limit = min(n, caps.get(kind, n)) if caps is not None and kind is not None else n
        found += _due_heads(conn, index, " AND ".join(where), params, now, limit)
    return _merge(found, n, caps or {})


def group_heads(
    conn: sqlite3.Connection,
    now: float,
    kind: str,
    group_key: str | None,
    queues: Sequence[str] | None,
    n: int,
) -> list[Head]:
    """The first ``n`` due jobs of one group of a kind (None: those without a group)."""
    where = ["status = 'queued'", "kind = ?"]
    params: list[object] = [kind]
    if group_key is None:
        where.append("group_key IS NULL")
    else:
        where.append("group_key = ?")
        params.append(group_key)
    if queues is not None:
        where.append("queue IN (SELECT value FROM json_each(?))")
        params.append(orjson.dumps(list(queues)).decode())
    return _due_heads(conn, "jobs_pick_group", " AND ".join(where), params, now, n)


def group_next_due(conn: sqlite3.Connection, kind: str, group_key: str | None) -> float | None:
    """The earliest run_after of a group's queued jobs: each priority level's first."""
    where = "status = 'queued' AND kind = ? AND " + (
        "group_key IS NULL" if group_key is None else "group_key = ?"
    )
    params = [kind] if group_key is None else [kind, group_key]
    found = conn.execute(
        "WITH RECURSIVE p(priority) AS ("
        f" SELECT (SELECT max(priority) FROM jobs INDEXED BY jobs_pick_group WHERE {where})"
        " UNION ALL SELECT (SELECT max(priority) FROM jobs INDEXED BY jobs_pick_group"
        f" WHERE {where} AND priority < p.priority) FROM p WHERE p.priority IS NOT NULL"
        ") SELECT min((SELECT run_after FROM jobs INDEXED BY jobs_pick_group"
        f" WHERE {where} AND priority = p.priority ORDER BY priority DESC, run_after LIMIT 1))"
        " FROM p WHERE p.priority IS NOT NULL",
        [*params, *params, *params],
    ).fetchone()[0]
    return float(found) if found is not None else None


def _due_heads(
    conn: sqlite3.Connection,
    index: str,
    where: str,
    params: Sequence[object],
    now: float,
    limit: int,
) -> list[Head]:
    """The first ``limit`` due jobs of one index range, a priority level at a time.

    Within a level the index is ordered by run_after, so its due jobs are one contiguous
    range that a seek finds; the levels are walked by a loose index scan (one probe each).
    Jobs not yet due are thus never stepped over one by one, however many a level holds:
    a lease costs a probe per distinct priority above its jobs (at most 2,001 values).
    """
    found: list[Head] = []
    level = conn.execute(
        f"SELECT max(priority) FROM jobs INDEXED BY {index} WHERE {where}", params
    ).fetchone()[0]
    while level is not None and len(found) < limit:
        found += map(
            Head._make,
            conn.execute(
                f"SELECT {_HEAD} FROM jobs INDEXED BY {index}"
                f" WHERE {where} AND priority = ? AND {_DUE} {_ORDER} LIMIT ?",
                (*params, level, now, now, limit - len(found)),
            ),
        )
        level = conn.execute(
            f"SELECT max(priority) FROM jobs INDEXED BY {index} WHERE {where} AND priority < ?",
            (*params, level),
        ).fetchone()[0]
    return found


def _merge(found: list[Head], n: int, caps: dict[str, int]) -> list[Head]:
    """The first ``n`` heads in lease order, no capped kind taken past its cap (a kind's
    heads from several queues together must fit in it)."""
    taken: Counter[str] = Counter()
    chosen: list[Head] = []
    for head in sorted(found, key=lambda h: (-h.priority, h.run_after, h.id)):
        if len(chosen) == n:
            break
        kind = head.kind
        if kind in caps and taken[kind] >= caps[kind]:
            continue
        taken[kind] += 1
        chosen.append(head)
    return chosen


def _loose_scan(conn: sqlite3.Connection, column: str, index: str, limit: int = -1) -> list[str]:
    """The distinct values of ``column`` among queued jobs, one index probe each."""
    rows = conn.execute(
        f"WITH RECURSIVE v(x) AS ("
        f" SELECT (SELECT {column} FROM jobs INDEXED BY {index} WHERE status = 'queued'"
        f" ORDER BY {column} LIMIT 1)"
        f" UNION ALL SELECT (SELECT {column} FROM jobs INDEXED BY {index}"
        f" WHERE status = 'queued' AND {column} > v.x ORDER BY {column} LIMIT 1)"
        " FROM v WHERE v.x IS NOT NULL"
        ") SELECT x FROM v WHERE x IS NOT NULL LIMIT ?",
        (limit,),
    )
    return [value for (value,) in rows]


def queued_kinds(conn: sqlite3.Connection, limit: int) -> list[str]:
    return _loose_scan(conn, "kind", "jobs_pick_kind", limit)


def queued_queues(conn: sqlite3.Connection) -> list[str]:
    return _loose_scan(conn, "queue", "jobs_pick_queue")


def queued_head(conn: sqlite3.Connection, queue: str | None, after: float | None) -> float | None:
    """The earliest run_after among queued jobs (of ``queue``; later than ``after``): the
    earliest of each priority level's (one seek per distinct priority: a loose index scan).
    """
    index, where, params = "jobs_pick", "status = 'queued'", []
    if queue is not None:
        index, where, params = "jobs_pick_queue", "status = 'queued' AND queue = ?", [queue]
    later = " AND run_after > ?" if after is not None else ""
    found = conn.execute(
        "WITH RECURSIVE p(priority) AS ("
        f" SELECT (SELECT max(priority) FROM jobs INDEXED BY {index} WHERE {where})"
        f" UNION ALL SELECT (SELECT max(priority) FROM jobs INDEXED BY {index}"
        f" WHERE {where} AND priority < p.priority)"
        " FROM p WHERE p.priority IS NOT NULL"
        f") SELECT min((SELECT run_after FROM jobs INDEXED BY {index}"
        f" WHERE {where} AND priority = p.priority{later}"
        " ORDER BY priority DESC, run_after LIMIT 1)) FROM p WHERE p.priority IS NOT NULL",
        [*params, *params, *params, *([after] if after is not None else [])],
    ).fetchone()[0]
    return float(found) if found is not None else None


def kinds_of(found: Iterable[Head]) -> dict[str, int]:
    return dict(Counter(head.kind for head in found))
