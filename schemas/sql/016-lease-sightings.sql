-- 016-lease-sightings: a lease of another host is judged by whether its
-- renewals are seen to go on, not by its holder's clock.  Before, a lease
-- renewed within supervisor.lease_ttl_s by the holder's clock (renewed_at)
-- compared with the reader's was alive, so a reader whose clock ran 5
-- minutes ahead took a live run over with a plain `forge resume`.
-- leases.renewals counts the holder's renewals (0 when taken).  A
-- lease_sightings row is what a host saw of a trace's lease (its holder,
-- renewal count and renewed_at) and since when, by that host's own clock;
-- the lease is dead for that host once it has seen it unchanged for the
-- TTL.  Only one host's clock is ever compared with itself.  Rows go with
-- the lease (taken over, released).  Times as in 001-core.
ALTER TABLE leases ADD COLUMN renewals INTEGER NOT NULL DEFAULT 0;
CREATE TABLE lease_sightings (
	trace_id   TEXT NOT NULL,
	observer   TEXT NOT NULL,
	holder     TEXT NOT NULL,
	renewals   INTEGER NOT NULL,
	renewed_at TEXT,
	seen_at    TEXT NOT NULL,
	PRIMARY KEY (trace_id, observer)
) STRICT;
