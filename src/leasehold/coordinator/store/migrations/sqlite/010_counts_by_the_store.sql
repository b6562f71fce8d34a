-- Counts are kept as on PostgreSQL: in one table, events by (name, kind) with the queue
-- '', job counts by (kind, queue) under the names 'jobs:<status>'. The transaction that
-- changes jobs writes them (store/tally.py), so the triggers that counted a row at a time,
-- and their table, go.
DROP TRIGGER IF EXISTS job_counts_insert;
DROP TRIGGER IF EXISTS job_counts_update;
DROP TRIGGER IF EXISTS job_counts_delete;

CREATE TABLE counts (
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    queue TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (name, kind, queue)
) WITHOUT ROWID;
INSERT INTO counts (name, kind, queue, value) SELECT name, kind, '', value FROM counters;
INSERT INTO counts (name, kind, queue, value)
    SELECT 'jobs:' || status, kind, queue, n FROM job_counts WHERE n <> 0;
DROP TABLE counters;
DROP TABLE job_counts;
ALTER TABLE counts RENAME TO counters;
