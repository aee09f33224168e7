-- 007-events-nul.sql - the events view over records that hold U+0000.
-- A record is kept as the line that was read (event_log.record, text), and
-- JSON may escape a NUL character (\u0000); jsonb cannot hold one, so the
-- view's cast failed for every query over it once one such event was
-- stored: `forge metrics` and any `SELECT ... FROM events` of the team's
-- database, for good (event_log is append-only).  The view reads U+0000
-- as U+FFFD; the record itself stays as it was written.

CREATE OR REPLACE VIEW events AS
	SELECT id, trace_id, ts, r ->> 'source' AS source, r ->> 'phase' AS phase, type,
	       nullif(r -> 'payload', 'null'::jsonb)::text AS payload,
	       r #>> '{cost,tokens}' AS tokens, r #>> '{cost,usd}' AS cost_usd,
	       r ->> 'duration_ms' AS duration_ms, record
	FROM (SELECT id, trace_id, ts, type, record,
		     replace(record, '\u0000', '\ufffd')::jsonb AS r FROM event_log) e;
