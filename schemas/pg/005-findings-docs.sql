-- 005-findings-docs.sql - review and test findings with their dismissals,
-- and the documents `forge compile` makes, as schemas/sql/004-findings.sql
-- and schemas/sql/010-compile-docs.sql make them on SQLite: the same
-- columns and rules.  lib/store/findings.c and lib/compile/docs.c read and
-- write both through db.h.  Ids and times compare byte by byte (COLLATE
-- "C"), as in 001-core.

CREATE TABLE findings (
	id               text COLLATE "C" PRIMARY KEY,
	run_id           text COLLATE "C",
	trace_id         text COLLATE "C",
	phase            text NOT NULL DEFAULT 'review',
	layer            text CHECK (layer IS NULL OR layer IN ('static', 'security', 'ai', 'test')),
	severity         text NOT NULL CHECK (severity IN ('info', 'warning', 'error', 'critical')),
	category         text NOT NULL,
	rule             text,
	message          text NOT NULL,
	file             text,
	line             bigint,
	confidence       double precision,
	fixable          integer NOT NULL DEFAULT 0 CHECK (fixable IN (0, 1)),
	fix              text,
	-- stable across runs (rule + file + normalised message), to recognise a
	-- finding a human dismissed before
	fingerprint      text COLLATE "C",
	created_at       text COLLATE "C" NOT NULL,
	dismissed        integer NOT NULL DEFAULT 0 CHECK (dismissed IN (0, 1)),
	dismissed_by     text,
	dismissed_reason text,
	dismissed_at     text COLLATE "C"
);

CREATE INDEX findings_trace ON findings (trace_id, created_at);
CREATE INDEX findings_fingerprint ON findings (fingerprint);
CREATE INDEX findings_dismissed ON findings (dismissed, created_at);
-- One row per (trace, fingerprint), as findings_put()'s single statement
-- keeps it on SQLite: here two writers at once (READ COMMITTED) could both
-- find no row, and this index turns the second insert into nothing (its
-- ON CONFLICT DO NOTHING).  Rows without a trace are not constrained.
CREATE UNIQUE INDEX findings_trace_fingerprint ON findings (trace_id, fingerprint);

-- The documents of forge compile (issue 16 part C): version 1, 2, … per
-- (project, kind), never updated or deleted.
CREATE TABLE compile_docs (
	id         text COLLATE "C" PRIMARY KEY,
	project    text NOT NULL,
	kind       text COLLATE "C" NOT NULL CHECK (kind ~ '^[a-z]' AND length(kind) <= 64),
	version    integer NOT NULL CHECK (version >= 1),
	trace_id   text COLLATE "C",
	content    text NOT NULL CHECK (content::json IS NOT NULL),
	created_at text COLLATE "C" NOT NULL,
	UNIQUE (project, kind, version)
);

CREATE INDEX compile_docs_by_trace ON compile_docs (trace_id);

CREATE TRIGGER compile_docs_no_update BEFORE UPDATE ON compile_docs
	FOR EACH ROW EXECUTE FUNCTION forge_refuse('compile documents are append-only: UPDATE refused');
CREATE TRIGGER compile_docs_no_delete BEFORE DELETE ON compile_docs
	FOR EACH ROW EXECUTE FUNCTION forge_refuse('compile documents are append-only: DELETE refused');
