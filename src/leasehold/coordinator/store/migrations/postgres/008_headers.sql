-- Headers travel with a job from its producer to each worker that leases it: a JSON object
-- of strings (e.g. W3C trace context: traceparent, tracestate). NULL when none were given.
ALTER TABLE jobs ADD COLUMN headers TEXT;
