-- 003-memory: memories, their relationships, patterns, plan/spec versions
-- (DESIGN.md section 5 "memory"; seed 002 sections 1-2, 9-10).
--
-- Times in this migration are INTEGER milliseconds since the epoch (the
-- recency and decay arithmetic works on them); lib/memory*.c shows them as
-- ISO-8601 text.  JSON columns hold compact JSON text.  Owned by lib/memory*.c.

-- One row per memory.  seq is the stable integer key of the FTS index and of
-- the vector file (<db>.vectors); it only grows (AUTOINCREMENT), so rows newer
-- than a vector file are exactly those with a greater seq.  id is the ULID
-- every interface shows.
CREATE TABLE memories (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	id              TEXT NOT NULL UNIQUE,
	type            TEXT NOT NULL CHECK (type IN ('episodic', 'semantic', 'procedural')),
	content         TEXT NOT NULL CHECK (length(content) > 0),
	context         TEXT NOT NULL DEFAULT '',
	tags            TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
	confidence      REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
	source          TEXT,
	content_hash    TEXT NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	last_accessed   INTEGER NOT NULL,
	access_count    INTEGER NOT NULL DEFAULT 0,
	-- decay (0.05 per whole week unused) has been applied up to this time;
	-- makes consolidation idempotent.
	decayed_through INTEGER,
	-- type-specific fields (NULL for the other types)
	episode         TEXT CHECK (episode IS NULL OR json_valid(episode)),
	frequency       INTEGER,
	success_rate    REAL,
	trigger_text    TEXT,
	steps           TEXT CHECK (steps IS NULL OR json_valid(steps)),
	-- the pattern an episode was promoted into
	pattern_id      TEXT,
	-- soft archive
	archived_at     INTEGER,
	archived_reason TEXT
);

CREATE INDEX memories_type ON memories (type, archived_at);
CREATE INDEX memories_last_accessed ON memories (last_accessed);
CREATE INDEX memories_source ON memories (source);

-- Words of content, context and tags, BM25-ranked (external content).
CREATE VIRTUAL TABLE memories_fts USING fts5 (
	content, context, tags,
	content = 'memories', content_rowid = 'seq',
	tokenize = 'unicode61 remove_diacritics 2'
);

-- One row: the vector file's consistency stamp.  vec_gen changes whenever a
-- stored vector would change (text edited, row deleted); db_id tells this
-- database from another one at the same path.
CREATE TABLE memory_meta (
	k        INTEGER PRIMARY KEY CHECK (k = 1),
	db_id    TEXT NOT NULL,
	vec_gen  INTEGER NOT NULL DEFAULT 0,
	-- 1 only inside a bulk load's own transaction: rows are indexed for
	-- FTS5 in one statement at its end (a trigger per row makes FTS5 flush
	-- per statement, ten times slower); never visible to another connection.
	fts_deferred INTEGER NOT NULL DEFAULT 0
);
INSERT INTO memory_meta (k, db_id) VALUES (1, lower(hex(randomblob(8))));

CREATE TRIGGER memories_ai AFTER INSERT ON memories
WHEN (SELECT fts_deferred FROM memory_meta WHERE k = 1) = 0 BEGIN
	INSERT INTO memories_fts (rowid, content, context, tags)
	VALUES (new.seq, new.content, new.context, new.tags);
END;

CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, content, context, tags)
	VALUES ('delete', old.seq, old.content, old.context, old.tags);
	UPDATE memory_meta SET vec_gen = vec_gen + 1 WHERE k = 1;
END;

CREATE TRIGGER memories_au AFTER UPDATE OF content, context, tags ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, content, context, tags)
	VALUES ('delete', old.seq, old.content, old.context, old.tags);
	INSERT INTO memories_fts (rowid, content, context, tags)
	VALUES (new.seq, new.content, new.context, new.tags);
	UPDATE memory_meta SET vec_gen = vec_gen + 1 WHERE k = 1;
END;

-- Edges between memories: related (> 0.7) and similar (> 0.9) are found on
-- insert; contradicts, extends and replaces come from conflicts, patterns
-- and merges.  A pair has at most one edge of each kind.
CREATE TABLE memory_relationships (
	id           TEXT PRIMARY KEY NOT NULL,
	memory_a_id  TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	memory_b_id  TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	relationship TEXT NOT NULL
	             CHECK (relationship IN ('related', 'similar', 'contradicts', 'extends', 'replaces')),
	similarity   REAL,
	created_at   INTEGER NOT NULL,
	UNIQUE (memory_a_id, memory_b_id, relationship)
) STRICT;

CREATE INDEX memory_relationships_b ON memory_relationships (memory_b_id);
CREATE INDEX memory_relationships_kind ON memory_relationships (relationship, similarity);

-- Embeddings from an API, cached by model and text hash so a text is sent once.
CREATE TABLE memory_embeddings (
	model      TEXT NOT NULL,
	hash       TEXT NOT NULL,
	dim        INTEGER NOT NULL,
	vec        BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (model, hash)
) STRICT, WITHOUT ROWID;

-- Confidence changes and other signals, for the metrics of the feedback loops.
CREATE TABLE memory_signals (
	id         INTEGER PRIMARY KEY,
	ts         INTEGER NOT NULL,
	memory_id  TEXT NOT NULL,
	kind       TEXT NOT NULL,     -- applied|confirmed|dismissed|failed|adjusted|decayed|merged|archived
	delta      REAL,
	note       TEXT
) STRICT;

CREATE INDEX memory_signals_kind ON memory_signals (kind, ts);

-- Semantic patterns promoted from 3+ similar episodes (seed 002 section 5).
CREATE TABLE patterns (
	id           TEXT PRIMARY KEY NOT NULL,
	type         TEXT NOT NULL CHECK (type IN ('success', 'failure', 'approach')),
	trigger_text TEXT NOT NULL,
	pattern      TEXT NOT NULL,
	resolution   TEXT,
	frequency    INTEGER NOT NULL DEFAULT 1,
	success_rate REAL,
	confidence   REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
	last_seen    INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	memory_id    TEXT,            -- the semantic memory that carries it into recall
	gene_id      TEXT,
	capsule_id   TEXT
) STRICT;

CREATE INDEX patterns_trigger ON patterns (trigger_text);
CREATE INDEX patterns_frequency ON patterns (frequency);

-- Every plan (and spec) is kept as an append-only version with a changelog
-- (DESIGN.md section 3, forge-plan).
CREATE TABLE plan_versions (
	id         TEXT PRIMARY KEY NOT NULL,
	trace_id   TEXT NOT NULL,
	kind       TEXT NOT NULL DEFAULT 'plan' CHECK (kind IN ('plan', 'spec')),
	version    INTEGER NOT NULL,
	content    TEXT NOT NULL CHECK (json_valid(content)),
	changelog  TEXT,
	created_at TEXT NOT NULL,
	UNIQUE (trace_id, kind, version)
) STRICT;

CREATE TRIGGER plan_versions_no_update BEFORE UPDATE ON plan_versions
BEGIN
	SELECT RAISE(ABORT, 'plan versions are append-only: UPDATE refused');
END;
