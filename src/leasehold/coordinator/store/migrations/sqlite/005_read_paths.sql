-- The filters the API offers on job lists (status, kind, queue, and pairs of them), each an
-- index range read in id order: a page of a filtered list reads its page, not the table.
-- (status, id) is jobs_status, from the first migration.
-- compatible: two indexes; an older coordinator's statements and rules are unchanged.
CREATE INDEX jobs_kind_status ON jobs (kind, status, id);
CREATE INDEX jobs_queue_status ON jobs (queue, status, id);
