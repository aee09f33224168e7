-- 003-lease-renewal.sql - leases.renewed_at, as schemas/sql/012-lease-renewal.sql
-- adds it on SQLite: when the holder last renewed its lease (NULL: never, which
-- on another host counts as alive); a lease of another host not renewed for
-- supervisor.lease_ttl_s is dead.

ALTER TABLE leases ADD COLUMN renewed_at text;
