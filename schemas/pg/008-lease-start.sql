-- 008-lease-start.sql - leases.pid_start, as schemas/sql/015-lease-start.sql
-- adds it on SQLite: the holder's process start identity, "BOOTID/TICKS"
-- (NULL: written before, or unreadable), compared exactly on the holder's
-- host so that a reused pid is not taken for the holder.

ALTER TABLE leases ADD COLUMN pid_start text;
