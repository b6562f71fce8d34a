"""The vectors of 1.2's enqueue options and of explain (PROTOCOL.md §4 "Unique jobs",
"Start deadlines", "Explain", idempotency keys per kind)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from leasehold.conformance.context import Ctx, Vector, check

FAR = "2099-01-01T00:00:00+00:00"
LATER = "2099-01-02T00:00:00+00:00"
REASON_FIELDS = {"code", "message", "until", "detail"}


def _at(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


async def unique_jobs(ctx: Ctx) -> None:
    """A duplicate answers the job already there (200, ``Leasehold-Duplicate``), in a batch
    too; a field the payload lacks is 422; without a period a finished job is no duplicate,
    with one it is; a debounce replaces the waiting job's payload and run_after."""
    await ctx.require("unique_jobs")
    kind, once = ctx.kind("unique"), {"fields": ["user"]}

    async def send(payload: Any) -> Any:
        return await ctx.wire.post("/jobs", {"kind": kind, "payload": payload, "unique": once})

    first = (await send({"user": 1})).expect(201, what="a first unique job")
    check("leasehold-duplicate" not in first.headers, "a new job said it was a duplicate")
    again = (await send({"user": 1, "extra": 2})).expect(200, what="a duplicate")
    check(again.body["id"] == first.body["id"], "a duplicate made another job")
    check(again.body["payload"] == {"user": 1}, "a duplicate changed the job")
    header = again.headers.get("leasehold-duplicate")
    check(header == "true", f"a duplicate's Leasehold-Duplicate is {header!r}, expected 'true'")
    (await send({"user": 2})).expect(201, what="another user's job")
    lacking = (await send({"name": 1})).expect(422, what="unique.fields the payload lacks")
    check("user" in str(lacking.body.get("message")), "the 422 does not name the field")
    items = [{"kind": kind, "payload": {"user": u}, "unique": once} for u in (1, 3)]
    batch = (await ctx.wire.post("/jobs/batch", {"jobs": items})).expect(200, what="a batch")
    got = [(i["created"], i["duplicate"], i["replaced"]) for i in batch.body["jobs"]]
    check(got == [(False, True, False), (True, False, False)], f"batch items {got}")
    for lease in await ctx.leases(kind, 10):
        await ctx.complete(lease)
    (await send({"user": 1})).expect(201, what="the same fields once the first has finished")
    hourly = ctx.kind("unique.period")
    within = {"key": "report", "period_seconds": 3600}
    made = await ctx.enqueue(hourly, unique=within)
    await ctx.complete((await ctx.leases(hourly, 1))[0])
    repeat = await ctx.wire.post("/jobs", {"kind": hourly, "unique": within})
    body = repeat.expect(200, what="a key within its period, the first job completed").body
    check((body["id"], body["status"]) == (made["id"], "completed"), "a period's duplicate")
    await _debounce(ctx)


async def _debounce(ctx: Ctx) -> None:
    kind, latest = ctx.kind("unique.debounce"), {"key": "reindex", "replace": True}
    made = await ctx.enqueue(kind, payload=1, run_after=FAR, unique=latest)
    newer = {"kind": kind, "payload": 2, "run_after": LATER, "unique": latest}
    answer = (await ctx.wire.post("/jobs", newer)).expect(200, what="a debounced duplicate")
    header = answer.headers.get("leasehold-duplicate")
    check(header == "replaced", f"a replacing duplicate's Leasehold-Duplicate is {header!r}")
    job = await ctx.job(made["id"])
    got = (job["payload"], _at(job["run_after"]))
    check(got == (2, _at(LATER)), f"the debounced job has payload, run_after {got}")


async def start_deadlines(ctx: Ctx) -> None:
    """A job not started by its ``start_by`` is never leased after it and ends cancelled
    without running, with the reason, and its dependents with it; one whose deadline is
    ahead is leased as usual."""
    await ctx.require("flow_control")
    kind, after = ctx.kind("deadline"), ctx.kind("deadline.after")
    late = await ctx.enqueue(kind, start_by="2000-01-01T00:00:00Z")
    below = await ctx.enqueue(after, depends_on=[late["id"]])
    (await ctx.lease(kind)).expect(204, what="a lease of a job past its start deadline")
    ended = await ctx.until_status(late["id"], "cancelled", "a job past its start deadline")
    error = ended["last_error"] or ""
    check("start deadline" in error, f"last_error {error!r} does not name the start deadline")
    check(ended["attempts"] == 0 and ended["leased_at"] is None, "the late job was started")
    follower = await ctx.job(below["id"])
    got = (follower["status"], follower["blocked_by"])
    check(got == ("cancelled", late["id"]), f"its dependent: {got}, expected cancelled by it")
    ahead = await ctx.enqueue(kind, start_by=FAR)
    job_id, token, _ = await ctx.lease_one(kind)
    check(job_id == ahead["id"], "the job whose deadline is ahead was not leased")
    (await ctx.report(job_id, "complete", {"token": token})).expect(200, what="complete")


async def idempotency_per_kind(ctx: Ctx) -> None:
    """One idempotency key sent for two kinds makes two jobs; within a kind it keeps its
    meaning: a retry answers its job, another request under it is 422."""
    await ctx.require("idempotency_per_kind")
    key = f"{ctx.prefix}-welcome"
    made = {}
    for name in ("key.mail", "key.sms"):
        kind = ctx.kind(name)
        made[kind] = (await ctx.enqueue(kind, payload=1, idempotency_key=key))["id"]
    check(len(set(made.values())) == 2, "one key for two kinds answered one job")
    for kind, job_id in made.items():
        retry = {"kind": kind, "payload": 1}
        again = await ctx.wire.post("/jobs", retry, headers={"Idempotency-Key": key})
        check(again.expect(200, what="a retry").body["id"] == job_id, "a retry made a job")
        other = {"kind": kind, "payload": 2, "idempotency_key": key}
        (await ctx.wire.post("/jobs", other)).expect(422, "idempotency_conflict", "key reused")


async def _why(ctx: Ctx, job_id: int) -> dict[str, Any]:
    """``GET /jobs/{id}/explain``, its shape checked."""
    body: dict[str, Any] = (
        (await ctx.wire.get(f"/jobs/{job_id}/explain")).expect(200, what="explain").body
    )
    check(body.get("job_id") == job_id, f"explain of job {job_id} answered {body.get('job_id')}")
    check(isinstance(body.get("runnable"), bool), "explain's runnable is not a boolean")
    check(isinstance(body.get("status"), str), "explain's status is not a string")
    for reason in body.get("reasons") or []:
        check(set(reason) >= REASON_FIELDS, f"a reason lacks {sorted(REASON_FIELDS - set(reason))}")
        check(isinstance(reason["detail"], dict), "a reason's detail is not an object")
    check(isinstance(body.get("reasons"), list), "explain's reasons is not a list")
    return body


def _codes(body: dict[str, Any]) -> list[str]:
    return [r["code"] for r in body["reasons"]]


def _reason(body: dict[str, Any], code: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [r for r in body["reasons"] if r["code"] == code]
    check(bool(found), f"explain of job {body['job_id']}: codes {_codes(body)}, no {code!r}")
    return found[0]


async def explain(ctx: Ctx) -> None:
    """``GET /jobs/{id}/explain`` answers ``{job_id, status, runnable, reasons: [{code,
    message, until, detail}]}``: no live worker for its kind, waiting for parents, scheduled,
    its queue paused, its kind's and its group's limit full, rate limited (until when), too
    heavy, behind others, running, finished; runnable once only ``behind`` is left."""
    await ctx.require("workflows", "flow_control")
    kind = ctx.kind("why")
    first, second = await ctx.enqueue(kind), await ctx.enqueue(kind)
    unserved = [] if await _catch_all(ctx) else ["no_worker"]
    before = await _why(ctx, first["id"])
    check(_codes(before) == unserved, f"no live worker takes its kind: {before}")
    limited = await _limited(ctx)
    beat = {"worker_id": ctx.worker_id, "host": "conformance", "pid": 1, "version": "1.2",
            "kinds": [kind, *(ctx.kind(f"why.{code}") for code in limited)], "concurrency": 1,
            "started_at": datetime.now(UTC).isoformat()}  # fmt: skip
    (await ctx.wire.post("/workers/heartbeat", beat)).expect(200, what="a heartbeat")
    alone = await _why(ctx, first["id"])
    check((alone["runnable"], _codes(alone)) == (True, []), f"a due job: {alone}")
    behind = await _why(ctx, second["id"])
    check((behind["runnable"], _codes(behind)) == (True, ["behind"]), f"behind: {behind}")
    check(_reason(behind, "behind")["detail"].get("ahead") == 1, "behind's detail.ahead")
    waiting = await _why(ctx, (await ctx.enqueue(kind, depends_on=[first["id"]]))["id"])
    check(_codes(waiting) == ["waiting_for_parents"] and not waiting["runnable"], f"{waiting}")
    parents = _reason(waiting, "waiting_for_parents")["detail"].get("parents")
    check(parents == [first["id"]], f"waiting_for_parents' detail.parents {parents}")
    for code, job_id in limited.items():
        _reason(await _why(ctx, job_id), code)
    rated = _reason(await _why(ctx, limited["rate_limited"]), "rate_limited")
    check(rated["until"] is not None, "rate_limited does not say until when")
    await _scheduled_and_paused(ctx, kind)
    job_id, token, _ = await ctx.lease_one(kind)
    running = await _why(ctx, job_id)
    check(_codes(running) == ["running"] and running["status"] == "running", f"{running}")
    check(_reason(running, "running")["until"] is not None, "running does not say until when")
    (await ctx.report(job_id, "complete", {"token": token})).expect(200, what="complete")
    check(_codes(await _why(ctx, job_id)) == ["finished"], "a completed job is not finished")
    (await ctx.wire.get(f"/jobs/{2**62}/explain")).expect(404, "job_not_found", "explain of none")


async def _catch_all(ctx: Ctx) -> bool:
    """Whether a live worker (another client's) takes every kind from the default queue:
    then no job there is ``no_worker``."""
    body = (await ctx.wire.get("/workers?limit=1000")).expect(200, what="GET /workers").body
    return any(
        w["live"] and w["kinds"] is None and (w["queues"] is None or "default" in w["queues"])
        for w in body["workers"]
    )


async def _limited(ctx: Ctx) -> dict[str, int]:
    """A job held back by each limit, by the code explain gives it."""
    held: dict[str, int] = {}
    for code, limit, jobs in (
        ("kind_limit", {"max_running": 1}, [{}, {}]),
        ("group_limit", {"max_running_per_group": 1}, [{"group_key": "g"}] * 2),
        ("rate_limited", {"rate": {"limit": 2, "period_seconds": 3600}},
         [{"weight": 2}, {"weight": 1}]),
        ("too_heavy", {"rate": {"limit": 3, "period_seconds": 3600}}, [{}, {"weight": 3}]),
    ):  # fmt: skip
        kind = ctx.kind(f"why.{code}")
        await ctx.put_limit(kind, limit)
        made = [await ctx.enqueue(kind, **fields) for fields in jobs]
        check(len(await ctx.leases(kind, 2)) == 1, f"{code}: the first of two did not start")
        held[code] = made[1]["id"]
    # A job queued before its kind's rate was lowered below its weight can never start (an
    # enqueue that heavy is refused).
    await ctx.put_limit(ctx.kind("why.too_heavy"), {"rate": {"limit": 2, "period_seconds": 3600}})
    return held


async def _scheduled_and_paused(ctx: Ctx, kind: str) -> None:
    later = await ctx.enqueue(kind, run_after=FAR, queue=ctx.prefix)
    (await ctx.wire.post(f"/queues/{ctx.prefix}/pause")).expect(200, what="pause a queue")
    try:
        why = await _why(ctx, later["id"])
    finally:
        (await ctx.wire.post(f"/queues/{ctx.prefix}/resume")).expect(200, what="resume")
    until = _at(_reason(why, "scheduled")["until"])
    check(until == _at(FAR), f"scheduled until {until}, expected its run_after {FAR}")
    _reason(why, "queue_paused")
    check(not why["runnable"], "a job scheduled later in a paused queue is runnable")


JOB_VECTORS: list[tuple[str, Vector]] = [
    ("unique jobs", unique_jobs),
    ("start deadlines", start_deadlines),
    ("idempotency per kind", idempotency_per_kind),
    ("explain", explain),
]
