-- The same tables as the SQLite schema, in PostgreSQL types. Times are timestamptz set
-- from the database's clock, so coordinators with skewed clocks agree on expiry.
CREATE TABLE jobs (
    id bigserial PRIMARY KEY,
    kind text NOT NULL,
    payload jsonb NOT NULL,
    status text NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL,
    run_after timestamptz NOT NULL,
    created_at timestamptz NOT NULL,
    lease_token bigint NOT NULL DEFAULT 0,
    lease_owner text,
    lease_expires_at timestamptz,
    lease_seconds double precision,
    leased_at timestamptz,
    finished_at timestamptz,
    idempotency_key text UNIQUE,
    request_hash text,
    result jsonb,
    last_error text,
    report text
);

-- Leasing reads the head of one of these (the second once per requested kind); both stay
-- small-cost at a million queued jobs.
CREATE INDEX jobs_queued ON jobs (run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_queued_kind ON jobs (kind, run_after, id) WHERE status = 'queued';
-- The reaper's scan.
CREATE INDEX jobs_running_expiry ON jobs (lease_expires_at) WHERE status = 'running';
-- Listing and counting.
CREATE INDEX jobs_status ON jobs (status, id);
CREATE INDEX jobs_kind ON jobs (kind, id);

CREATE TABLE attempts (
    job_id bigint NOT NULL,
    token bigint NOT NULL,
    worker_id text NOT NULL,
    leased_at timestamptz NOT NULL,
    finished_at timestamptz,
    outcome text NOT NULL,
    error text,
    PRIMARY KEY (job_id, token)
);

-- Totals are spread over a few rows per (name, kind), picked by the writing session, so
-- that concurrent transactions on several coordinators do not queue on one hot row.
CREATE TABLE counters (
    name text NOT NULL,
    kind text NOT NULL,
    shard smallint NOT NULL,
    value bigint NOT NULL,
    PRIMARY KEY (name, kind, shard)
);
