"""The vectors of flow control (PROTOCOL.md §4 "Limits, groups and rates", capability
``flow_control``): rates counted per window, groups taking turns, a limit per group, and
capacity given back by every call that ends a lease, seen through leases alone."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from leasehold.conformance.context import Ctx, Vector, check

RATE_PERIOD = 0.3  # seconds: three windows of it are enough to see the rate hold and refill


def _most_in_a_window(starts: list[str], seconds: float) -> int:
    """The most starts (``leased_at``, the coordinator's clock) in any window of
    ``seconds``: each window that could hold the most starts at one of them."""
    times = sorted(datetime.fromisoformat(s) for s in starts)
    width = timedelta(seconds=seconds)
    return max((sum(t <= u < t + width for u in times) for t in times), default=0)


async def rate_limits(ctx: Ctx) -> None:
    """A rate holds in every window of its period, across lessees, and refills as the
    window moves; a job takes its weight in units (an enqueue heavier than the limit is
    422); a rate per group is each group's own."""
    await ctx.require("flow_control")
    kind = ctx.kind("rate")
    await ctx.put_limit(kind, {"rate": {"limit": 2, "period_seconds": RATE_PERIOD}})
    for n in range(6):
        await ctx.enqueue(kind, payload=n)
    first = await ctx.leases(kind, 6)
    check(len(first) == 2, f"the first lease started {len(first)} jobs under a rate of 2")
    starts = [lease["job"]["leased_at"] for lease in first]
    lessees = [f"{ctx.worker_id}-2", ctx.worker_id]  # the rate is every lessee's together

    async def all_started() -> bool:
        # A long poll: answered when the bucket has room again.
        lessees.reverse()
        got = await ctx.leases(kind, 6, wait_seconds=RATE_PERIOD * 2, worker_id=lessees[0])
        starts.extend(lease["job"]["leased_at"] for lease in got)
        return len(starts) >= 6

    await ctx.until("the other jobs started as the window moved", all_started, 10 * RATE_PERIOD)
    most = _most_in_a_window(starts, RATE_PERIOD)
    check(most <= 2, f"{most} starts within {RATE_PERIOD} s under a rate of 2: {sorted(starts)}")
    heavy = ctx.kind("rate.weight")
    await ctx.put_limit(heavy, {"rate": {"limit": 3, "period_seconds": 3600}})
    for weight in (2, 2, 1):
        await ctx.enqueue(heavy, weight=weight)
    weights = sorted(lease["job"]["weight"] for lease in await ctx.leases(heavy, 3))
    check(weights == [1, 2], f"a rate of 3 units started weights {weights}, expected 1 and 2")
    too = await ctx.wire.post("/jobs", {"kind": heavy, "weight": 4})
    too.expect(422, what="an enqueue heavier than its kind's rate limit (it could never start)")
    grouped = ctx.kind("rate.group")
    await ctx.put_limit(grouped, {"rate": {"limit": 1, "period_seconds": 3600, "per_group": True}})
    for group in ("a", "a", "b", "b"):
        await ctx.enqueue(grouped, group_key=group)
    groups = sorted(lease["job"]["group_key"] for lease in await ctx.leases(grouped, 4))
    check(groups == ["a", "b"], f"a rate of 1 per group started groups {groups}")
    check(await ctx.leases(grouped, 4) == [], "a group started past its own rate")


async def turns(ctx: Ctx) -> None:
    """Groups take turns: one job from each group with jobs before a second from any, lease
    by lease and within one lease, so a backlog starves no one; jobs without a group key
    take their turn as one group."""
    await ctx.require("flow_control")
    everyone = ["a", "b", "big", "~"]  # "~": the jobs without a group key
    for name, per_lease in (("turns", 1), ("turns.batch", 4)):
        kind = ctx.kind(name)
        await ctx.put_limit(kind, {"fair": True})
        for n in range(6):
            await ctx.enqueue(kind, group_key="big", payload=n)
        for group in ("a", "b"):
            await ctx.enqueue(kind, group_key=group)
        await ctx.enqueue(kind)
        seen: list[str] = []
        while len(seen) < 4:
            got = await ctx.leases(kind, per_lease)
            check(len(got) == per_lease, f"a lease of {per_lease} took {len(got)}")
            seen += [lease["job"]["group_key"] or "~" for lease in got]
        check(sorted(seen) == everyone, f"{per_lease} job(s) a lease: groups {seen} started"
              f" first, expected one of each of {everyone}")  # fmt: skip


async def group_limit(ctx: Ctx) -> None:
    """A limit per group caps each group's running jobs, and a group's room comes back
    when one of its jobs ends."""
    await ctx.require("flow_control")
    kind = ctx.kind("per-group")
    await ctx.put_limit(kind, {"max_running_per_group": 1})
    for group in ("a", "a", "b", "b"):
        await ctx.enqueue(kind, group_key=group)
    held = {lease["job"]["group_key"]: lease for lease in await ctx.leases(kind, 4)}
    check(sorted(held) == ["a", "b"], f"a limit of 1 per group started groups {sorted(held)}")
    check(await ctx.leases(kind, 4) == [], "a group started past its limit")
    limits = (await ctx.wire.get("/limits")).expect(200, what="GET /limits").body["limits"]
    running = [x["running"] for x in limits if x["kind"] == kind]
    check(running == [2], f"GET /limits counts {running} running, expected 2")
    await ctx.complete(held["a"])
    again = [lease["job"]["group_key"] for lease in await ctx.leases(kind, 4)]
    check(again == ["a"], f"after one of group a ended, a lease started groups {again}")


class _Room:
    """A kind with room for one running job (by its own limit or its group's), and the
    lease that holds the room."""

    def __init__(self, ctx: Ctx, name: str, limit: dict[str, Any], group: str | None) -> None:
        self.ctx, self.kind, self.limit, self.group = ctx, ctx.kind(name), limit, group
        self.held: dict[str, Any] = {}

    async def fill(self, jobs: int) -> None:
        await self.ctx.put_limit(self.kind, self.limit)
        extra = {"group_key": self.group} if self.group else {}
        for n in range(jobs):
            await self.ctx.enqueue(self.kind, payload=n, max_attempts=5, **extra)

    async def take(self, after: str, **fields: Any) -> None:
        got = await self.ctx.leases(self.kind, 3, **fields)
        check(len(got) == 1, f"{self.kind}, {after}: a lease started {len(got)} of room for 1")
        self.held = got[0]

    async def taken_again(self) -> bool:
        got = await self.ctx.leases(self.kind, 3)
        check(len(got) <= 1, f"{self.kind}: a lease started {len(got)} of room for 1")
        self.held = got[0] if got else self.held
        return bool(got)

    async def full(self, after: str) -> None:
        got = await self.ctx.leases(self.kind, 3)
        check(got == [], f"{self.kind}, {after}: a lease started a job with the room taken")

    async def report(self, verb: str, token: int | None = None, **body: Any) -> str:
        job_id = self.held["job"]["id"]
        sent = {"token": self.held["token"] if token is None else token, **body}
        answer = await self.ctx.report(job_id, verb, sent)
        return str(answer.expect(200, what=f"{verb} job {job_id}").body["status"])


_ENDS: list[tuple[str, str, dict[str, Any], str]] = [
    # (path, report, its body, the status it leaves)
    ("complete", "complete", {}, "completed"),
    ("fail, retried", "fail", {"error": "again"}, "queued"),
    ("fail for good", "fail", {"error": "gone", "retryable": False}, "dead"),
    ("release", "release", {}, "queued"),
    ("cancel", "release", {}, "cancelled"),  # the holder's report after the cancel
]


async def capacity_given_back(ctx: Ctx) -> None:
    """Every call that ends a lease gives its room back, once, for a kind's limit and a
    group's: complete, fail (retried and for good), release, a cancel's report and the
    lease's expiry; a repeated report, a stale one and a late one give back nothing."""
    await ctx.require("flow_control")
    rooms = [
        _Room(ctx, "room.kind", {"max_running": 1}, None),
        _Room(ctx, "room.group", {"max_running_per_group": 1}, "g"),
    ]
    for room in rooms:
        await room.fill(10)
        await room.take("at first")
    for path, verb, body, status in _ENDS:
        for room in rooms:
            await room.full(f"before {path}")
            if path == "cancel":
                job_id = room.held["job"]["id"]
                (await ctx.wire.post(f"/jobs/{job_id}/cancel")).expect(200, what="cancel")
                await room.full("after a cancel, before its holder reports")
            got = await room.report(verb, **body)
            check(got == status, f"{path}: the job is {got}, expected {status}")
            await room.report(verb, **body)  # a repeat, answered as the first
            stale = await ctx.report(room.held["job"]["id"], verb, {"token": 0, **body})
            stale.expect(409, "stale_token", f"{verb} under token 0")
            await room.take(f"after {path}")
    await _expiry(ctx, rooms)


async def _expiry(ctx: Ctx, rooms: list[_Room]) -> None:
    """The reaper's expiry gives the room back; a report under the expired lease's token
    afterwards (accepted or refused) gives back nothing more."""
    seconds = await ctx.short_lease()
    for room in rooms:
        await room.report("complete")
        await room.take("after complete", lease_seconds=seconds)
    for room in rooms:
        expired = room.held
        await ctx.until(f"{room.kind}: room back after the lease ran out", room.taken_again)
        late = await ctx.report(expired["job"]["id"], "complete", {"token": expired["token"]})
        check(late.status in (200, 409), f"a late complete got {late.status}")
        await room.full("after the expiry and a late report")
        await room.report("complete")
    limits = (await ctx.wire.get("/limits")).expect(200, what="GET /limits").body["limits"]
    running = {x["kind"]: x["running"] for x in limits if x["kind"] in {r.kind for r in rooms}}
    check(set(running.values()) == {0}, f"GET /limits counts running {running}, expected 0")


FLOW_VECTORS: list[tuple[str, Vector]] = [
    ("rate limits", rate_limits),
    ("groups take turns", turns),
    ("limit per group", group_limit),
    ("capacity given back", capacity_given_back),
]
