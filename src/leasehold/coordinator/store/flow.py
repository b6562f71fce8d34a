"""The lease policy of kinds under a rate limit or whose groups take turns (DESIGN.md §19),
once for every backend: which jobs such a lease takes, and what it writes down so that the
next one knows (units started, whose turn it is).

A rate limit counts units started in slots of a twentieth of its period. A start is
allowed when the units of every slot that may still hold a start within the last period,
plus its own, stay within the limit: so no window of the period's length, wherever it
starts, ever holds more than the limit (the slot counted whole errs on the safe side, at
most a twentieth of the capacity left unused). Started units are never given back: a start
is a start, whatever the job does next.

Groups take turns: each group of a kind has a turn (when it last started a job, or was
passed over); a lease serves the groups whose turn is oldest, one job from each in a round
before a second from any, so a group with a huge backlog takes one turn like a group with
one job. Jobs without a group key take turns together, as one group. Where other
coordinators lease at once, a group's row is locked by the lease serving it, and skipped
by the others (``SKIP LOCKED``): two leases never serve one group at once, so a group's
running jobs and started units, read under that lock, are exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from leasehold.coordinator.store.contract import Flow, RateLimit
from leasehold.coordinator.store.driver import Head, Tx
from leasehold.model import Job

SLOTS = 20
"""Slots a rate limit's period is counted in."""
UNGROUPED = ""
"""The group of the jobs without a group key: one group, taking turns like the others."""
GROUPS_SCANNED = 64
"""Groups a lease of one kind looks at, at most, beyond those it needs (turns skip groups
at their limit, or with nothing due)."""
LOOK_AHEAD = 16
"""Jobs past those a rate-limited lease needs, read in case heavier ones do not fit."""


def lease_order(head: Head) -> tuple[int, Any, int]:
    return (-head.priority, head.run_after, head.id)


# -- rate limits ---------------------------------------------------------------------------


def slot_seconds(rate: RateLimit) -> float:
    return rate.period_seconds / SLOTS


def slot_of(rate: RateLimit, stamp: float) -> int:
    """The slot a start at ``stamp`` (seconds since the epoch) counts in."""
    return math.floor(stamp / slot_seconds(rate))


def first_slot(rate: RateLimit, stamp: float) -> int:
    """The oldest slot that may hold a start within the period before ``stamp``."""
    return math.floor((stamp - rate.period_seconds) / slot_seconds(rate))


def slot_expires(rate: RateLimit, slot: int) -> float:
    """When a slot's starts stop counting: once all of it is more than a period ago."""
    return (slot + 1) * slot_seconds(rate) + rate.period_seconds


@dataclass(slots=True)
class Bucket:
    """One rate limit's units at the time of a lease: those started in its window, by
    slot, and those this lease takes."""

    rate: RateLimit
    now: float
    slots: dict[int, int]  # slot -> units started in it (within the window)
    taken: int = 0

    @property
    def left(self) -> int:
        return self.rate.limit - sum(self.slots.values()) - self.taken

    def take(self, weight: int) -> bool:
        if weight > self.left:
            return False
        self.taken += weight
        return True

    def refill_at(self, weight: int) -> float | None:
        """When ``weight`` more units fit, as the oldest slots leave the window (None: they
        never will, the weight being over the limit)."""
        if weight > self.rate.limit:
            return None
        left = self.left
        for slot in sorted(self.slots):
            if left >= weight:
                break
            left += self.slots[slot]
            if left >= weight:
                return slot_expires(self.rate, slot)
        return self.now if left >= weight else None


async def buckets(
    tx: Tx, kind: str, rate: RateLimit, groups: Sequence[str], now: float
) -> dict[str, Bucket]:
    """The buckets of these groups (the kind's own: ``UNGROUPED``) at ``now``."""
    started = await tx.rate_started(kind, groups, first_slot(rate, now))
    return {g: Bucket(rate, now, dict(started.get(g, ()))) for g in groups}


# -- the plan --------------------------------------------------------------------------------


@dataclass(slots=True)
class Plan:
    """What a lease of planned kinds takes, and what it writes down for the next ones."""

    heads: list[Head] = field(default_factory=list)
    # kind -> group -> (turn, active, blocked until) for the groups whose place changed.
    turns: dict[str, dict[str, tuple[int, bool, float]]] = field(default_factory=dict)
    buckets: dict[tuple[str, str], Bucket] = field(default_factory=dict)
    retry_at: float | None = None  # when a rate limit that held jobs back lets some go

    def hold(self, until: float | None) -> None:
        if until is not None and (self.retry_at is None or until < self.retry_at):
            self.retry_at = until


async def plan_kind(
    tx: Tx,
    plan: Plan,
    kind: str,
    flow: Flow,
    want: int,
    queues: Sequence[str] | None,
    *,
    settle: bool,
) -> list[Head]:
    """Up to ``want`` due jobs of one planned kind, in the order its turns and its rate
    limit allow. ``settle``: the lease sees every queue of the kind (it names none, and
    none is paused), so a group found with nothing due may be put to sleep until it has."""
    now = (await tx.clock()).timestamp()  # after the locks this lease waited for
    if not flow.turns:
        assert flow.rate is not None  # planned: a rate limit, or turns
        heads = await tx.lease_heads([kind], [want + LOOK_AHEAD], queues, want + LOOK_AHEAD)
        bucket = (await buckets(tx, kind, flow.rate, [UNGROUPED], now))[UNGROUPED]
        plan.buckets[kind, UNGROUPED] = bucket
        taken: list[Head] = []
        for head in heads:
            if len(taken) == want:
                break
            if bucket.take(head.weight):
                taken.append(head)
        if len(taken) < min(want, len(heads)):
            plan.hold(bucket.refill_at(min(h.weight for h in heads)))
        return taken
    return await _turns(tx, plan, kind, flow, want, queues, now, settle)


async def _turns(
    tx: Tx,
    plan: Plan,
    kind: str,
    flow: Flow,
    want: int,
    queues: Sequence[str] | None,
    now: float,
    settle: bool,
) -> list[Head]:
    """Groups in turn, oldest turn first: each gives its due jobs (within its room under
    its limit and its rate); then a round takes one job from each, until ``want``."""
    groups = await tx.groups_next(kind, datetime.fromtimestamp(now, UTC), want + GROUPS_SCANNED)
    names = [g for g, _ in groups]
    running = await tx.groups_running(kind, names) if flow.max_running_per_group else {}
    rate = flow.rate
    per_group = await buckets(tx, kind, rate, names, now) if rate and rate.per_group else {}
    shared = None
    if rate is not None and not rate.per_group:
        shared = (await buckets(tx, kind, rate, [UNGROUPED], now))[UNGROUPED]
        plan.buckets[kind, UNGROUPED] = shared
    turns = plan.turns.setdefault(kind, {})
    served: list[tuple[str, list[Head]]] = []
    for group, _ in groups:
        if len(served) >= want:
            break
        room = want
        if flow.max_running_per_group is not None:
            room = min(room, flow.max_running_per_group - running.get(group, 0))
            if room <= 0:
                turns[group] = (_turn(now, len(turns)), True, 0.0)  # its turn passes
                continue
        heads = await tx.group_heads(kind, group or None, queues, room)
        if not heads:
            if settle:
                turns[group] = await _asleep(tx, kind, group, now)
            continue
        bucket = per_group.get(group)
        if bucket is not None:
            plan.buckets[kind, group] = bucket
            fitting = [h for h in heads if bucket.take(h.weight)]
            if not fitting:
                until = bucket.refill_at(min(h.weight for h in heads))
                turns[group] = (_turn(now, len(turns)), True, until or now + rate_wait(rate))
                plan.hold(until)
                continue
            heads = fitting
        served.append((group, heads))
    return _rounds(served, want, shared, plan)


def rate_wait(rate: RateLimit | None) -> float:
    """How long a group whose weight is over its rate limit sleeps before it is looked at
    again (the limit may be raised meanwhile)."""
    return rate.period_seconds if rate is not None else 1.0


def _rounds(
    served: Sequence[tuple[str, list[Head]]], want: int, shared: Bucket | None, plan: Plan
) -> list[Head]:
    """One job from each group in turn order, then a second from each, ...: up to
    ``want``, each within the kind's own rate limit, if it has one."""
    taken: list[Head] = []
    depth = max((len(heads) for _, heads in served), default=0)
    held: list[int] = []
    for n in range(depth):
        for _, heads in served:
            if len(taken) == want:
                return taken
            if n < len(heads):
                head = heads[n]
                if shared is None or shared.take(head.weight):
                    taken.append(head)
                else:
                    held.append(head.weight)
    if shared is not None and held:
        plan.hold(shared.refill_at(min(held)))
    return taken


async def _asleep(tx: Tx, kind: str, group: str, now: float) -> tuple[int, bool, float]:
    """A group with nothing due: asleep until its next job is due, or idle (not looked at
    until a job of it is queued again) when it has none queued."""
    due = await tx.group_next_due(kind, group or None)
    if due is None:
        return (_turn(now, 0), group == UNGROUPED, 0.0)  # jobs without a group stay looked at
    return (_turn(now, 0), True, due.timestamp())


def _turn(now: float, n: int) -> int:
    """A turn later than every turn given before (microseconds, then the order in the
    lease): the group goes to the back of the line."""
    return int(now * 1_000_000) + n


async def record(tx: Tx, plan: Plan, taken: Sequence[Head], jobs: Sequence[Job]) -> None:
    """Write down what the lease took: the units each job started, in the slot of the time
    its lease was granted (so no later window misses it), and the groups' new turns."""
    now = (await tx.now()).timestamp()
    started = {job.id: job.leased_at for job in jobs}
    units: dict[tuple[str, str, int], int] = {}
    for head in taken:
        leased_at = started.get(head.id)
        if leased_at is None:
            continue  # no longer queued: not leased
        # Its group's bucket under a limit per group, else its kind's (if it has one).
        owner = (head.kind, head.group_key or UNGROUPED)
        if owner not in plan.buckets:
            owner = (head.kind, UNGROUPED)
        if owner in plan.buckets:
            slot = slot_of(plan.buckets[owner].rate, leased_at.timestamp())
            units[(*owner, slot)] = units.get((*owner, slot), 0) + head.weight
    rows = []
    for (kind, group, slot), n in units.items():
        rate = plan.buckets[kind, group].rate
        rows.append((kind, group, slot, n, slot_expires(rate, slot)))
    if rows:
        await tx.rate_start(rows)
    for head in taken:  # a group that started a job goes to the back of the line
        if head.kind in plan.turns:
            turns = plan.turns[head.kind]
            turns[head.group_key or UNGROUPED] = (_turn(now, len(turns)), True, 0.0)
    for kind, turns in plan.turns.items():
        if turns:
            await tx.groups_turned(kind, [(g, *t) for g, t in turns.items()])


def when(stamp: float | None) -> datetime | None:
    """A stamp (seconds since the epoch) as an aware datetime."""
    return datetime.fromtimestamp(stamp, UTC) if stamp is not None else None
