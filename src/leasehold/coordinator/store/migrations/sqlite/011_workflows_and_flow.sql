-- Workflows and flow control (DESIGN.md §19, §22, §23).
--
-- The jobs table is rebuilt: its idempotency keys become unique per kind (a column
-- constraint SQLite cannot drop in place), and it gains the columns of dependencies,
-- spawned children, groups, rate weights, start deadlines and unique jobs. The id
-- sequence carries over, so no id is ever handed out twice.
CREATE TABLE jobs_011 (
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
    idempotency_key TEXT,
    request_hash TEXT,
    result TEXT,
    last_error TEXT,
    report TEXT,
    priority INTEGER NOT NULL DEFAULT 0,
    queue TEXT NOT NULL DEFAULT 'default',
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    releases INTEGER NOT NULL DEFAULT 0,
    headers TEXT,
    timeout_seconds REAL,
    waiting_for INTEGER NOT NULL DEFAULT 0,
    depth INTEGER NOT NULL DEFAULT 0,
    dependents INTEGER NOT NULL DEFAULT 0,
    blocked_by INTEGER,
    spawned_by INTEGER,
    spawn_key TEXT,
    group_key TEXT,
    weight INTEGER NOT NULL DEFAULT 1,
    start_by REAL,
    unique_key TEXT
);
INSERT INTO jobs_011 (id, kind, payload, status, attempts, max_attempts, run_after, created_at,
    lease_token, lease_owner, lease_expires_at, lease_seconds, leased_at, finished_at,
    idempotency_key, request_hash, result, last_error, report, priority, queue,
    cancel_requested, releases, headers, timeout_seconds)
SELECT id, kind, payload, status, attempts, max_attempts, run_after, created_at,
    lease_token, lease_owner, lease_expires_at, lease_seconds, leased_at, finished_at,
    idempotency_key, request_hash, result, last_error, report, priority, queue,
    cancel_requested, releases, headers, timeout_seconds
FROM jobs;
CREATE TEMP TABLE jobs_seq_011 AS SELECT seq FROM sqlite_sequence WHERE name = 'jobs';
DROP TABLE jobs;
ALTER TABLE jobs_011 RENAME TO jobs;
DELETE FROM sqlite_sequence WHERE name IN ('jobs', 'jobs_011');
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'jobs', max(coalesce((SELECT max(seq) FROM jobs_seq_011), 0),
                       coalesce((SELECT max(id) FROM jobs), 0));
DROP TABLE jobs_seq_011;

CREATE UNIQUE INDEX jobs_idempotency ON jobs (kind, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_running_expiry ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_status ON jobs (status, id);
CREATE INDEX jobs_kind ON jobs (kind, id);
CREATE INDEX jobs_kind_status ON jobs (kind, status, id);
CREATE INDEX jobs_queue_status ON jobs (queue, status, id);
CREATE INDEX jobs_finished ON jobs (status, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX jobs_pick ON jobs (priority DESC, run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_pick_kind ON jobs (kind, priority DESC, run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_pick_queue ON jobs (queue, priority DESC, run_after, id)
    WHERE status = 'queued';
CREATE INDEX jobs_pick_queue_kind ON jobs (queue, kind, priority DESC, run_after, id)
    WHERE status = 'queued';
-- A group's head, for the turns groups take under a kind's limits (§19).
CREATE INDEX jobs_pick_group ON jobs (kind, group_key, priority DESC, run_after, id)
    WHERE status = 'queued';
-- The dependents a parent's requeue revives (§22), children by their parent's key, the
-- duplicates of a unique job (§23), and the start deadlines the reaper enforces.
CREATE INDEX jobs_blocked_by ON jobs (blocked_by) WHERE blocked_by IS NOT NULL;
CREATE UNIQUE INDEX jobs_spawn ON jobs (spawned_by, spawn_key) WHERE spawn_key IS NOT NULL;
CREATE INDEX jobs_unique ON jobs (unique_key, created_at) WHERE unique_key IS NOT NULL;
CREATE INDEX jobs_start_by ON jobs (start_by)
    WHERE start_by IS NOT NULL AND status IN ('waiting', 'queued');

-- The edges of workflows: a job and each parent it waits for.
CREATE TABLE job_deps (
    job_id INTEGER NOT NULL,
    parent_id INTEGER NOT NULL,
    on_failure TEXT NOT NULL,
    PRIMARY KEY (job_id, parent_id)
) WITHOUT ROWID;
CREATE INDEX job_deps_parent ON job_deps (parent_id, job_id);

-- A kind's limits: any of them may be set.
CREATE TABLE kind_limits_011 (
    kind TEXT PRIMARY KEY,
    max_running INTEGER,
    max_running_per_group INTEGER,
    rate_limit INTEGER,
    rate_period REAL,
    rate_per_group INTEGER NOT NULL DEFAULT 0,
    fair INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO kind_limits_011 (kind, max_running) SELECT kind, max_running FROM kind_limits;
DROP TABLE kind_limits;
ALTER TABLE kind_limits_011 RENAME TO kind_limits;

-- The groups of a kind that take turns: whose turn is next (the oldest turn), whether it
-- may have queued jobs, and until when it is known to have none it could start.
CREATE TABLE flow_groups (
    kind TEXT NOT NULL,
    group_key TEXT NOT NULL,
    turn INTEGER NOT NULL DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1,
    blocked_until REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, group_key)
) WITHOUT ROWID;
CREATE INDEX flow_groups_turn ON flow_groups (kind, turn) WHERE active;

-- Running jobs by group, kept as job counts are (store/tally.py): a group's limit reads it.
CREATE TABLE group_counts (
    kind TEXT NOT NULL,
    group_key TEXT NOT NULL,
    running INTEGER NOT NULL,
    PRIMARY KEY (kind, group_key)
) WITHOUT ROWID;

-- Units started under a rate limit, by time slot (a twentieth of the period), and when
-- the slot stops counting (seconds since the epoch).
CREATE TABLE rate_starts (
    kind TEXT NOT NULL,
    group_key TEXT NOT NULL,
    slot INTEGER NOT NULL,
    units INTEGER NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (kind, group_key, slot)
) WITHOUT ROWID;
CREATE INDEX rate_starts_expires ON rate_starts (expires);
