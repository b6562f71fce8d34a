"""The vectors of workflows (PROTOCOL.md §4 "Dependencies and graphs" and "Children",
capability ``workflows``): jobs that wait for jobs, what a parent that cannot complete does
to them, graphs in one request, parents' results in the lease, children fenced by their
parent's lease, and a parent whose worker died mid-spawn."""

from __future__ import annotations

from typing import Any

from leasehold.conformance.context import Ctx, Vector, check

PARENT_FIELDS = {"id", "kind", "status", "result", "result_omitted", "spawn_key", "on_failure"}


def _parents(lease: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A lease's parents as (id, status, result, spawn_key), after checking their fields."""
    parents: list[dict[str, Any]] = lease.get("parents") or []
    for p in parents:
        missing = PARENT_FIELDS - set(p)
        check(not missing, f"a parent in the lease answer lacks {sorted(missing)}")
        check(p["result_omitted"] is False, f"parent {p['id']}'s small result was omitted")
    return [(p["id"], p["status"], p["result"], p["spawn_key"]) for p in parents]


async def _cancelled_by(ctx: Ctx, job_id: int, parent_id: int, why: str) -> None:
    job = await ctx.job(job_id)
    error = job["last_error"] or ""
    check(
        job["status"] == "cancelled" and job["blocked_by"] == parent_id,
        f"job {job_id} is {job['status']} (blocked_by {job['blocked_by']}) after its parent"
        f" {parent_id} ended {why}: expected cancelled, blocked_by {parent_id}",
    )
    check(
        str(parent_id) in error and why in error,
        f"job {job_id}'s last_error {error!r} does not name parent {parent_id} and {why!r}",
    )


async def dependencies(ctx: Ctx) -> None:
    """A dependent waits (it is never leased) until its last parent completes, is queued in
    that same commit, and its lease carries its parents' results, in id order."""
    await ctx.require("workflows")
    up, down = ctx.kind("dep.up"), ctx.kind("dep.down")
    first = await ctx.enqueue(up, payload=1)
    second = await ctx.enqueue(up, payload=2)
    # Named out of order: the lease lists parents by id.
    join = await ctx.enqueue(down, depends_on=[second["id"], {"id": first["id"]}])
    shape = (join["status"], join["waiting_for"], join["depth"])
    check(
        shape == ("waiting", 2, 1), f"(status, waiting_for, depth) {shape}, expected waiting, 2, 1"
    )
    listed = [j["id"] for j in await ctx.jobs(down, "waiting")]
    check(listed == [join["id"]], f"GET /jobs?status=waiting listed {listed}")
    (await ctx.lease(down)).expect(204, what="a lease of the kind of a waiting job")
    held = {lease["job"]["payload"]: lease for lease in await ctx.leases(up, 2)}
    check(sorted(held) == [1, 2], f"leased the parents {sorted(held)}")
    dependents = (await ctx.job(first["id"]))["dependents"]
    check(dependents == 1, f"a parent's dependents is {dependents}, expected 1")
    await ctx.complete(held[1], {"n": 1})
    half = await ctx.job(join["id"])
    shape = (half["status"], half["waiting_for"], half["depth"])
    check(shape == ("waiting", 1, 1), f"after one parent of two: {shape}, expected waiting, 1")
    await ctx.complete(held[2], {"n": 2})
    released = (await ctx.job(join["id"]))["status"]
    check(released == "queued", f"the answer to its last parent's complete left it {released}")
    _, _, lease = await ctx.lease_one(down)
    want = [(first["id"], "completed", {"n": 1}, None), (second["id"], "completed", {"n": 2}, None)]
    check(_parents(lease) == want, f"the lease's parents {_parents(lease)}, expected {want}")
    await ctx.complete(lease)
    above = (await ctx.wire.get(f"/jobs/{join['id']}/parents")).expect(200, what="parents")
    ids = [p["id"] for p in above.body["jobs"]]
    check(above.body["job_id"] == join["id"] and "next_cursor" in above.body, "parents' shape")
    check(ids == [first["id"], second["id"]], f"GET /jobs/{{id}}/parents listed {ids}")
    below = (await ctx.wire.get(f"/jobs/{first['id']}/dependents")).expect(200, what="dependents")
    ids = [d["id"] for d in below.body["jobs"]]
    check(ids == [join["id"]], f"GET /jobs/{{id}}/dependents listed {ids}")


async def failure_propagation(ctx: Ctx) -> None:
    """A dead, cancelled or deleted parent cancels its waiting dependents, transitively,
    naming itself; ``on_failure: run`` runs anyway; a dependent of a dead parent is cancelled
    as it is enqueued; requeueing the parent revives what its end cancelled."""
    await ctx.require("workflows")
    top_kind, mid_kind, low_kind = ctx.kind("fail.top"), ctx.kind("fail.mid"), ctx.kind("fail.low")
    top = await ctx.enqueue(top_kind, max_attempts=3)
    mid = await ctx.enqueue(mid_kind, depends_on=[top["id"]])
    low = await ctx.enqueue(low_kind, depends_on=[mid["id"]])
    anyway = ctx.kind("fail.cleanup")
    await ctx.enqueue(anyway, depends_on=[{"id": top["id"], "on_failure": "run"}])
    job_id, token, _ = await ctx.lease_one(top_kind)
    failed = await ctx.report(job_id, "fail", {"token": token, "error": "x", "retryable": False})
    failed.expect(200, what="fail, not retryable")
    await _cancelled_by(ctx, mid["id"], top["id"], "dead")
    await _cancelled_by(ctx, low["id"], mid["id"], "cancelled")
    _, _, lease = await ctx.lease_one(anyway)
    seen = [(p[0], p[1]) for p in _parents(lease)]
    check(seen == [(top["id"], "dead")], f"on_failure run: the lease's parents {seen}")
    await ctx.complete(lease)
    late = await ctx.enqueue(mid_kind, depends_on=[top["id"]])
    check(late["status"] == "cancelled", f"a dependent of a dead parent is {late['status']}")
    await _cancelled_by(ctx, late["id"], top["id"], "dead")
    (await ctx.wire.post(f"/jobs/{mid['id']}/requeue")).expect(
        409, "invalid_transition", "requeue of a dependent whose parent is dead"
    )
    (await ctx.wire.post(f"/jobs/{top['id']}/requeue")).expect(200, what="requeue the parent")
    for revived in (mid, low, late):
        job = await ctx.job(revived["id"])
        now = (job["status"], job["blocked_by"])
        check(now == ("waiting", None), f"after the parent's requeue, job {job['id']}: {now}")
    # The chain runs once its head completes; each completion queues the next.
    for kind in (top_kind, mid_kind, low_kind):
        for lease in await ctx.leases(kind, 2):
            await ctx.complete(lease)
    done = [(await ctx.job(j["id"]))["status"] for j in (top, mid, low, late)]
    check(done == ["completed"] * 4, f"after the requeue the chain ended {done}")
    await _cancelled_or_deleted(ctx, top_kind, low_kind)


async def _cancelled_or_deleted(ctx: Ctx, up: str, down: str) -> None:
    """A parent cancelled, or deleted, before it ran cancels its dependent the same way."""
    for end, why in (("cancel", "cancelled"), ("delete", "deleted")):
        parent = await ctx.enqueue(up)
        child = await ctx.enqueue(down, depends_on=[parent["id"]])
        if end == "cancel":
            (await ctx.wire.post(f"/jobs/{parent['id']}/cancel")).expect(200, what="cancel")
        else:
            gone = await ctx.wire.call("DELETE", f"/jobs/{parent['id']}")
            gone.expect(204, what="DELETE a queued parent")
        await _cancelled_by(ctx, child["id"], parent["id"], why)


async def graph_batches(ctx: Ctx) -> None:
    """A graph in one request: refs resolved, ids growing along every edge, the answer in
    the request's order; a cycle, an unknown or repeated ref, an id that is no job and a
    key conflict are 422 naming the item, and insert nothing."""
    await ctx.require("workflows")
    kind = ctx.kind("graph")
    diamond = [
        {"kind": kind, "payload": "join", "depends_on": [{"ref": "left"}, {"ref": "right"}]},
        {"ref": "left", "kind": kind, "payload": "left", "depends_on": [{"ref": "root"}]},
        {"ref": "right", "kind": kind, "payload": "right", "depends_on": [{"ref": "root"}]},
        {"ref": "root", "kind": kind, "payload": "root", "idempotency_key": f"{ctx.prefix}-g"},
    ]
    answer = await ctx.wire.post("/jobs/batch", {"jobs": diamond})
    items = answer.expect(200, what="a graph batch").body["jobs"]
    join, left, right, root = (i["job"] for i in items)
    got = [j["payload"] for j in (join, left, right, root)]
    check(got == ["join", "left", "right", "root"], f"answered in the order {got}")
    check(all(i["created"] for i in items), "a new graph's items not created")
    check(root["id"] < min(left["id"], right["id"]) and max(left["id"], right["id"]) < join["id"],
          "ids do not grow along the edges: parents are not inserted first")  # fmt: skip
    got = [j["status"] for j in (join, left, right, root)]
    check(got == ["waiting", "waiting", "waiting", "queued"], f"statuses {got}")
    check((join["waiting_for"], join["depth"]) == (2, 2), "the join's waiting_for, depth")
    before = len(await ctx.jobs(kind))
    bad: list[tuple[str, list[dict[str, Any]], set[int]]] = [
        ("a cycle", [{"ref": "a", "kind": kind, "depends_on": [{"ref": "c"}]},
                     {"ref": "b", "kind": kind, "depends_on": [{"ref": "a"}]},
                     {"ref": "c", "kind": kind, "depends_on": [{"ref": "b"}]}], {0, 1, 2}),
        ("an unknown ref", [{"ref": "a", "kind": kind},
                            {"kind": kind, "depends_on": [{"ref": "a"}]},
                            {"kind": kind, "depends_on": [{"ref": "nowhere"}]}], {2}),
        ("a repeated ref", [{"ref": "a", "kind": kind},
                            {"ref": "b", "kind": kind, "depends_on": [{"ref": "a"}]},
                            {"ref": "a", "kind": kind}], {0, 2}),
        ("an id that is no job", [{"ref": "a", "kind": kind},
                                  {"kind": kind, "depends_on": [{"ref": "a"}, 2**62]}], {1}),
    ]  # fmt: skip
    for what, jobs, named in bad:
        refused = await ctx.wire.post("/jobs/batch", {"jobs": jobs})
        refused.expect(422, "invalid_graph", f"a batch with {what}")
        loc = (refused.body.get("detail") or [{}])[0].get("loc") or []
        check(loc[:2] == ["body", "jobs"] and len(loc) > 2 and loc[2] in named,
              f"a batch with {what}: detail[0].loc {loc} names none of items {sorted(named)}")  # fmt: skip
    conflict = [
        {"ref": "n", "kind": kind},
        {"kind": kind, "idempotency_key": f"{ctx.prefix}-g", "depends_on": [{"ref": "n"}]},
    ]
    (await ctx.wire.post("/jobs/batch", {"jobs": conflict})).expect(
        422, "idempotency_conflict", "a graph reusing a key for another request"
    )
    after = len(await ctx.jobs(kind))
    check(after == before, f"refused graphs inserted {after - before} job(s)")
    retried = (await ctx.wire.post("/jobs/batch", {"jobs": diamond[3:]})).expect(200, what="retry")
    item = retried.body["jobs"][0]
    check(item["job"]["id"] == root["id"] and not item["created"], "a keyed item retried")


async def _spawn(
    ctx: Ctx, job_id: int, token: int, items: list[dict[str, Any]], what: str
) -> list[dict[str, Any]]:
    answer = await ctx.report(job_id, "children", {"token": token, "jobs": items})
    found: list[dict[str, Any]] = answer.expect(200, what=what).body["jobs"]
    check(len(found) == len(items), f"{what}: {len(found)} answers to {len(items)} items")
    return found


async def children(ctx: Ctx) -> None:
    """A running job spawns keyed children under its token: a key spawned again answers the
    same child, a stale token, a reported lease and a cancelled job spawn nothing (409), and
    a continuation runs once the children complete, with their results, after the parent
    has ended."""
    await ctx.require("workflows")
    kind, child, after = ctx.kind("spawn"), ctx.kind("spawn.child"), ctx.kind("spawn.join")
    await ctx.enqueue(kind)
    job_id, token, _ = await ctx.lease_one(kind)
    items: list[dict[str, Any]] = [
        {"key": "a", "kind": child, "payload": "a"},
        {"key": "b", "kind": child, "payload": "b"},
        {"key": "join", "kind": after, "depends_on": [{"ref": "a"}, {"ref": "b"}]},
    ]
    first = await _spawn(ctx, job_id, token, items, "spawn")
    a, b, join = (i["job"] for i in first)
    check([i["created"] for i in first] == [True] * 3, "new children not created")
    got = [(j["spawned_by"], j["spawn_key"]) for j in (a, b, join)]
    check(got == [(job_id, "a"), (job_id, "b"), (job_id, "join")], f"spawned_by, key: {got}")
    check((join["status"], join["waiting_for"]) == ("waiting", 2), "the continuation waits")
    # The key decides, whatever else the item says.
    again = await _spawn(ctx, job_id, token, [{**items[0], "payload": "z"}, *items[1:]], "again")
    got = [(i["job"]["id"], i["created"]) for i in again]
    check(got == [(a["id"], False), (b["id"], False), (join["id"], False)], f"again: {got}")
    check(again[0]["job"]["payload"] == "a", "a spawn again changed the child")
    for stale in (0, token + 5):
        extra = {"token": stale, "jobs": [{"key": "c", "kind": child}]}
        (await ctx.report(job_id, "children", extra)).expect(
            409, "stale_token", f"spawn under token {stale} (current {token})"
        )
    (await ctx.report(job_id, "complete", {"token": token})).expect(200, what="complete")
    (await ctx.report(job_id, "children", {"token": token, "jobs": items[:1]})).expect(
        409, "not_running", "spawn after the lease reported"
    )
    made = sorted(j["spawn_key"] for j in await ctx.jobs(child))
    check(made == ["a", "b"], f"the children made: keys {made}, expected a, b once each")
    for lease in await ctx.leases(child, 2):
        await ctx.complete(lease, {"from": lease["job"]["payload"]})
    _, _, lease = await ctx.lease_one(after)
    want = [(a["id"], "completed", {"from": "a"}, "a"), (b["id"], "completed", {"from": "b"}, "b")]
    check(_parents(lease) == want, f"the continuation's parents {_parents(lease)}, want {want}")
    await ctx.complete(lease)
    await _cancelled_spawns_nothing(ctx, kind, items[:1])


async def _cancelled_spawns_nothing(ctx: Ctx, kind: str, items: list[dict[str, Any]]) -> None:
    await ctx.enqueue(kind)
    victim, token, _ = await ctx.lease_one(kind)
    (await ctx.wire.post(f"/jobs/{victim}/cancel")).expect(200, what="cancel")
    (await ctx.report(victim, "children", {"token": token, "jobs": items})).expect(
        409, "job_cancelled", "spawn by a cancelled job"
    )
    (await ctx.report(victim, "release", {"token": token})).expect(200, what="release")


async def killed_mid_spawn(ctx: Ctx) -> None:
    """A parent whose worker died after spawning part of its children (no renewal, no
    report: its lease runs out) is leased again and spawns every key again: it gets the
    children made before, makes the rest, none twice; the dead lease's token spawns nothing."""
    await ctx.require("workflows")
    kind, child, after = ctx.kind("crash"), ctx.kind("crash.child"), ctx.kind("crash.join")
    await ctx.enqueue(kind, max_attempts=3)
    seconds = await ctx.short_lease()
    job_id, old, _ = await ctx.lease_one(kind, lease_seconds=seconds)
    keys = ["c0", "c1", "c2"]
    items: list[dict[str, Any]] = [{"key": k, "kind": child, "payload": k} for k in keys]
    items.append({"key": "join", "kind": after, "depends_on": [{"ref": k} for k in keys]})
    before = await _spawn(ctx, job_id, old, items[:2], "the first two children")
    relet: list[dict[str, Any]] = []

    async def leased_again() -> bool:
        relet[:] = await ctx.leases(kind, 1)
        return bool(relet)

    await ctx.until("the parent leased again once its lease ran out", leased_again)
    new = int(relet[0]["token"])
    check(relet[0]["job"]["id"] == job_id and new > old, "the parent's new lease and token")
    (await ctx.report(job_id, "children", {"token": old, "jobs": items[2:3]})).expect(
        409, "stale_token", "spawn under the dead worker's token"
    )
    rest = await _spawn(ctx, job_id, new, items, "every key again, under the new token")
    got = [(i["job"]["id"], i["created"]) for i in rest[:2]]
    want = [(i["job"]["id"], False) for i in before]
    check(got == want, f"the keys spawned before answered {got}, expected {want}")
    check([i["created"] for i in rest[2:]] == [True, True], "the rest not created")
    made = sorted(j["spawn_key"] for j in await ctx.jobs(child))
    check(made == keys, f"children by key {made}: expected {keys}, each once")
    await ctx.complete(relet[0], "parent")
    for lease in await ctx.leases(child, 3):
        await ctx.complete(lease, lease["job"]["payload"])
    continuations = await ctx.jobs(after)
    check(len(continuations) == 1, f"{len(continuations)} continuations, expected 1")
    _, _, lease = await ctx.lease_one(after)
    got_results = [p[2] for p in _parents(lease)]
    check(got_results == keys, f"the continuation's parents' results {got_results}")
    await ctx.complete(lease)


WORKFLOW_VECTORS: list[tuple[str, Vector]] = [
    ("dependencies", dependencies),
    ("failure propagation", failure_propagation),
    ("graph batches", graph_batches),
    ("children", children),
    ("killed mid-spawn", killed_mid_spawn),
]
