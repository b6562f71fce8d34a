"""The statements of flow control both engines run as written (DESIGN.md §19): kinds'
limits, groups' turns and counts, units started under rate limits. ``PortableTx``
inherits them; the lease policy that uses them is ``store/flow.py``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from leasehold.coordinator.store import sql
from leasehold.coordinator.store.contract import Flow, RateLimit

_LIMIT_COLUMNS = (
    "kind, max_running, max_running_per_group, rate_limit, rate_period, rate_per_group, fair"
)


def flow_of(row: Sequence[Any]) -> tuple[str, Flow]:
    """A ``kind_limits`` row as (kind, its limits)."""
    kind, running, per_group, rate, period, rate_per_group, fair = tuple(row)
    limit = RateLimit(rate, period, bool(rate_per_group)) if rate is not None else None
    return kind, Flow(running, per_group, limit, bool(fair))


class FlowStatements:
    """Mixed into ``PortableTx``: the statements below use its primitives."""

    dialect: sql.Dialect
    _row_lock: str
    _skip_locked: str

    async def _all(self, statement: str, *params: Any) -> list[Any]:
        raise NotImplementedError

    async def _changed(self, statement: str, *params: Any) -> int:
        raise NotImplementedError

    async def _many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def _index(self, name: str) -> str:
        raise NotImplementedError

    def _in(self, column: str, values: Sequence[Any]) -> sql.Where:
        where = sql.Where(self.dialect)
        where.add(self.dialect.any_of, self.dialect.as_list(list(values)), column)
        return where

    # -- limits -------------------------------------------------------------------------

    async def kind_flows(self, kinds: Sequence[str], *, lock: bool = False) -> dict[str, Flow]:
        if not kinds:
            return {}
        where = self._in("kind", kinds)
        rows = await self._all(
            f"SELECT {_LIMIT_COLUMNS} FROM kind_limits WHERE {where.sql()}"
            f" ORDER BY kind{self._row_lock if lock else ''}",
            *where.params,
        )
        return dict(flow_of(row) for row in rows)

    async def limits_all(self) -> list[tuple[str, Flow]]:
        rows = await self._all(f"SELECT {_LIMIT_COLUMNS} FROM kind_limits ORDER BY kind")
        return [flow_of(row) for row in rows]

    async def limit_upsert(self, kind: str, flow: Flow) -> None:
        rate = flow.rate
        period = rate.period_seconds if rate is not None else None
        before = await self._all("SELECT rate_period FROM kind_limits WHERE kind = ?", kind)
        await self._changed(
            f"INSERT INTO kind_limits ({_LIMIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (kind) DO UPDATE SET max_running = excluded.max_running,"
            " max_running_per_group = excluded.max_running_per_group,"
            " rate_limit = excluded.rate_limit, rate_period = excluded.rate_period,"
            " rate_per_group = excluded.rate_per_group, fair = excluded.fair",
            kind,
            flow.max_running,
            flow.max_running_per_group,
            rate.limit if rate is not None else None,
            period,
            rate is not None and rate.per_group,
            flow.fair,
        )
        if before and before[0][0] != period:  # slots of another length: count afresh
            await self._changed("DELETE FROM rate_starts WHERE kind = ?", kind)
        # Every group is looked at again: the new limits may let asleep ones start. The jobs
        # without a group take turns as one group, always looked at.
        await self._changed("UPDATE flow_groups SET blocked_until = 0 WHERE kind = ?", kind)
        await self._changed(
            "INSERT INTO flow_groups (kind, group_key) VALUES (?, '') ON CONFLICT DO NOTHING",
            kind,
        )

    # -- groups -------------------------------------------------------------------------

    async def groups_next(self, kind: str, now: datetime, limit: int) -> list[tuple[str, int]]:
        rows = await self._all(
            f"SELECT group_key, turn FROM flow_groups {self._index('flow_groups_turn')}"
            " WHERE kind = ? AND active AND blocked_until <= ?"
            f" ORDER BY turn LIMIT ?{self._skip_locked}",
            kind,
            now.timestamp(),
            limit,
        )
        return [(group, turn) for group, turn in rows]

    async def groups_ahead(self, kind: str, group_key: str, now: datetime) -> int:
        # The jobs without a group take turns as one group, always looked at: it is ahead
        # only while it has queued jobs.
        rows = await self._all(
            "SELECT count(*) FROM flow_groups AS other WHERE other.kind = ? AND other.active"
            " AND other.blocked_until <= ? AND other.turn < coalesce((SELECT turn FROM"
            " flow_groups WHERE kind = ? AND group_key = ?), 0) AND (other.group_key <> ''"
            " OR EXISTS (SELECT 1 FROM jobs WHERE jobs.kind = other.kind"
            " AND jobs.status = 'queued' AND jobs.group_key IS NULL))",
            kind,
            now.timestamp(),
            kind,
            group_key,
        )
        return int(rows[0][0])

    async def groups_running(self, kind: str, groups: Sequence[str]) -> dict[str, int]:
        if not groups:
            return {}
        where = self._in("group_key", groups)
        rows = await self._all(
            "SELECT group_key, CAST(sum(running) AS BIGINT) FROM group_counts"
            f" WHERE kind = ? AND {where.sql()} GROUP BY group_key",
            kind,
            *where.params,
        )
        return {group: int(n) for group, n in rows}

    async def groups_turned(self, kind: str, rows: Sequence[tuple[str, int, bool, float]]) -> None:
        await self._many(
            "INSERT INTO flow_groups (kind, group_key, turn, active, blocked_until)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, group_key) DO UPDATE"
            " SET turn = excluded.turn, active = excluded.active,"
            " blocked_until = excluded.blocked_until",
            [(kind, group, turn, active, until) for group, turn, active, until in rows],
        )

    # -- rate limits ----------------------------------------------------------------------

    async def rate_started(
        self, kind: str, groups: Sequence[str], since_slot: int
    ) -> dict[str, list[tuple[int, int]]]:
        where = self._in("group_key", groups)
        rows = await self._all(
            "SELECT group_key, slot, units FROM rate_starts"
            f" WHERE kind = ? AND {where.sql()} AND slot >= ? ORDER BY group_key, slot",
            kind,
            *where.params,
            since_slot,
        )
        found: dict[str, list[tuple[int, int]]] = {}
        for group, slot, units in rows:
            found.setdefault(group, []).append((slot, units))
        return found

    async def rate_start(self, rows: Sequence[tuple[str, str, int, int, float]]) -> None:
        await self._many(
            "INSERT INTO rate_starts (kind, group_key, slot, units, expires)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, group_key, slot)"
            " DO UPDATE SET units = rate_starts.units + excluded.units",
            rows,
        )

    async def groups_count(self) -> int:
        rows = await self._all("SELECT count(*) FROM flow_groups WHERE group_key <> ''")
        return int(rows[0][0])

    async def groups_known(self, groups: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        for kind in {k for k, _ in groups}:
            where = self._in("group_key", [g for k, g in groups if k == kind])
            rows = await self._all(
                f"SELECT group_key FROM flow_groups WHERE kind = ? AND {where.sql()}",
                kind,
                *where.params,
            )
            found |= {(kind, row[0]) for row in rows}
        return found

    async def flow_prune(self, now: datetime) -> int:
        gone = await self._changed("DELETE FROM rate_starts WHERE expires < ?", now.timestamp())
        # A group idle with nothing queued: its row goes (a job queued again makes it anew).
        gone += await self._changed(
            "DELETE FROM flow_groups WHERE NOT active AND group_key <> '' AND blocked_until < ?",
            now.timestamp() - 3600,
        )
        return gone
