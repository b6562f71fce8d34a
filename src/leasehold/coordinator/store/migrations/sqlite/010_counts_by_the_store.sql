-- Job counts are kept by the transaction that changes the jobs, as on PostgreSQL: each
-- store operation counts what it did (store/tally.py) and writes it before its commit,
-- so the triggers that counted a row at a time go.
DROP TRIGGER IF EXISTS job_counts_insert;
DROP TRIGGER IF EXISTS job_counts_update;
DROP TRIGGER IF EXISTS job_counts_delete;
