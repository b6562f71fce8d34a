-- Priorities, named queues, cancellation, schedules and per-kind concurrency limits.
-- Adding columns with constant defaults rewrites nothing (PostgreSQL 11 and later).
ALTER TABLE jobs
    ADD COLUMN priority integer NOT NULL DEFAULT 0,
    ADD COLUMN queue text NOT NULL DEFAULT 'default',
    ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;

-- Leasing reads the head of one of these: highest priority, then oldest run_after, then id.
-- One per way a lessee can narrow the choice (nothing, kinds, queues, both); the narrowed
-- ones are read once per requested kind, queue or (queue, kind) pair.
DROP INDEX jobs_queued;
DROP INDEX jobs_queued_kind;
CREATE INDEX jobs_pick ON jobs (priority DESC, run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_pick_kind ON jobs (kind, priority DESC, run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_pick_queue ON jobs (queue, priority DESC, run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_pick_queue_kind ON jobs (queue, kind, priority DESC, run_after, id)
    WHERE status = 'queued';

-- Job counts ('jobs:<status>' deltas) by queue as well as kind. Event totals keep queue ''.
ALTER TABLE counters ADD COLUMN queue text NOT NULL DEFAULT '';
ALTER TABLE counters DROP CONSTRAINT counters_pkey, ADD PRIMARY KEY (name, kind, queue, shard);
DELETE FROM counters WHERE name LIKE 'jobs:%';
INSERT INTO counters (name, kind, queue, shard, value)
SELECT 'jobs:' || status, kind, queue, 0, count(*) FROM jobs GROUP BY status, kind, queue;

-- Periodic jobs. next_fire_at is the earliest fire time not yet handled; the scheduler
-- moves it with a compare-and-set in the transaction that enqueues the runs.
CREATE TABLE schedules (
    name text PRIMARY KEY,
    cron text NOT NULL,
    timezone text NOT NULL,
    kind text NOT NULL,
    payload jsonb NOT NULL,
    queue text NOT NULL,
    priority integer NOT NULL,
    max_attempts integer NOT NULL,
    catch_up text NOT NULL,
    enabled boolean NOT NULL,
    next_fire_at timestamptz NOT NULL,
    last_fire_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE enabled;

-- At most max_running jobs of a kind running at once, across every coordinator. Leases of
-- a limited kind lock its row, so they take turns.
CREATE TABLE kind_limits (
    kind text PRIMARY KEY,
    max_running integer NOT NULL
);
