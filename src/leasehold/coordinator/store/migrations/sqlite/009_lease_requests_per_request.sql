-- One row per lease request instead of one per leased job: a batch lease of 50 jobs then
-- writes, indexes and later forgets one row, not 50. `leases` is a JSON array of
-- [job_id, token] pairs, in the order they were granted.
CREATE TABLE lease_requests_by_request (
    worker_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    leases TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (worker_id, request_id)
) WITHOUT ROWID;
INSERT INTO lease_requests_by_request (worker_id, request_id, leases, created_at)
    SELECT worker_id, request_id, json_group_array(json_array(job_id, token)), max(created_at)
    FROM lease_requests GROUP BY worker_id, request_id;
DROP TABLE lease_requests;
ALTER TABLE lease_requests_by_request RENAME TO lease_requests;
CREATE INDEX lease_requests_age ON lease_requests (created_at);
