-- 008-memory-stemming: the words of memories are indexed by their stems
-- (FTS5's porter tokenizer over unicode61), so "caching" finds "cached" and
-- "tests" finds "test".  The index is external content over `memories`:
-- dropping and rebuilding it loses nothing, and the triggers of 003-memory
-- keep working (they name the table, not its tokenizer).  A bulk load's
-- deferred indexing (memory_meta.fts_deferred) is never pending between
-- transactions, so the rebuild indexes every row.
DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
	content, context, tags,
	content = 'memories', content_rowid = 'seq',
	tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
