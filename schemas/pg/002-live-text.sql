-- 002-live-text.sql - the model's text while a call streams, as
-- schemas/sql/011-live-text.sql makes it on SQLite (lib/store/live.c): one
-- row a live call, its text replaced as the answer arrives, deleted when the
-- call ends.  Not an event, so not append-only.

CREATE TABLE live_text (
	call_id    text COLLATE "C" PRIMARY KEY,
	trace_id   text COLLATE "C" NOT NULL,
	phase      text,
	model      text,
	pid        bigint NOT NULL,
	host       text NOT NULL,
	text       text NOT NULL DEFAULT '',
	started_at text COLLATE "C" NOT NULL,
	updated_at text NOT NULL
);

CREATE INDEX live_text_by_trace ON live_text (trace_id);
