-- 011-live-text: the model's text while a call streams (issue 18: forge tui
-- shows it as it comes, for runs started in any process on the database).
-- One row a live call, made when the call starts, its text replaced as the
-- answer arrives (at most every ~100 ms: lib/store/live.c), deleted when
-- the call ends: the finished reply is in llm_calls.  Not an event: the
-- append-only events table and the filters' output stream never see it.
-- pid and host say who writes it, so a reader can skip the row of a process
-- that died in the call (store_lease_alive()).
CREATE TABLE IF NOT EXISTS live_text (
	call_id    TEXT PRIMARY KEY NOT NULL,
	trace_id   TEXT NOT NULL,
	phase      TEXT,
	model      TEXT,
	pid        INTEGER NOT NULL,
	host       TEXT NOT NULL,
	text       TEXT NOT NULL DEFAULT '',
	started_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
) STRICT;

CREATE INDEX IF NOT EXISTS live_text_by_trace ON live_text (trace_id);
