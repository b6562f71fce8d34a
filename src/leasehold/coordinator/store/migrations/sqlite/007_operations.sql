-- Running for months: retention, paused queues, worker presence, time limits.

-- A job's time limit in seconds (NULL: none), handed to the worker with its lease.
ALTER TABLE jobs ADD COLUMN timeout_seconds REAL;

-- Retention deletes the oldest finished jobs of one status first, a batch at a time.
CREATE INDEX jobs_finished ON jobs (status, finished_at) WHERE finished_at IS NOT NULL;

-- A paused queue is not leased from; a row here is the pause (it survives restarts).
CREATE TABLE queue_pauses (
    queue TEXT PRIMARY KEY,
    paused_at REAL NOT NULL
) WITHOUT ROWID;

-- Workers that announced themselves by heartbeat; kinds and queues are JSON (null: any).
CREATE TABLE workers (
    worker_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    version TEXT NOT NULL,
    kinds TEXT,
    queues TEXT,
    concurrency INTEGER NOT NULL,
    started_at REAL NOT NULL,
    last_seen REAL NOT NULL
) WITHOUT ROWID;
