-- 017-history-order: a trace's events and checkpoints are ordered by when
-- they were written, not by their clock.  Before, the newest checkpoint, a
-- trace's events in order (replay, forge show's timeline, replay --state)
-- and the newest event of a type were picked by ts (then id, a ULID: the
-- same clock).  A clock stepped back between a pause and its resume (an NTP
-- step; a resume on a machine whose clock is behind the one that paused)
-- left what was written before the step the "newest": replay --state
-- rebuilt the state of the plan for a run that had deployed, the timeline
-- put "run completed" above "run started", and a gate lost its reason (the
-- newest phase.completed was another phase's).
--
-- Each table gets seq, INTEGER PRIMARY KEY: the rowid, which SQLite gives
-- a new row as one more than the greatest there, so above every row of the
-- trace already written (an INTEGER PRIMARY KEY, unlike a plain rowid, is
-- kept by VACUUM).  It is the last column: what reads the tables by column
-- position reads them as before.  ts stays what it was, the writer's time, for display and
-- for the time windows (cost per day, pauses).  The rows there now are
-- copied in (trace_id, ts, id) order, the order they were read in before,
-- so a trace's history reads as it did.  SQLite cannot add a primary key in
-- place: each table is made again under its name, with its indexes, its
-- triggers and (event_log) the view events as 009-events-lean made them;
-- the index on (trace_id, ts, id) becomes one on (trace_id, seq).

DROP VIEW events;

CREATE TABLE event_log_new (
	id       TEXT NOT NULL UNIQUE,
	trace_id TEXT NOT NULL,
	ts       TEXT NOT NULL,
	type     TEXT NOT NULL,
	record   TEXT NOT NULL,
	seq      INTEGER PRIMARY KEY
) STRICT;
INSERT INTO event_log_new (id, trace_id, ts, type, record)
	SELECT id, trace_id, ts, type, record FROM event_log ORDER BY trace_id, ts, id;
DROP TABLE event_log;
ALTER TABLE event_log_new RENAME TO event_log;

CREATE INDEX event_log_trace_seq ON event_log (trace_id, seq);
CREATE INDEX event_log_type ON event_log (type);

CREATE VIEW events AS
	SELECT id, trace_id, ts, record ->> '$.source' AS source, record ->> '$.phase' AS phase, type,
	       nullif(record -> '$.payload', 'null') AS payload,
	       record ->> '$.cost.tokens' AS tokens, record ->> '$.cost.usd' AS cost_usd,
	       record ->> '$.duration_ms' AS duration_ms, record
	FROM event_log;

-- Events are facts: append-only.
CREATE TRIGGER events_no_update BEFORE UPDATE ON event_log
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: UPDATE refused');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON event_log
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: DELETE refused');
END;

CREATE TRIGGER events_view_no_update INSTEAD OF UPDATE ON events
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: UPDATE refused');
END;

CREATE TRIGGER events_view_no_delete INSTEAD OF DELETE ON events
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: DELETE refused');
END;

CREATE TRIGGER events_view_insert INSTEAD OF INSERT ON events
BEGIN
	INSERT OR IGNORE INTO event_log (id, trace_id, ts, type, record)
	VALUES (NEW.id, NEW.trace_id, NEW.ts, NEW.type, NEW.record);
END;

CREATE TABLE checkpoints_new (
	id       TEXT NOT NULL UNIQUE,
	trace_id TEXT NOT NULL,
	phase    TEXT,
	status   TEXT,
	ts       TEXT NOT NULL,
	state    TEXT NOT NULL,
	seq      INTEGER PRIMARY KEY
) STRICT;
INSERT INTO checkpoints_new (id, trace_id, phase, status, ts, state)
	SELECT id, trace_id, phase, status, ts, state FROM checkpoints ORDER BY trace_id, ts, id;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_new RENAME TO checkpoints;
CREATE INDEX checkpoints_trace_seq ON checkpoints (trace_id, seq);
