-- 006-gates: human gates of pipeline runs (DESIGN.md section 4; seed 000
-- section 8.2).  A row is written when a gate fires; `forge gate approve|reject`
-- decides it; `forge resume` reads the decision.  Decided rows never change
-- again (trigger), so the table is the audit trail of every human decision.
CREATE TABLE gates (
	id          TEXT PRIMARY KEY NOT NULL,
	trace_id    TEXT NOT NULL,
	gate        TEXT NOT NULL,
	phase       TEXT NOT NULL,
	prompt      TEXT NOT NULL,
	status      TEXT NOT NULL DEFAULT 'pending'
	            CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
	decided_by  TEXT,
	note        TEXT,
	requested_at TEXT NOT NULL,
	expires_at  TEXT,
	decided_at  TEXT
) STRICT;

CREATE INDEX gates_trace ON gates (trace_id, gate);
CREATE INDEX gates_pending ON gates (status) WHERE status = 'pending';

CREATE TRIGGER gates_decided_once BEFORE UPDATE ON gates
WHEN OLD.status <> 'pending'
BEGIN
	SELECT RAISE(ABORT, 'gate already decided');
END;
