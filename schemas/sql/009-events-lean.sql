-- 009-events-lean: an event is kept once, in its record, with less to
-- write per insert.
--
-- 001-core kept each event with a copy of its payload and of source, phase,
-- tokens, cost_usd and duration_ms next to the record they came from:
-- ~600 bytes an event, each field bound and stored on the hot insert path.
-- Now the table event_log holds the record and only what is indexed: id
-- (unique: storing an event again is a no-op), trace_id and ts (a trace's
-- events in order: replay, list, the breakers) and type (the metrics count
-- events by type).  The view `events` has 001-core's columns, the others
-- read from the record when a query asks, so queries over events work as
-- before; its payload is the compact JSON text SQLite gives (-> '$.payload'),
-- null when absent or null.  (Generated columns would do the same, but
-- SQLite 3.40 computes them on every insert: a JSON parse per event.)
-- The record is always JSON that SQLite reads: lib/store keeps a line libjq
-- took but RFC 8259 does not (nan, 01, .5, +1) as serialised by libjq.
CREATE TABLE event_log (
	id       TEXT NOT NULL UNIQUE,
	trace_id TEXT NOT NULL,
	ts       TEXT NOT NULL,
	type     TEXT NOT NULL,
	record   TEXT NOT NULL
) STRICT;

-- A record 001-core took that SQLite cannot read would make every query
-- over the view's columns fail: it is rebuilt from its old columns, its
-- text kept as the string "unreadable_record".
INSERT INTO event_log (id, trace_id, ts, type, record)
	SELECT id, trace_id, ts, type,
	       CASE WHEN json_valid(record) THEN record
	            ELSE json_object('kind', 'event', 'id', id, 'trace_id', trace_id, 'ts', ts,
	                             'source', source, 'phase', phase, 'type', type,
	                             'payload', json(CASE WHEN json_valid(payload) THEN payload ELSE '{}' END),
	                             'unreadable_record', record) END
	FROM events ORDER BY rowid;

DROP TABLE events;

CREATE INDEX event_log_trace_ts ON event_log (trace_id, ts, id);
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

-- The same answer through the view.
CREATE TRIGGER events_view_no_update INSTEAD OF UPDATE ON events
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: UPDATE refused');
END;

CREATE TRIGGER events_view_no_delete INSTEAD OF DELETE ON events
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: DELETE refused');
END;

-- A program that writes SQL still persists through the view (by id, as
-- INSERT OR IGNORE: storing an event again is a no-op); the record is what
-- is kept, the view's other columns are read from it.
CREATE TRIGGER events_view_insert INSTEAD OF INSERT ON events
BEGIN
	INSERT OR IGNORE INTO event_log (id, trace_id, ts, type, record)
	VALUES (NEW.id, NEW.trace_id, NEW.ts, NEW.type, NEW.record);
END;
