-- One row per lease request instead of one per leased job: a batch lease of 50 jobs then
-- writes, indexes and later forgets one row, not 50. job_ids[i] was leased under tokens[i].
CREATE TABLE lease_requests_by_request (
    worker_id text NOT NULL,
    request_id text NOT NULL,
    job_ids bigint[] NOT NULL,
    tokens bigint[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (worker_id, request_id)
);
INSERT INTO lease_requests_by_request (worker_id, request_id, job_ids, tokens, created_at)
    SELECT worker_id, request_id, array_agg(job_id ORDER BY job_id),
        array_agg(token ORDER BY job_id), max(created_at)
    FROM lease_requests GROUP BY worker_id, request_id;
DROP TABLE lease_requests;
ALTER TABLE lease_requests_by_request RENAME TO lease_requests;
ALTER INDEX lease_requests_by_request_pkey RENAME TO lease_requests_pkey;
CREATE INDEX lease_requests_age ON lease_requests (created_at);
