-- Workflows and flow control (DESIGN.md §19, §22, §23): idempotency keys unique per kind,
-- and the columns of dependencies, spawned children, groups, rate weights, start
-- deadlines and unique jobs.
ALTER TABLE jobs
    ADD COLUMN waiting_for integer NOT NULL DEFAULT 0,
    ADD COLUMN depth integer NOT NULL DEFAULT 0,
    ADD COLUMN dependents integer NOT NULL DEFAULT 0,
    ADD COLUMN blocked_by bigint,
    ADD COLUMN spawned_by bigint,
    ADD COLUMN spawn_key text,
    ADD COLUMN group_key text,
    ADD COLUMN weight integer NOT NULL DEFAULT 1,
    ADD COLUMN start_by timestamptz,
    ADD COLUMN unique_key text;
ALTER TABLE jobs DROP CONSTRAINT jobs_idempotency_key_key;
CREATE UNIQUE INDEX jobs_idempotency ON jobs (kind, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
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

CREATE TABLE job_deps (
    job_id bigint NOT NULL,
    parent_id bigint NOT NULL,
    on_failure text NOT NULL,
    PRIMARY KEY (job_id, parent_id)
);
CREATE INDEX job_deps_parent ON job_deps (parent_id, job_id);

ALTER TABLE kind_limits
    ALTER COLUMN max_running DROP NOT NULL,
    ADD COLUMN max_running_per_group integer,
    ADD COLUMN rate_limit integer,
    ADD COLUMN rate_period double precision,
    ADD COLUMN rate_per_group boolean NOT NULL DEFAULT false,
    ADD COLUMN fair boolean NOT NULL DEFAULT false;

-- The groups of a kind that take turns: whose turn is next (the oldest turn), whether it
-- may have queued jobs, and until when it is known to have none it could start (seconds
-- since the epoch, as the lease policy counts them).
CREATE TABLE flow_groups (
    kind text NOT NULL,
    group_key text NOT NULL,
    turn bigint NOT NULL DEFAULT 0,
    active boolean NOT NULL DEFAULT true,
    blocked_until double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, group_key)
);
CREATE INDEX flow_groups_turn ON flow_groups (kind, turn) WHERE active;

-- Running jobs by group, as signed deltas spread over shards like the counters (§12).
CREATE TABLE group_counts (
    kind text NOT NULL,
    group_key text NOT NULL,
    shard integer NOT NULL,
    running bigint NOT NULL,
    PRIMARY KEY (kind, group_key, shard)
);

-- Units started under a rate limit, by time slot (a twentieth of the period), and when
-- the slot stops counting (seconds since the epoch).
CREATE TABLE rate_starts (
    kind text NOT NULL,
    group_key text NOT NULL,
    slot bigint NOT NULL,
    units bigint NOT NULL,
    expires double precision NOT NULL,
    PRIMARY KEY (kind, group_key, slot)
);
CREATE INDEX rate_starts_expires ON rate_starts (expires);
