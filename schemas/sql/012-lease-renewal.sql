-- 012-lease-renewal: a lease's holder renews it while it works
-- (forge-supervisor every supervisor.lease_renew_s, from a thread of its
-- own, whatever its phase says or does not say), so that a lease held on
-- another host whose renewal stopped for supervisor.lease_ttl_s (its machine
-- went down) can be taken by another machine's `forge resume`.  NULL: never
-- renewed (a lease written before this migration, a phase run by hand, a new
-- holder before its first beat), which on another host counts as alive, as
-- before.  Times as in 001-core.
ALTER TABLE leases ADD COLUMN renewed_at TEXT;
