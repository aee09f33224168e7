-- 004-memory.sql - PLACEHOLDER on branch pgfind only: the number is the
-- memory tables' (branch pgmem writes the real file under this name).
-- Migrations are applied in an unbroken sequence, so 005-findings-docs.sql
-- needs a 004; when merging, take pgmem's version of this file.
SELECT 1;
