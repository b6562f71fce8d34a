"""The protocol's version and capabilities: what this coordinator speaks.

A worker or producer in any language reads ``GET /protocol`` once to learn what this
coordinator speaks (PROTOCOL.md, "Versions and discovery"); every answer also carries the
``Leasehold-Protocol`` header, so a client sees the version without asking.
"""

from __future__ import annotations

from typing import Final

PROTOCOL_VERSION: Final = "1.2"


# Every version this coordinator answers as its documents say (each only adds to the last).
SUPPORTED_VERSIONS: Final = ("1.0", "1.1", "1.2")


CAPABILITIES: Final = (
    "batches",  # POST /jobs/batch, /batch/renew, /batch/complete, /batch/fail, max_jobs
    "cancel",  # POST /jobs/{id}/cancel and the job_cancelled answers
    "queues",  # named queues and priorities
    "schedules",  # /schedules
    "limits",  # /limits (per-kind concurrency)
    "long_poll",  # wait_seconds on a lease
    "lease_request_id",  # request_id on a lease: a retry gets the same leases back
    "lease_seconds_answer",  # lease answers carry the granted lease_seconds
    "leases_route",  # POST /leases: one answer shape for code generators
    "item_verdicts",  # batch items carry `verdict`, naming what the worker does
    "normalized_idempotency",  # enqueue retries compare requests with defaults filled in
    "job_headers",  # headers on enqueue, stored and handed to every lessee (trace context)
    "wait_finished",  # GET /jobs/{id}?wait_seconds: answered when the job has finished
    "workers_pages",  # GET /workers?limit&cursor, and next_cursor in its answer
    "visible_names",  # every name and key refuses control, format and separator characters
    "stats_folded",  # /stats `folded`: the rows past the 50 largest names, added up apart
    "request_ids",  # every answer carries X-Request-ID: the request's own, or one made
    "workflows",  # depends_on, refs in batches, the waiting status, children, parents in leases
    "flow_control",  # group keys, weights, start deadlines, rates and turns, explain
    "unique_jobs",  # unique on enqueue: a duplicate answers the job already there
    "idempotency_per_kind",  # an idempotency key is unique per kind
    "unserved_header",  # enqueue answers name the (queue, kind) no live worker takes
    "lease_wait_cap",  # a long poll waits at most a quarter of the lease it would grant
)


HEADER: Final = "Leasehold-Protocol"


# Sent when an open coordinator (no tokens configured) is given a bearer token it cannot
# check: the request is served, and the client learns that its token meant nothing here.
AUTH_WARNING_HEADER: Final = "Leasehold-Auth-Warning"


AUTH_WARNING: Final = "open coordinator: the bearer token was not checked"
