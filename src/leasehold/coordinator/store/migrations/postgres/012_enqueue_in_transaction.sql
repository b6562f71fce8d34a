-- Enqueue inside an application's own transaction (DESIGN.md §26): leasehold_enqueue(job)
-- checks one job and inserts it as the coordinator's enqueue does (store/jobs.py insert,
-- store/graph.py admitted), in the caller's transaction. It runs as the owner of these
-- tables (SECURITY DEFINER): a role granted EXECUTE on it, and SELECT on jobs, enqueues and
-- reads jobs but can neither lease nor change one.
--
-- Its argument is the job as leasehold.transactional prepares it with the coordinator's own
-- rules (the enqueue's wire model, the request and unique fingerprints); the function checks
-- it again, as the boundary of the role, and refuses with SQLSTATE LH422, the error's code
-- in DETAIL (invalid_request, idempotency_conflict, invalid_graph, too_many_names,
-- payload_too_large) and the reason in MESSAGE; or, asked to, answers the refusal and
-- leaves the transaction as it was.
--
-- This is the enqueue's algorithm and bounds written a second time: tests hold it to the
-- store's (tests/integration/test_enqueue_in_transaction.py, the same jobs both ways) and to
-- the constants of the wire model (tests/unit/test_enqueue_sql.py).

-- The caps the coordinator's --max-* options set for its own enqueues, for this path (which
-- no coordinator process sees): one row, changed with UPDATE.
CREATE TABLE enqueue_caps (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    max_payload_bytes integer NOT NULL DEFAULT 262144 CHECK (max_payload_bytes > 0),
    max_kinds integer NOT NULL DEFAULT 1000 CHECK (max_kinds > 0),
    max_queues integer NOT NULL DEFAULT 100 CHECK (max_queues > 0),
    max_groups integer NOT NULL DEFAULT 100000 CHECK (max_groups > 0)
);
INSERT INTO enqueue_caps DEFAULT VALUES;

-- What an open application transaction counted (a tally's rows: an event or 'jobs:<status>'
-- by kind and queue, or 'woken' with the group key in queue), folded into the counters when
-- it commits: its count rows (and a woken group's turn row) are then locked only from the
-- fold to the commit, never while the application's transaction does its own work.
CREATE TABLE enqueue_tally (
    name text NOT NULL,
    kind text NOT NULL,
    queue text NOT NULL
);

CREATE FUNCTION leasehold_refuse(code text, message text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'LH422', MESSAGE = message, DETAIL = code;
END
$$;

-- The rule of every name and key (coordinator/api/schemas/fields.py name_problem): not
-- blank, and no character of Unicode category Cc, Cf, Zl or Zp (the class is checked
-- against Python's unicodedata by tests/unit/test_enqueue_sql.py).
CREATE FUNCTION leasehold_name_problem(value text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN value ~ '^[\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$'
            THEN 'must not be empty or only white space'
        WHEN value ~ '[\u0001-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]'
            THEN 'must not contain control, format or line-separator characters'
    END
$$;

-- A text field: NULL when absent or null; refused unless a string of 1 to max_length
-- characters, and, with rule, a name (above).
CREATE FUNCTION leasehold_text(job jsonb, field text, max_length integer, rule boolean)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    value text := job->>field;
    problem text;
BEGIN
    IF value IS NULL THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(job->field) <> 'string' THEN
        PERFORM leasehold_refuse('invalid_request', field || ': must be a string');
    END IF;
    IF length(value) < 1 OR length(value) > max_length THEN
        PERFORM leasehold_refuse('invalid_request',
            format('%s: must be 1 to %s characters', field, max_length));
    END IF;
    problem := CASE WHEN rule THEN leasehold_name_problem(value) END;
    IF problem IS NOT NULL THEN
        PERFORM leasehold_refuse('invalid_request', field || ': ' || problem);
    END IF;
    RETURN value;
END
$$;

-- An integer field (a JSON number without fraction or exponent) from low to high.
CREATE FUNCTION leasehold_integer(value jsonb, field text, low numeric, high numeric)
RETURNS numeric LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF value IS NULL OR jsonb_typeof(value) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(value) <> 'number' OR value::text !~ '^-?[0-9]+$'
            OR value::text::numeric NOT BETWEEN low AND high THEN
        PERFORM leasehold_refuse('invalid_request',
            format('%s: must be an integer from %s to %s', field, low, high));
    END IF;
    RETURN value::text::numeric;
END
$$;

-- A number of seconds, above 0 and at most high.
CREATE FUNCTION leasehold_seconds(value jsonb, field text, high double precision)
RETURNS double precision LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF value IS NULL OR jsonb_typeof(value) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(value) <> 'number' OR value::text::numeric <= 0
            OR value::text::numeric > high::numeric THEN
        PERFORM leasehold_refuse('invalid_request',
            format('%s: must be a number of seconds above 0, at most %s', field, high));
    END IF;
    RETURN value::text::double precision;
END
$$;

-- A time: RFC 3339 text with an offset, from 1970 to 9998 (UTC), as every backend stores.
CREATE FUNCTION leasehold_time(job jsonb, field text) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
DECLARE
    value text := job->>field;
    stamp timestamptz;
BEGIN
    IF value IS NULL THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(job->field) <> 'string' OR value !~
            '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?([Zz]|[+-][0-9]{2}:[0-9]{2})$' THEN
        PERFORM leasehold_refuse('invalid_request',
            field || ': must be an RFC 3339 date-time with an offset');
    END IF;
    stamp := value::timestamptz;
    IF stamp < '1970-01-01T00:00:00Z' OR stamp >= '9999-01-01T00:00:00Z' THEN
        PERFORM leasehold_refuse('invalid_request',
            field || ': must be from 1970-01-01 to 9998-12-31 (UTC)');
    END IF;
    RETURN stamp;
END
$$;

-- Whether a JSON value holds an integer beyond 64 bits (coordinator/rules/userjson.py):
-- read from the text as given, since jsonb keeps 1e30 and 10^30 alike. Called only when
-- the text has a run of 19 digits.
CREATE FUNCTION leasehold_long_integer(value json) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    CASE json_typeof(value)
    WHEN 'number' THEN
        RETURN value::text ~ '^-?[0-9]+$' AND value::text::numeric
            NOT BETWEEN -9223372036854775808 AND 18446744073709551615;
    WHEN 'object' THEN
        RETURN EXISTS (SELECT 1 FROM json_each(value) AS e WHERE leasehold_long_integer(e.value));
    WHEN 'array' THEN
        RETURN EXISTS (SELECT 1 FROM json_array_elements(value) AS e(v)
                       WHERE leasehold_long_integer(e.v));
    ELSE
        RETURN false;
    END CASE;
END
$$;

-- The payload as stored, or the refusal: at most the cap's bytes as given (compact JSON, as
-- the coordinator measures it), arrays and objects at most 64 deep, integers within 64
-- bits (a NUL character is refused before: leasehold_enqueue).
CREATE FUNCTION leasehold_payload(value json, max_bytes integer) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    text_ text := coalesce(value::text, 'null');
    stored jsonb;
BEGIN
    IF octet_length(text_) > max_bytes THEN
        PERFORM leasehold_refuse('payload_too_large',
            format('the payload is over %s bytes (as JSON)', max_bytes));
    END IF;
    stored := text_::jsonb;
    IF jsonb_path_exists(stored,
            'strict $.**{64} ? (@.type() == "object" || @.type() == "array")') THEN
        PERFORM leasehold_refuse('invalid_request',
            'payload: must not nest arrays and objects more than 64 deep');
    END IF;
    IF text_ ~ '[0-9]{19}' AND leasehold_long_integer(value) THEN
        PERFORM leasehold_refuse('invalid_request',
            'payload: integers must be from -9223372036854775808 to 18446744073709551615 (64 bits)');
    END IF;
    RETURN stored;
END
$$;

-- Headers: up to 16, names of 1 to 64 of [A-Za-z0-9_.-], values names of up to 512.
CREATE FUNCTION leasehold_headers(value jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    header record;
    n integer := 0;
BEGIN
    IF value IS NULL OR jsonb_typeof(value) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(value) <> 'object' THEN
        PERFORM leasehold_refuse('invalid_request', 'headers: must be an object of strings');
    END IF;
    FOR header IN SELECT key, jsonb_typeof(e.value) AS type, e.value #>> '{}' AS text_
                  FROM jsonb_each(value) AS e LOOP
        n := n + 1;
        IF header.key !~ '^[A-Za-z0-9_.-]{1,64}$' THEN
            PERFORM leasehold_refuse('invalid_request',
                'headers: a name must be 1 to 64 of A-Z, a-z, 0-9, "_", "." and "-"');
        END IF;
        IF header.type <> 'string' OR length(header.text_) > 512
                OR leasehold_name_problem(header.text_) IS NOT NULL THEN
            PERFORM leasehold_refuse('invalid_request',
                'headers.' || header.key || ': must be a name of at most 512 characters');
        END IF;
    END LOOP;
    IF n > 16 THEN
        PERFORM leasehold_refuse('invalid_request', 'headers: at most 16');
    END IF;
    RETURN value::text;
END
$$;

-- The kinds, queues and groups the database has, against the caps: a name it knows is
-- always accepted; a new one only while the count of names stays within the cap.
CREATE FUNCTION leasehold_admit_names(k text, q text, grp text, caps enqueue_caps)
RETURNS void LANGUAGE plpgsql STABLE AS $$
DECLARE
    statuses CONSTANT text[] := ARRAY['jobs:waiting', 'jobs:queued', 'jobs:running',
                                      'jobs:completed', 'jobs:dead', 'jobs:cancelled'];
    n bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM counters WHERE name = ANY(statuses) AND kind = k AND queue = q) THEN
        IF NOT EXISTS (SELECT 1 FROM counters WHERE name = ANY(statuses) AND kind = k) THEN
            SELECT count(*) INTO n FROM (SELECT kind FROM counters WHERE name LIKE 'jobs:%'
                                         GROUP BY kind HAVING sum(value) <> 0) AS known;
            IF n >= caps.max_kinds THEN
                PERFORM leasehold_refuse('too_many_names', format(
                    'the database has %s distinct kinds and accepts at most %s'
                    ' (enqueue_caps.max_kinds): use a known kind, or put the variable part in'
                    ' the payload', n, caps.max_kinds));
            END IF;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM counters WHERE name = ANY(statuses) AND queue = q) THEN
            SELECT count(*) INTO n FROM (SELECT queue FROM counters
                                         WHERE name LIKE 'jobs:%' AND queue <> ''
                                         GROUP BY queue HAVING sum(value) <> 0) AS known;
            IF n >= caps.max_queues THEN
                PERFORM leasehold_refuse('too_many_names', format(
                    'the database has %s distinct queues and accepts at most %s'
                    ' (enqueue_caps.max_queues): use a known queue', n, caps.max_queues));
            END IF;
        END IF;
    END IF;
    IF grp IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM flow_groups WHERE kind = k AND group_key = grp) THEN
        SELECT count(*) INTO n FROM flow_groups WHERE group_key <> '';
        IF n >= caps.max_groups THEN
            PERFORM leasehold_refuse('too_many_names', format(
                'the database has %s distinct group keys and accepts at most %s'
                ' (enqueue_caps.max_groups)', n, caps.max_groups));
        END IF;
    END IF;
END
$$;

-- At the commit of a transaction that enqueued: its tally into the counters (on shards 16
-- to 31, which no coordinator writes), the per-second rollups, and the groups its queued
-- jobs woke (store/flow.py looks at them again), each in sorted order as the drivers write.
CREATE FUNCTION leasehold_enqueue_fold() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    shard_ smallint := 16 + pg_backend_pid() % 16;
BEGIN
    WITH mine AS (DELETE FROM enqueue_tally RETURNING name, kind, queue),
    summed AS (SELECT name, kind, queue, count(*) AS n FROM mine
               WHERE name <> 'woken' GROUP BY name, kind, queue),
    counted AS (
        INSERT INTO counters (name, kind, queue, shard, value)
        SELECT name, kind, queue, shard_, n FROM summed ORDER BY name, kind, queue
        ON CONFLICT (name, kind, queue, shard) DO UPDATE SET value = counters.value + excluded.value),
    rolled AS (
        INSERT INTO rollups (second, name, kind, shard, count, total)
        SELECT floor(extract(epoch FROM now()))::bigint, name, kind, shard_, sum(n), 0
        FROM summed WHERE name NOT LIKE 'jobs:%' GROUP BY name, kind ORDER BY name, kind
        ON CONFLICT (second, name, kind, shard) DO UPDATE
        SET count = rollups.count + excluded.count, total = rollups.total + excluded.total)
    INSERT INTO flow_groups (kind, group_key)
    SELECT DISTINCT kind, queue FROM mine WHERE name = 'woken' ORDER BY kind, queue
    ON CONFLICT (kind, group_key) DO UPDATE SET active = true, blocked_until = 0;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER enqueue_tally_fold AFTER INSERT ON enqueue_tally
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION leasehold_enqueue_fold();

-- A job's fields as leasehold_enqueue takes them, checked.
CREATE TYPE enqueue_request AS (
    kind text, queue text, group_key text, idempotency_key text, request_hash text,
    also_matches text[], max_attempts integer, priority integer, weight integer,
    timeout_seconds double precision, run_after timestamptz, start_by timestamptz,
    headers text, payload jsonb, unique_key text, unique_states text[],
    unique_period double precision, unique_replace boolean, parents bigint[], modes text[]
);

-- The job's fields, each checked as the enqueue's wire model bounds it
-- (coordinator/api/schemas/jobs.py), or the refusal.
CREATE FUNCTION leasehold_enqueue_request(job json, max_payload_bytes integer)
RETURNS enqueue_request LANGUAGE plpgsql STABLE AS $$
DECLARE
    r enqueue_request;
    unknown text;
    jb jsonb;
    uniq jsonb;
    dep jsonb;
BEGIN
    IF job IS NULL OR json_typeof(job) <> 'object' THEN
        PERFORM leasehold_refuse('invalid_request', 'the job must be a JSON object');
    END IF;
    -- Before any field is read: PostgreSQL's text cannot hold NUL, and reading a string
    -- that escapes one would fail with an error of its own.
    IF job::text ~ '(^|[^\\])(\\\\)*\\u0000' THEN
        PERFORM leasehold_refuse('invalid_request', 'must not contain the NUL character (\u0000)');
    END IF;
    jb := job::jsonb;  -- read once; the payload is checked as given, below
    SELECT key INTO unknown FROM jsonb_object_keys(jb) AS key WHERE key NOT IN (
        'kind', 'payload', 'max_attempts', 'run_after', 'idempotency_key', 'request_hash',
        'also_matches', 'priority', 'queue', 'headers', 'timeout_seconds', 'depends_on',
        'group_key', 'weight', 'start_by', 'unique', 'unique_key') LIMIT 1;
    IF unknown IS NOT NULL THEN
        PERFORM leasehold_refuse('invalid_request', unknown || ': no such field');
    END IF;
    uniq := jb->'unique';
    r.kind := leasehold_text(jb, 'kind', 200, true);
    IF r.kind IS NULL THEN
        PERFORM leasehold_refuse('invalid_request', 'kind: required');
    END IF;
    r.queue := coalesce(leasehold_text(jb, 'queue', 100, true), 'default');
    r.group_key := leasehold_text(jb, 'group_key', 200, true);
    r.idempotency_key := leasehold_text(jb, 'idempotency_key', 255, true);
    IF r.idempotency_key LIKE 'schedule:%' THEN
        PERFORM leasehold_refuse('invalid_request',
            'idempotency_key: keys starting with ''schedule:'' are the scheduler''s');
    END IF;
    r.request_hash := leasehold_text(jb, 'request_hash', 64, false);
    IF r.request_hash IS NULL OR r.request_hash !~ '^[0-9a-f]{64}$' THEN
        PERFORM leasehold_refuse('invalid_request', 'request_hash: must be 64 hex digits');
    END IF;
    r.also_matches := '{}';
    IF jsonb_typeof(jb->'also_matches') = 'array' THEN
        r.also_matches := ARRAY(SELECT jsonb_array_elements_text(jb->'also_matches'));
    ELSIF coalesce(jsonb_typeof(jb->'also_matches'), 'null') <> 'null' THEN
        PERFORM leasehold_refuse('invalid_request', 'also_matches: must be a list');
    END IF;
    r.max_attempts := coalesce(leasehold_integer(jb->'max_attempts', 'max_attempts', 1, 1000), 5);
    r.priority := coalesce(leasehold_integer(jb->'priority', 'priority', -1000, 1000), 0);
    r.weight := coalesce(leasehold_integer(jb->'weight', 'weight', 1, 1000000), 1);
    r.timeout_seconds := leasehold_seconds(jb->'timeout_seconds', 'timeout_seconds', 86400);
    r.run_after := leasehold_time(jb, 'run_after');
    r.start_by := leasehold_time(jb, 'start_by');
    r.headers := leasehold_headers(jb->'headers');
    r.payload := leasehold_payload(job->'payload', max_payload_bytes);
    IF coalesce(jsonb_typeof(uniq), 'null') <> 'null' THEN
        r.unique_key := leasehold_text(jb, 'unique_key', 100, false);
        IF r.unique_key IS NULL OR jsonb_typeof(uniq) <> 'object'
                OR coalesce(jsonb_typeof(uniq->'states'), 'null') <> 'array'
                OR jsonb_array_length(uniq->'states') = 0 THEN
            PERFORM leasehold_refuse('invalid_request',
                'unique: must be an object with its states, and unique_key given');
        END IF;
        r.unique_states := ARRAY(SELECT jsonb_array_elements_text(uniq->'states'));
        IF NOT r.unique_states <@ ARRAY['waiting', 'queued', 'running', 'completed', 'dead',
                                        'cancelled'] THEN
            PERFORM leasehold_refuse('invalid_request', 'unique.states: must be job statuses');
        END IF;
        r.unique_period := leasehold_seconds(uniq->'period_seconds', 'unique.period_seconds',
                                             366 * 86400);
        IF coalesce(jsonb_typeof(uniq->'replace'), 'null') NOT IN ('boolean', 'null') THEN
            PERFORM leasehold_refuse('invalid_request', 'unique.replace: must be true or false');
        END IF;
        r.unique_replace := coalesce((uniq->>'replace')::boolean, false);
    ELSIF coalesce(jsonb_typeof(jb->'unique_key'), 'null') <> 'null' THEN
        PERFORM leasehold_refuse('invalid_request', 'unique_key: given without unique');
    END IF;
    r.parents := '{}';
    r.modes := '{}';
    IF coalesce(jsonb_typeof(jb->'depends_on'), 'null') <> 'null' THEN
        IF jsonb_typeof(jb->'depends_on') <> 'array' OR jsonb_array_length(jb->'depends_on') = 0
                OR jsonb_array_length(jb->'depends_on') > 10000 THEN
            PERFORM leasehold_refuse('invalid_request',
                'depends_on: must be a list of 1 to 10000 [id, on_failure] pairs');
        END IF;
        FOR dep IN SELECT jsonb_array_elements(jb->'depends_on') LOOP
            IF jsonb_typeof(dep) <> 'array' OR jsonb_array_length(dep) <> 2
                    OR coalesce(dep->>1, '') NOT IN ('cancel', 'run') THEN
                PERFORM leasehold_refuse('invalid_request',
                    'depends_on: must be a list of [id, on_failure] pairs');
            END IF;
            r.parents := r.parents
                || leasehold_integer(dep->0, 'depends_on', 1, 9223372036854775807)::bigint;
            r.modes := r.modes || (dep->>1);
        END LOOP;
        IF cardinality(r.parents) <> (SELECT count(DISTINCT p) FROM unnest(r.parents) AS p) THEN
            PERFORM leasehold_refuse('invalid_graph', 'depends_on: names a job twice');
        END IF;
    END IF;
    RETURN r;
END
$$;

-- The job stored under this request's idempotency key (for its kind), if any, and whether
-- it was stored by the same request (else the key is refused: a key means one request).
CREATE FUNCTION leasehold_enqueue_used(r enqueue_request, OUT job_id bigint, OUT same boolean)
LANGUAGE sql STABLE AS $$
    SELECT id, request_hash IS NOT DISTINCT FROM r.request_hash
               OR coalesce(request_hash = ANY(r.also_matches), false)
    FROM jobs WHERE kind = r.kind AND idempotency_key = r.idempotency_key
$$;

-- A refusal, raised (SQLSTATE LH422) or answered as leasehold_enqueue's row.
CREATE FUNCTION leasehold_refusal(refuse boolean, code text, reason text)
RETURNS TABLE (id bigint, created boolean, duplicate boolean, error text, message text)
LANGUAGE plpgsql AS $$
BEGIN
    IF refuse THEN
        PERFORM leasehold_refuse(code, reason);
    END IF;
    RETURN QUERY SELECT NULL::bigint, false, false, code, reason;
END
$$;

-- One job, checked and inserted in the caller's transaction as the coordinator's enqueue
-- does it: (id, created, duplicate) as its answer says them (201; 200 for a key used
-- before; a unique job's duplicate). A refusal is raised (SQLSTATE LH422) or, with
-- refuse false, answered as (NULL, false, false, code, message), the transaction as it
-- was: the checks run in a block of their own, and write nothing (so that block takes no
-- transaction id: a transaction of many enqueues does not pile up subtransactions). The
-- time of the enqueue is the statement's: the caller's transaction may be older.
CREATE FUNCTION leasehold_enqueue(job json, refuse boolean DEFAULT true)
RETURNS TABLE (id bigint, created boolean, duplicate boolean, error text, message text)
LANGUAGE plpgsql SECURITY DEFINER AS $$
#variable_conflict use_column
DECLARE
    now_ timestamptz := statement_timestamp();
    caps enqueue_caps;
    r enqueue_request;
    used bigint;
    same boolean;
    missing bigint;
    dup jobs%ROWTYPE;
    has_dup boolean := false;
    status_ text := 'queued'; waiting integer := 0; depth_ integer := 0;
    blocked bigint; reason text; finished timestamptz;
    parent record;
    made bigint;
    e_code text; e_message text;
BEGIN
    BEGIN
        SELECT * INTO caps FROM enqueue_caps;
        r := leasehold_enqueue_request(job, caps.max_payload_bytes);
        PERFORM leasehold_admit_names(r.kind, r.queue, r.group_key, caps);
        IF r.idempotency_key IS NOT NULL THEN
            SELECT * INTO used, same FROM leasehold_enqueue_used(r);
            IF NOT same THEN
                PERFORM leasehold_refuse('idempotency_conflict', format(
                    'the idempotency key was used for job %s with a different request', used));
            END IF;
        END IF;
        IF used IS NULL AND r.unique_key IS NOT NULL THEN
            -- The store's lock on the fingerprint: enqueues of one unique job take turns.
            PERFORM pg_advisory_xact_lock(hashtextextended(r.unique_key, 1));
            SELECT * INTO dup FROM jobs
            WHERE unique_key = r.unique_key AND status = ANY(r.unique_states)
              AND (r.unique_period IS NULL
                   OR created_at > now_ - make_interval(secs => r.unique_period))
            ORDER BY jobs.id DESC LIMIT 1;
            has_dup := FOUND;
        END IF;
        IF used IS NULL AND NOT has_dup AND cardinality(r.parents) > 0 THEN
            -- Looked at before they are locked (below), so that a refusal locks nothing;
            -- a job's depth never changes.
            SELECT p INTO missing FROM unnest(r.parents) WITH ORDINALITY AS d(p, n)
            WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = d.p) ORDER BY d.n LIMIT 1;
            IF missing IS NOT NULL THEN
                PERFORM leasehold_refuse('invalid_graph', format(
                    'no job has id %s: a job may depend only on jobs that exist', missing));
            END IF;
            SELECT max(depth) + 1 INTO depth_ FROM jobs WHERE jobs.id = ANY(r.parents);
            IF depth_ > 1000 THEN
                PERFORM leasehold_refuse('invalid_graph', format(
                    'the job would sit %s parents deep; at most 1000 are allowed', depth_));
            END IF;
        END IF;
    EXCEPTION WHEN SQLSTATE 'LH422' THEN
        IF refuse THEN
            RAISE;
        END IF;
        GET STACKED DIAGNOSTICS e_code = PG_EXCEPTION_DETAIL, e_message = MESSAGE_TEXT;
        RETURN QUERY SELECT * FROM leasehold_refusal(false, e_code, e_message);
        RETURN;
    END;

    IF used IS NOT NULL THEN
        RETURN QUERY SELECT used, false, false, NULL::text, NULL::text;
        RETURN;
    END IF;
    IF has_dup THEN  -- a unique job's duplicate (DESIGN.md §23): a debounce moves it on
        INSERT INTO enqueue_tally VALUES ('duplicate', r.kind, '');
        IF r.unique_replace AND dup.status IN ('waiting', 'queued') THEN
            UPDATE jobs SET payload = r.payload, run_after = coalesce(r.run_after, now_)
            WHERE jobs.id = dup.id AND status = dup.status;
            IF FOUND AND dup.status = 'queued' THEN
                PERFORM pg_notify('leasehold_jobs', '');
            END IF;
        END IF;
        RETURN QUERY SELECT dup.id, false, true, NULL::text, NULL::text;
        RETURN;
    END IF;

    -- Its parents, locked against a concurrent end (which then waits for this commit, and
    -- carries its end to this job): what they make of it (coordinator/rules/graph.py admit).
    IF cardinality(r.parents) > 0 THEN
        PERFORM 1 FROM jobs WHERE jobs.id = ANY(r.parents) ORDER BY jobs.id FOR UPDATE;
        FOR parent IN
            SELECT d.p, d.m, jobs.status
            FROM unnest(r.parents, r.modes) WITH ORDINALITY AS d(p, m, n)
            LEFT JOIN jobs ON jobs.id = d.p ORDER BY d.n
        LOOP
            IF parent.status IS NULL THEN  -- deleted since it was looked at
                RETURN QUERY SELECT * FROM leasehold_refusal(refuse, 'invalid_graph', format(
                    'no job has id %s: a job may depend only on jobs that exist', parent.p));
                RETURN;
            END IF;
            CONTINUE WHEN parent.status = 'completed'
                OR (parent.m = 'run' AND parent.status IN ('dead', 'cancelled'));
            IF blocked IS NULL AND parent.m = 'cancel' AND parent.status IN ('dead', 'cancelled') THEN
                blocked := parent.p;
                reason := format('cancelled: parent job %s is %s (it depends on it completing)',
                                 parent.p, parent.status);
            END IF;
            waiting := waiting + 1;
        END LOOP;
        IF blocked IS NOT NULL THEN
            status_ := 'cancelled';
            waiting := 0;
            finished := now_;
        ELSIF waiting > 0 THEN
            status_ := 'waiting';
        END IF;
    END IF;

    INSERT INTO jobs (kind, payload, max_attempts, run_after, idempotency_key, request_hash,
                      priority, queue, headers, timeout_seconds, group_key, weight, start_by,
                      status, created_at, waiting_for, depth, blocked_by, unique_key,
                      last_error, finished_at)
    VALUES (r.kind, r.payload, r.max_attempts, coalesce(r.run_after, now_), r.idempotency_key,
            r.request_hash, r.priority, r.queue, r.headers, r.timeout_seconds, r.group_key,
            r.weight, r.start_by, status_, now_, waiting, depth_, blocked, r.unique_key,
            reason, finished)
    ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING jobs.id INTO made;
    IF made IS NULL THEN  -- the key was taken meanwhile, by a transaction that committed
        SELECT * INTO used, same FROM leasehold_enqueue_used(r);
        IF NOT same THEN
            RETURN QUERY SELECT * FROM leasehold_refusal(refuse, 'idempotency_conflict', format(
                'the idempotency key was used for job %s with a different request', used));
            RETURN;
        END IF;
        RETURN QUERY SELECT used, false, false, NULL::text, NULL::text;
        RETURN;
    END IF;
    IF cardinality(r.parents) > 0 THEN
        INSERT INTO job_deps (job_id, parent_id, on_failure)
        SELECT made, d.p, d.m FROM unnest(r.parents, r.modes) AS d(p, m);
        UPDATE jobs SET dependents = dependents + 1 WHERE jobs.id = ANY(r.parents);
    END IF;

    INSERT INTO enqueue_tally VALUES ('enqueued', r.kind, ''), ('jobs:' || status_, r.kind, r.queue);
    IF status_ = 'queued' THEN
        IF r.group_key IS NOT NULL THEN
            INSERT INTO enqueue_tally VALUES ('woken', r.kind, r.group_key);
        END IF;
        PERFORM pg_notify('leasehold_jobs', '');
    END IF;
    RETURN QUERY SELECT made, true, false, NULL::text, NULL::text;
END
$$;

-- A job as it stands for the caller's transaction, read with the caller's rights: after
-- leasehold_enqueue in the same statement (a volatile function's query sees what the
-- statement did before it), so that an enqueue is one round trip.
CREATE FUNCTION leasehold_job(job_id bigint) RETURNS SETOF jobs
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY SELECT * FROM jobs WHERE jobs.id = job_id;
END
$$;

-- What runs as the tables' owner is found in their schema, never through the caller's
-- search_path; and only the roles an operator grants may call it.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION leasehold_enqueue(json, boolean) SET search_path = %I, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION leasehold_enqueue_fold() SET search_path = %I, pg_temp',
                   current_schema());
END
$$;
REVOKE ALL ON FUNCTION leasehold_enqueue(json, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION leasehold_enqueue_fold() FROM PUBLIC;
