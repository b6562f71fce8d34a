-- Lease request ids (PROTOCOL.md, "Lease idempotency"): which jobs, under which tokens, a
-- worker's POST /lease with a request_id was given, so that a retry of a lease whose answer
-- was lost gets the same leases back instead of new ones. Kept for the replay window only.
CREATE TABLE lease_requests (
    worker_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    job_id INTEGER NOT NULL,
    token INTEGER NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (worker_id, request_id, job_id)
) WITHOUT ROWID;
CREATE INDEX lease_requests_age ON lease_requests (created_at);
