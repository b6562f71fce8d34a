-- Job counts by kind and status, kept by triggers so /stats never counts a million rows.
CREATE TABLE job_counts (
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (kind, status)
) WITHOUT ROWID;

INSERT INTO job_counts (kind, status, n) SELECT kind, status, count(*) FROM jobs GROUP BY kind, status;

CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts (kind, status, n) VALUES (new.kind, new.status, 1)
    ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_update AFTER UPDATE OF status ON jobs WHEN old.status <> new.status BEGIN
    UPDATE job_counts SET n = n - 1 WHERE kind = old.kind AND status = old.status;
    INSERT INTO job_counts (kind, status, n) VALUES (new.kind, new.status, 1)
    ON CONFLICT (kind, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET n = n - 1 WHERE kind = old.kind AND status = old.status;
END;

-- Per-second event counts and value sums (wait and run seconds), for windowed figures.
-- Rows older than an hour are pruned by the reaper's sweep.
CREATE TABLE rollups (
    second INTEGER NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    count INTEGER NOT NULL,
    total REAL NOT NULL,
    PRIMARY KEY (second, name, kind)
) WITHOUT ROWID;
