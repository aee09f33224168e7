-- 007-leases: which process works on a trace right now (a run of
-- forge-supervisor, or forge-implement/-test/-deploy run by hand on a
-- state).  One row per trace while it is held; lib/store.c takes it in a
-- BEGIN IMMEDIATE transaction, so of several processes exactly one gets it;
-- a holder whose process is gone (same host, pid not alive) is replaced.
-- holder is an opaque id the taker made (a ULID); forge-supervisor passes
-- its own to the phases it runs as FORGE_LEASE.  Times as in 001-core.
CREATE TABLE leases (
	trace_id    TEXT PRIMARY KEY NOT NULL,
	holder      TEXT NOT NULL,
	pid         INTEGER NOT NULL,
	host        TEXT NOT NULL,
	program     TEXT,
	acquired_at TEXT NOT NULL
) STRICT;
