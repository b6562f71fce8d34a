-- Job counts by kind and status live in the counters table as signed deltas under the
-- names 'jobs:<status>' (sharded like every counter), so /stats never counts a million
-- rows and concurrent transactions never queue on one row. Start from the current rows.
INSERT INTO counters (name, kind, shard, value)
SELECT 'jobs:' || status, kind, 0, count(*) FROM jobs GROUP BY status, kind
ON CONFLICT (name, kind, shard) DO UPDATE SET value = counters.value + excluded.value;

-- Per-second event counts and value sums (wait and run seconds), for windowed figures,
-- sharded the same way. Rows older than an hour are pruned by the reapers.
CREATE TABLE rollups (
    second bigint NOT NULL,
    name text NOT NULL,
    kind text NOT NULL,
    shard smallint NOT NULL,
    count bigint NOT NULL,
    total double precision NOT NULL,
    PRIMARY KEY (second, name, kind, shard)
);
