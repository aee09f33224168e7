-- 010-compile-docs: the documents `forge compile` makes (issue 16 part C;
-- seed 004 section 6: no spec is ever overwritten).  Every document a stage
-- produces (intent, flows, contracts, rules, db_schema, delta, test_suite, …)
-- is a row: version 1, 2, … per (project, kind), with the trace of the run
-- that made it.  lib/compile/docs.c reads and writes it; edit mode reads the
-- newest version of each kind for the project.
CREATE TABLE IF NOT EXISTS compile_docs (
	id         TEXT PRIMARY KEY NOT NULL,
	project    TEXT NOT NULL,
	kind       TEXT NOT NULL CHECK (kind GLOB '[a-z]*' AND length(kind) <= 64),
	version    INTEGER NOT NULL CHECK (version >= 1),
	trace_id   TEXT,
	content    TEXT NOT NULL CHECK (json_valid(content)),
	created_at TEXT NOT NULL,
	UNIQUE (project, kind, version)
) STRICT;

CREATE INDEX IF NOT EXISTS compile_docs_by_trace ON compile_docs (trace_id);

CREATE TRIGGER IF NOT EXISTS compile_docs_no_update BEFORE UPDATE ON compile_docs
BEGIN
	SELECT RAISE(ABORT, 'compile documents are append-only: UPDATE refused');
END;

CREATE TRIGGER IF NOT EXISTS compile_docs_no_delete BEFORE DELETE ON compile_docs
BEGIN
	SELECT RAISE(ABORT, 'compile documents are append-only: DELETE refused');
END;
