-- Priorities, named queues, cancellation, schedules and per-kind concurrency limits.
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;

-- Leasing reads the head of one of these: highest priority, then oldest run_after, then id.
-- One per way a lessee can narrow the choice (nothing, kinds, queues, both), so every lease
-- is an index range per requested kind/queue, flat at a million queued jobs.
DROP INDEX jobs_queued;
DROP INDEX jobs_queued_kind;
CREATE INDEX jobs_pick ON jobs (priority DESC, run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_pick_kind ON jobs (kind, priority DESC, run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_pick_queue ON jobs (queue, priority DESC, run_after, id) WHERE status = 'queued';
CREATE INDEX jobs_pick_queue_kind ON jobs (queue, kind, priority DESC, run_after, id)
    WHERE status = 'queued';

-- Job counts by queue, kind and status (the kind-and-status table, one level finer).
DROP TRIGGER job_counts_insert;
DROP TRIGGER job_counts_update;
DROP TRIGGER job_counts_delete;
DROP TABLE job_counts;
CREATE TABLE job_counts (
    queue TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (queue, kind, status)
) WITHOUT ROWID;

INSERT INTO job_counts (queue, kind, status, n)
SELECT queue, kind, status, count(*) FROM jobs GROUP BY queue, kind, status;

CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts (queue, kind, status, n) VALUES (new.queue, new.kind, new.status, 1)
    ON CONFLICT (queue, kind, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_update AFTER UPDATE OF status ON jobs WHEN old.status <> new.status BEGIN
    UPDATE job_counts SET n = n - 1
    WHERE queue = old.queue AND kind = old.kind AND status = old.status;
    INSERT INTO job_counts (queue, kind, status, n) VALUES (new.queue, new.kind, new.status, 1)
    ON CONFLICT (queue, kind, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET n = n - 1
    WHERE queue = old.queue AND kind = old.kind AND status = old.status;
END;

-- Periodic jobs. next_fire_at is the earliest fire time not yet handled; the scheduler
-- moves it with a compare-and-set in the transaction that enqueues the runs.
CREATE TABLE schedules (
    name TEXT PRIMARY KEY,
    cron TEXT NOT NULL,
    timezone TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    catch_up TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    next_fire_at REAL NOT NULL,
    last_fire_at REAL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE enabled = 1;

-- At most max_running jobs of a kind running at once, across every worker.
CREATE TABLE kind_limits (
    kind TEXT PRIMARY KEY,
    max_running INTEGER NOT NULL
) WITHOUT ROWID;
