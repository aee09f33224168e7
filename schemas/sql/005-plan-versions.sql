-- 005-plan-versions: every plan forge-plan makes, kept as an append-only
-- version with a changelog (DESIGN.md section 3, forge-plan; seed 004
-- section 3.2: no spec is ever overwritten).  lib/plans.c reads and writes
-- it; a re-plan of a trace adds version N+1.
--
-- 003-memory already declares the table (kind 'plan' or 'spec', content =
-- the plan JSON) with its UPDATE trigger; IF NOT EXISTS keeps this migration
-- correct whether or not it is there, and it adds what was missing: the
-- refusal of DELETE, and the same shape when 003 does not declare it.
CREATE TABLE IF NOT EXISTS plan_versions (
	id         TEXT PRIMARY KEY NOT NULL,
	trace_id   TEXT NOT NULL,
	kind       TEXT NOT NULL DEFAULT 'plan' CHECK (kind IN ('plan', 'spec')),
	version    INTEGER NOT NULL CHECK (version >= 1),
	content    TEXT NOT NULL CHECK (json_valid(content)),
	changelog  TEXT,
	created_at TEXT NOT NULL,
	UNIQUE (trace_id, kind, version)
) STRICT;

CREATE TRIGGER IF NOT EXISTS plan_versions_no_update BEFORE UPDATE ON plan_versions
BEGIN
	SELECT RAISE(ABORT, 'plan versions are append-only: UPDATE refused');
END;

CREATE TRIGGER IF NOT EXISTS plan_versions_no_delete BEFORE DELETE ON plan_versions
BEGIN
	SELECT RAISE(ABORT, 'plan versions are append-only: DELETE refused');
END;
