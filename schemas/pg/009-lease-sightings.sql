-- 009-lease-sightings.sql - leases.renewals and lease_sightings, as
-- schemas/sql/016-lease-sightings.sql adds them on SQLite: a lease of
-- another host is dead once this host has seen its holder, renewal count
-- and renewed_at unchanged for supervisor.lease_ttl_s by its own clock
-- (seen_at), so no two machines' clocks are compared.

ALTER TABLE leases ADD COLUMN renewals bigint NOT NULL DEFAULT 0;

CREATE TABLE lease_sightings (
	trace_id   text NOT NULL,
	observer   text NOT NULL,
	holder     text NOT NULL,
	renewals   bigint NOT NULL,
	renewed_at text,
	seen_at    text NOT NULL,
	PRIMARY KEY (trace_id, observer)
);
