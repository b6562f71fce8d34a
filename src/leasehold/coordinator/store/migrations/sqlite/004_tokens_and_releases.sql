-- Lease tokens come from one coordinator-wide counter, so no two leases of any two jobs
-- share a token; it starts above every token already issued, so each job's tokens keep
-- increasing across the upgrade.
CREATE TABLE lease_tokens (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT INTO lease_tokens (id, last) SELECT 1, coalesce(max(lease_token), 0) FROM jobs;

-- Releases of a job so far: only the first few give their attempt back (DESIGN.md §6).
ALTER TABLE jobs ADD COLUMN releases INTEGER NOT NULL DEFAULT 0;
