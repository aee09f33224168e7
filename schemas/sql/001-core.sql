-- 001-core: runs, events, checkpoints (DESIGN.md sections 2, 4 and 5).
--
-- Applied by lib/store.c inside one BEGIN IMMEDIATE transaction together with
-- "PRAGMA user_version = 1"; never edit a released migration, add NNN+1.
-- Timestamps are ISO-8601 UTC text with milliseconds
-- ("2026-11-21T21:30:00.123Z"), so text order is time order.  JSON columns
-- hold compact JSON text.

-- One row per pipeline run; id is the run's trace id.
CREATE TABLE runs (
	id             TEXT PRIMARY KEY NOT NULL,
	task           TEXT NOT NULL,
	repo           TEXT,
	status         TEXT NOT NULL DEFAULT 'pending'
	               CHECK (status IN ('pending', 'running', 'paused',
	                                 'completed', 'failed', 'cancelled')),
	current_phase  TEXT,
	config         TEXT CHECK (config IS NULL OR json_valid(config)),
	started_at     TEXT NOT NULL,
	updated_at     TEXT NOT NULL,
	completed_at   TEXT,
	total_cost_usd REAL NOT NULL DEFAULT 0,
	total_tokens   INTEGER NOT NULL DEFAULT 0,
	error          TEXT
) STRICT;

CREATE INDEX runs_started ON runs (started_at);

-- Every event record any program persisted.  `record` is the exact line as
-- it was read, so a replay gives back the same bytes; the other columns are
-- extracted from it for querying.  No foreign key to runs: a filter run by
-- hand persists events of traces that have no run row.  Not checked with
-- json_valid(): this is the hot insert path and the writer parsed the line.
CREATE TABLE events (
	id          TEXT PRIMARY KEY NOT NULL,
	trace_id    TEXT NOT NULL,
	ts          TEXT NOT NULL,
	source      TEXT,
	phase       TEXT,
	type        TEXT NOT NULL,
	payload     TEXT,
	tokens      INTEGER,
	cost_usd    REAL,
	duration_ms INTEGER,
	record      TEXT NOT NULL
) STRICT;

CREATE INDEX events_trace_ts ON events (trace_id, ts, id);
CREATE INDEX events_type ON events (type);

-- Events are facts: append-only.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: UPDATE refused');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: DELETE refused');
END;

-- The whole pipeline state after a phase (the state record), kept so that
-- `forge resume` continues from the last one.  id is a ULID made by store.c.
CREATE TABLE checkpoints (
	id       TEXT PRIMARY KEY NOT NULL,
	trace_id TEXT NOT NULL,
	phase    TEXT,
	status   TEXT,
	ts       TEXT NOT NULL,
	state    TEXT NOT NULL CHECK (json_valid(state))
) STRICT;

CREATE INDEX checkpoints_trace_ts ON checkpoints (trace_id, ts, id);
