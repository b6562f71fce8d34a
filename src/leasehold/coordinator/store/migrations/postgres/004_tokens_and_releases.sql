-- Lease tokens come from one sequence shared by every coordinator, so no two leases of
-- any two jobs share a token; it starts above every token already issued, so each job's
-- tokens keep increasing across the upgrade. A sequence never rolls back: a lease rolled
-- back leaves a gap, which fencing does not mind.
CREATE SEQUENCE lease_tokens AS bigint;
SELECT setval('lease_tokens', coalesce((SELECT max(lease_token) FROM jobs), 0) + 1, false);

-- Releases of a job so far: only the first few give their attempt back (DESIGN.md §6).
-- A constant default rewrites nothing.
ALTER TABLE jobs ADD COLUMN releases integer NOT NULL DEFAULT 0;
