-- 014-json-unchecked (issue 13): llm_calls.request/response and
-- checkpoints.state lose their CHECK (json_valid(...)).  Every writer makes
-- these texts with json_dumps() from a parsed value, so they are valid by
-- construction, and SQLite parsed each one again on insert: a model call's
-- logged request holds the whole conversation so far, so the check cost
-- grew with every turn (5% of a forge-implement session, 17% of its SQLite
-- time).  SQLite cannot drop a CHECK in place: each table is made again
-- under its name, its rows copied in id order, its index remade.
CREATE TABLE llm_calls_new (
	id             INTEGER PRIMARY KEY,
	ts             TEXT NOT NULL,
	trace_id       TEXT,
	phase          TEXT,
	attempt        INTEGER,
	call           INTEGER,
	provider       TEXT NOT NULL,
	model          TEXT,
	request        TEXT,
	response       TEXT,
	input_tokens   INTEGER NOT NULL DEFAULT 0,
	output_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_write_tokens INTEGER NOT NULL DEFAULT 0,
	cost_usd       REAL,
	duration_ms    REAL NOT NULL DEFAULT 0,
	retries        INTEGER NOT NULL DEFAULT 0,
	error          TEXT
) STRICT;
INSERT INTO llm_calls_new (id, ts, trace_id, phase, attempt, call, provider, model, request, response,
			   input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
			   duration_ms, retries, error)
	SELECT id, ts, trace_id, phase, attempt, call, provider, model, request, response,
	       input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
	       duration_ms, retries, error
	FROM llm_calls ORDER BY id;
DROP TABLE llm_calls;
ALTER TABLE llm_calls_new RENAME TO llm_calls;
CREATE INDEX llm_calls_trace ON llm_calls (trace_id, ts);

CREATE TABLE checkpoints_new (
	id       TEXT PRIMARY KEY NOT NULL,
	trace_id TEXT NOT NULL,
	phase    TEXT,
	status   TEXT,
	ts       TEXT NOT NULL,
	state    TEXT NOT NULL
) STRICT;
INSERT INTO checkpoints_new (id, trace_id, phase, status, ts, state)
	SELECT id, trace_id, phase, status, ts, state FROM checkpoints ORDER BY id;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_new RENAME TO checkpoints;
CREATE INDEX checkpoints_trace_ts ON checkpoints (trace_id, ts, id);
