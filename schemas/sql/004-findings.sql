-- 004-findings: review and test findings (seed 000 section 5, DESIGN.md
-- section 3 forge-review), and the human feedback on them (seed 000 section
-- 10.5).  forge-review fills it; `forge findings dismiss` marks a row.
-- Times are ISO-8601 UTC text with milliseconds, like 001-core.
CREATE TABLE findings (
	id               TEXT PRIMARY KEY NOT NULL,
	run_id           TEXT,
	trace_id         TEXT,
	phase            TEXT NOT NULL DEFAULT 'review',
	layer            TEXT CHECK (layer IS NULL OR layer IN ('static', 'security', 'ai', 'test')),
	severity         TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'error', 'critical')),
	category         TEXT NOT NULL,
	rule             TEXT,
	message          TEXT NOT NULL,
	file             TEXT,
	line             INTEGER,
	confidence       REAL,
	fixable          INTEGER NOT NULL DEFAULT 0 CHECK (fixable IN (0, 1)),
	fix              TEXT,
	-- stable across runs (rule + file + normalised message), to recognise a
	-- finding a human dismissed before
	fingerprint      TEXT,
	created_at       TEXT NOT NULL,
	dismissed        INTEGER NOT NULL DEFAULT 0 CHECK (dismissed IN (0, 1)),
	dismissed_by     TEXT,
	dismissed_reason TEXT,
	dismissed_at     TEXT
) STRICT;

CREATE INDEX findings_trace ON findings (trace_id, created_at);
CREATE INDEX findings_fingerprint ON findings (fingerprint);
CREATE INDEX findings_dismissed ON findings (dismissed, created_at);
