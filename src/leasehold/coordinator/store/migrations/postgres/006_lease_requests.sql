-- Lease request ids (PROTOCOL.md, "Lease idempotency"): which jobs, under which tokens, a
-- worker's POST /lease with a request_id was given, so that a retry of a lease whose answer
-- was lost gets the same leases back instead of new ones. Kept for the replay window only.
CREATE TABLE lease_requests (
    worker_id text NOT NULL,
    request_id text NOT NULL,
    job_id bigint NOT NULL,
    token bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (worker_id, request_id, job_id)
);
CREATE INDEX lease_requests_age ON lease_requests (created_at);
