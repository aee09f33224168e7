-- 006-live-span.sql - whose call a live_text row is, as
-- schemas/sql/013-live-span.sql adds it on SQLite: the sub-agent's span,
-- NULL for the phase's own agent.

ALTER TABLE live_text ADD COLUMN span_id text COLLATE "C";
