"""The test vectors: each a short exchange with the coordinator and what PROTOCOL.md says
it must answer. Each vector uses kinds of its own, so it can run against a coordinator that
is serving other work (it never leases anything but its own jobs).
"""

from __future__ import annotations

from typing import Any

from leasehold.conformance.context import Ctx, Vector, check
from leasehold.conformance.flow_vectors import FLOW_VECTORS
from leasehold.conformance.job_vectors import JOB_VECTORS
from leasehold.conformance.workflow_vectors import WORKFLOW_VECTORS


async def discovery(ctx: Ctx) -> None:
    """GET /protocol names the version and capabilities; every answer carries the header."""
    answer = (await ctx.wire.get("/protocol")).expect(200, what="GET /protocol")
    check(answer.body.get("protocol") == "1.2", f"protocol version {answer.body.get('protocol')}")
    needed = {"batches", "cancel", "lease_request_id", "item_verdicts"}
    missing = needed - set(answer.body.get("capabilities", []))
    check(not missing, f"capabilities missing {sorted(missing)}")
    health = await ctx.wire.get("/health")
    check(health.headers.get("leasehold-protocol") == "1.2", "no Leasehold-Protocol header")


async def lease_and_complete(ctx: Ctx) -> None:
    """A lease names its token and granted length; complete is idempotent under it."""
    kind = ctx.kind("basic")
    job = await ctx.enqueue(kind, payload={"n": 1})
    check(job["status"] == "queued" and isinstance(job["id"], int), "enqueued job's fields")
    job_id, token, body = await ctx.lease_one(kind, lease_seconds=30)
    check(job_id == job["id"], "leased another job")
    check(body["job"]["lease_token"] == token and token >= 1, "token is not the job's")
    check(body.get("lease_seconds") == 30, f"lease_seconds {body.get('lease_seconds')} != 30")
    done = (await ctx.report(job_id, "complete", {"token": token, "result": 7})).expect(
        200, what="complete"
    )
    check(done.body["status"] == "completed" and done.body["result"] == 7, "completed job")
    again = (await ctx.report(job_id, "complete", {"token": token, "result": 8})).expect(
        200, what="repeated complete"
    )
    check(again.body["result"] == 7, "a repeated complete changed the result")
    (await ctx.lease(kind)).expect(204, what="lease with nothing due")


async def fencing(ctx: Ctx) -> None:
    """Only the newest token speaks for a job: older, zero and future tokens are refused."""
    kind = ctx.kind("fence")
    await ctx.enqueue(kind)
    job_id, old, _ = await ctx.lease_one(kind)
    (await ctx.report(job_id, "release", {"token": old})).expect(200, what="release")
    _, new, _ = await ctx.lease_one(kind)
    check(new > old, f"second lease token {new} is not above the first ({old})")
    for verb, body in (
        ("complete", {"token": old, "result": "stale"}),
        ("fail", {"token": old, "error": "stale"}),
        ("renew", {"token": old}),
        ("release", {"token": old}),
        ("complete", {"token": 0}),
        ("complete", {"token": new + 5}),
    ):
        answer = await ctx.report(job_id, verb, body)
        answer.expect(409, "stale_token", f"{verb} under token {body['token']} (current {new})")
    done = (await ctx.report(job_id, "complete", {"token": new})).expect(200, what="complete")
    check(done.body["result"] is None, "a stale write was kept")


async def state_table(ctx: Ctx) -> None:
    """The rows of the error table: each condition its status and code."""
    kind = ctx.kind("table")
    await ctx.enqueue(kind, max_attempts=2)
    job_id, token, _ = await ctx.lease_one(kind)
    failed = (await ctx.report(job_id, "fail", {"token": token, "error": "e"})).expect(
        200, what="fail with attempts left"
    )
    check(failed.body["status"] == "queued", "fail with attempts left is not queued")
    (await ctx.report(job_id, "fail", {"token": token, "error": "e"})).expect(
        200, what="repeated fail"
    )
    (await ctx.report(job_id, "complete", {"token": token})).expect(
        409, "report_conflict", "complete after fail under one token"
    )
    (await ctx.report(job_id, "renew", {"token": token})).expect(
        409, "not_running", "renew after a report"
    )
    await ctx.enqueue(ctx.kind("dead"))
    dead_id, dead_token, _ = await ctx.lease_one(ctx.kind("dead"))
    dead = await ctx.report(
        dead_id, "fail", {"token": dead_token, "error": "x", "retryable": False}
    )
    check(dead.expect(200, what="fail, not retryable").body["status"] == "dead", "not dead")
    (await ctx.wire.post(f"/jobs/{dead_id}/cancel")).expect(200, what="cancel a dead job")
    (await ctx.wire.post(f"/jobs/{job_id}/requeue")).expect(
        409, "invalid_transition", "requeue of a queued job"
    )
    (await ctx.report(2**62, "complete", {"token": 1})).expect(
        404, "job_not_found", "complete of an unknown id"
    )


async def idempotent_enqueue(ctx: Ctx) -> None:
    """A key answers its job again, also when the retry spells out the defaults."""
    kind, key = ctx.kind("idem"), f"{ctx.prefix}-key"
    first = await ctx.wire.post("/jobs", {"kind": kind, "payload": 1, "idempotency_key": key})
    job_id = first.expect(201, what="enqueue with a key").body["id"]
    spelled = {"max_attempts": 5, "priority": 0, "queue": "default"}
    for retry in ({}, spelled):
        body = {"kind": kind, "payload": 1, "idempotency_key": key, **retry}
        again = (await ctx.wire.post("/jobs", body)).expect(200, what=f"retry {retry or ''}")
        check(again.body["id"] == job_id, "a retry made another job")
    other = {"kind": kind, "payload": 2, "idempotency_key": key}
    (await ctx.wire.post("/jobs", other)).expect(422, "idempotency_conflict", "key reused")


async def lease_idempotency(ctx: Ctx) -> None:
    """A lease retried with its request_id gets the same leases, and no new ones."""
    kind = ctx.kind("rid")
    for _ in range(3):
        await ctx.enqueue(kind)
    asked = {"max_jobs": 2, "request_id": f"{ctx.prefix}-r1"}
    first = (await ctx.lease(kind, **asked)).expect(200, what="lease with request_id").body
    again = (await ctx.lease(kind, **asked)).expect(200, what="the same lease again").body

    def held(body: dict[str, Any]) -> list[tuple[int, int]]:
        return sorted((int(x["job"]["id"]), int(x["token"])) for x in body["leases"])

    check(len(held(first)) == 2, "max_jobs 2 did not lease 2")
    check(held(again) == held(first), f"retry got {held(again)}, first {held(first)}")
    # POST /leases: the one-shape route, same rules.
    body = {"worker_id": f"{ctx.prefix}-w", "kinds": [kind], "request_id": f"{ctx.prefix}-r2"}
    other = (await ctx.wire.post("/leases", body)).expect(200, what="POST /leases")
    check(len(other.body["leases"]) == 1, "a new request id did not lease the rest")
    (await ctx.wire.post("/leases", {**body, "request_id": f"{ctx.prefix}-r3"})).expect(
        204, what="POST /leases with nothing left"
    )


async def batches(ctx: Ctx) -> None:
    """Batch items are answered one by one, each with the verdict naming the action."""
    kind = ctx.kind("batch")
    await ctx.enqueue(kind)
    await ctx.enqueue(kind)
    leases = (await ctx.lease(kind, max_jobs=2)).expect(200, what="lease 2").body["leases"]
    (a, ta), (b, tb) = [(int(x["job"]["id"]), int(x["token"])) for x in leases]
    items = [{"id": a, "token": ta}, {"id": b, "token": tb + 1}, {"id": 2**62, "token": 1}]
    renewed = (await ctx.wire.post("/batch/renew", {"items": items})).expect(200, what="renew")
    got = [(r["outcome"], r.get("verdict")) for r in renewed.body["results"]]
    want = [("ok", "ok"), ("stale", "stale"), ("not_found", "not_found")]
    check(got == want, f"batch renew answered {got}, expected {want}")
    limits = (await ctx.wire.get("/protocol")).body["limits"]
    big = "x" * (int(limits["max_payload_bytes"]) + 1)
    reports: list[dict[str, Any]] = [
        {"id": a, "token": ta, "result": big},
        {"id": b, "token": tb, "result": 1},
    ]
    done = await ctx.wire.post("/batch/complete", {"items": reports})
    got2 = [(r["verdict"], r["error"]) for r in done.expect(200, what="complete").body["results"]]
    want2: list[tuple[str, str | None]] = [("rejected", "payload_too_large"), ("ok", None)]
    check(got2 == want2, f"batch complete answered {got2}, expected {want2}")


async def cancel(ctx: Ctx) -> None:
    """A cancelled running job: renew refused job_cancelled, a release ends it cancelled."""
    kind = ctx.kind("cancel")
    await ctx.enqueue(kind)
    job_id, token, _ = await ctx.lease_one(kind)
    marked = (await ctx.wire.post(f"/jobs/{job_id}/cancel")).expect(200, what="cancel")
    check(marked.body["cancel_requested"] is True, "cancel_requested not set")
    (await ctx.report(job_id, "renew", {"token": token})).expect(
        409, "job_cancelled", "renew of a cancelled job"
    )
    items = {"items": [{"id": job_id, "token": token}]}
    batch = (await ctx.wire.post("/batch/renew", items)).expect(200, what="batch renew")
    verdict = batch.body["results"][0].get("verdict")
    check(verdict == "cancelled", f"batch renew verdict {verdict}, expected cancelled")
    released = (await ctx.report(job_id, "release", {"token": token})).expect(200, what="release")
    check(released.body["status"] == "cancelled", "a release did not end it cancelled")


async def errors(ctx: Ctx) -> None:
    """Bad input is a 4xx with a JSON error body, never a 5xx."""
    kind = ctx.kind("errors")
    short = await ctx.lease(kind, lease_seconds=0.0001)
    short.expect(422, what="a lease of 0.1 ms")
    typo = await ctx.wire.post("/jobs", {"kind": kind, "priorty": 1})
    typo.expect(422, "validation_error", "an unknown field")
    (
        await ctx.wire.post("/jobs", raw=b"{nope", headers={"Content-Type": "application/json"})
    ).expect(422, "invalid_json", "a body that is not JSON")
    (await ctx.wire.post("/jobs", raw=b"kind=x", headers={"Content-Type": "text/plain"})).expect(
        415, "unsupported_media_type", "a body that is not declared JSON"
    )
    check(isinstance(typo.body.get("message"), str), "an error body without a message")
    job = await ctx.enqueue(kind)
    undeclared = await ctx.wire.session.post(f"{ctx.wire.url}/jobs/{job['id']}/cancel",
                                             headers=ctx.wire.headers)  # fmt: skip
    async with undeclared:
        check(
            undeclared.status == 415, f"a state change without Content-Type got {undeclared.status}"
        )
    (await ctx.wire.post("/jobs", {"kind": kind, "max_attempts": 1.0})).expect(
        422, what="max_attempts 1.0 (integers only)"
    )


VECTORS: list[tuple[str, Vector]] = [
    ("discovery", discovery),
    ("lease and complete", lease_and_complete),
    ("fencing", fencing),
    ("state table", state_table),
    ("idempotent enqueue", idempotent_enqueue),
    ("lease idempotency", lease_idempotency),
    ("batches", batches),
    ("cancel", cancel),
    ("errors", errors),
    *WORKFLOW_VECTORS,
    *FLOW_VECTORS,
    *JOB_VECTORS,
]
