-- 002-llm-calls: one row per model call (lib/llm_log.c, DESIGN.md section 5).
--
-- request/response hold the normalised JSON of llm.h with every known API
-- key replaced by "[REDACTED]"; provider wire headers (which carry the key)
-- are never stored.  response is NULL and error set when the call failed.
-- cost_usd is NULL when the model has no price (never a guess).
CREATE TABLE llm_calls (
	id             INTEGER PRIMARY KEY,
	ts             TEXT NOT NULL,
	trace_id       TEXT,
	phase          TEXT,
	attempt        INTEGER,
	call           INTEGER,
	provider       TEXT NOT NULL,
	model          TEXT,
	request        TEXT CHECK (request IS NULL OR json_valid(request)),
	response       TEXT CHECK (response IS NULL OR json_valid(response)),
	input_tokens   INTEGER NOT NULL DEFAULT 0,
	output_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_write_tokens INTEGER NOT NULL DEFAULT 0,
	cost_usd       REAL,
	duration_ms    REAL NOT NULL DEFAULT 0,
	retries        INTEGER NOT NULL DEFAULT 0,
	error          TEXT
) STRICT;

CREATE INDEX llm_calls_trace ON llm_calls (trace_id, ts);
