-- Times are seconds since the Unix epoch (REAL), UTC.
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    run_after REAL NOT NULL,
    created_at REAL NOT NULL,
    lease_token INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires_at REAL,
    lease_seconds REAL,
    leased_at REAL,
    finished_at REAL,
    idempotency_key TEXT UNIQUE,
    request_hash TEXT,
    result TEXT,
    last_error TEXT,
    report TEXT
);

-- Leasing reads the head of one of these; both stay small-cost at a million jobs.
CREATE INDEX jobs_queued ON jobs (run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_queued_kind ON jobs (kind, run_after, id) WHERE status = 'queued';
-- The reaper's scan.
CREATE INDEX jobs_running_expiry ON jobs (lease_expires_at) WHERE status = 'running';
-- Listing and counting.
CREATE INDEX jobs_status ON jobs (status, id);
CREATE INDEX jobs_kind ON jobs (kind, id);

CREATE TABLE attempts (
    job_id INTEGER NOT NULL,
    token INTEGER NOT NULL,
    worker_id TEXT NOT NULL,
    leased_at REAL NOT NULL,
    finished_at REAL,
    outcome TEXT NOT NULL,
    error TEXT,
    PRIMARY KEY (job_id, token)
) WITHOUT ROWID;

CREATE TABLE counters (
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (name, kind)
) WITHOUT ROWID;
