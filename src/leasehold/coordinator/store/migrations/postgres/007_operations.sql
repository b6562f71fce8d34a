-- Running for months: retention, paused queues, worker presence, time limits.

-- A job's time limit in seconds (NULL: none), handed to the worker with its lease.
ALTER TABLE jobs ADD COLUMN timeout_seconds double precision;

-- Retention deletes the oldest finished jobs of one status first, a batch at a time.
CREATE INDEX jobs_finished ON jobs (status, finished_at) WHERE finished_at IS NOT NULL;

-- A paused queue is not leased from; a row here is the pause (it survives restarts and
-- every coordinator sees it).
CREATE TABLE queue_pauses (
    queue text PRIMARY KEY,
    paused_at timestamptz NOT NULL
);

-- Workers that announced themselves by heartbeat; kinds and queues are JSON (null: any).
CREATE TABLE workers (
    worker_id text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    kinds jsonb,
    queues jsonb,
    concurrency integer NOT NULL,
    started_at timestamptz NOT NULL,
    last_seen timestamptz NOT NULL
);
