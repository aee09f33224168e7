-- 004-memory.sql - memory on PostgreSQL: what schemas/sql/003 and 008 make
-- on SQLite (memories, their relationships, the embedding cache, signals,
-- patterns, the vector file's stamp), and the tables lib/memory makes as it
-- goes there (the thesaurus, memory_concepts; the word associations,
-- memory_assoc), with the same columns.  Times are bigint milliseconds since
-- the epoch (the recency and decay arithmetic works on them); JSON columns
-- are text checked as JSON; ids compare byte by byte (COLLATE "C").
-- Owned by lib/memory*.c.

-- One row per memory.  seq only grows (an identity); id is the ULID every
-- interface shows.  tsv holds the words of content, context and tags for
-- full-text search (the 'english' configuration: stems, stopwords out);
-- generated, so no trigger keeps it (SQLite's memories_fts needs three).
CREATE TABLE memories (
	seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id              text COLLATE "C" NOT NULL UNIQUE,
	type            text NOT NULL CHECK (type IN ('episodic', 'semantic', 'procedural')),
	content         text NOT NULL CHECK (length(content) > 0),
	context         text NOT NULL DEFAULT '',
	tags            text NOT NULL DEFAULT '[]' CHECK (tags::json IS NOT NULL),
	confidence      double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
	source          text,
	content_hash    text NOT NULL,
	created_at      bigint NOT NULL,
	updated_at      bigint NOT NULL,
	last_accessed   bigint NOT NULL,
	access_count    bigint NOT NULL DEFAULT 0,
	decayed_through bigint,
	episode         text CHECK (episode IS NULL OR episode::json IS NOT NULL),
	frequency       bigint,
	success_rate    double precision,
	trigger_text    text,
	steps           text CHECK (steps IS NULL OR steps::json IS NOT NULL),
	pattern_id      text,
	archived_at     bigint,
	archived_reason text,
	tsv             tsvector GENERATED ALWAYS AS
	                (to_tsvector('english', content || ' ' || context || ' ' || tags)) STORED
);

CREATE INDEX memories_type ON memories (type, archived_at);
CREATE INDEX memories_last_accessed ON memories (last_accessed);
CREATE INDEX memories_source ON memories (source);
CREATE INDEX memories_content_hash ON memories (content_hash);
CREATE INDEX memories_tsv ON memories USING gin (tsv);

-- One row: the vector index's consistency stamp (vec_gen changes whenever a
-- stored vector would change); fts_deferred is SQLite's (always 0 here).
CREATE TABLE memory_meta (
	k            integer PRIMARY KEY CHECK (k = 1),
	db_id        text NOT NULL,
	vec_gen      bigint NOT NULL DEFAULT 0,
	fts_deferred integer NOT NULL DEFAULT 0
);
INSERT INTO memory_meta (k, db_id)
	VALUES (1, substr(md5(random()::text || clock_timestamp()::text), 1, 16));

CREATE FUNCTION forge_memory_vec_gen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE memory_meta SET vec_gen = vec_gen + 1 WHERE k = 1;
	RETURN NULL;
END;
$$;

CREATE TRIGGER memories_ad AFTER DELETE ON memories
	FOR EACH ROW EXECUTE FUNCTION forge_memory_vec_gen();
CREATE TRIGGER memories_au AFTER UPDATE OF content, context, tags ON memories
	FOR EACH ROW EXECUTE FUNCTION forge_memory_vec_gen();

-- Edges between memories; a pair has at most one edge of each kind.
CREATE TABLE memory_relationships (
	id           text COLLATE "C" PRIMARY KEY,
	memory_a_id  text COLLATE "C" NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	memory_b_id  text COLLATE "C" NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	relationship text NOT NULL
	             CHECK (relationship IN ('related', 'similar', 'contradicts', 'extends', 'replaces')),
	similarity   double precision,
	created_at   bigint NOT NULL,
	UNIQUE (memory_a_id, memory_b_id, relationship)
);

CREATE INDEX memory_relationships_b ON memory_relationships (memory_b_id);
CREATE INDEX memory_relationships_kind ON memory_relationships (relationship, similarity);

-- Embeddings from an API, cached by model and text hash (vec: dim float32s,
-- the machine's byte order, as on SQLite).
CREATE TABLE memory_embeddings (
	model      text NOT NULL,
	hash       text NOT NULL,
	dim        integer NOT NULL,
	vec        bytea NOT NULL,
	created_at bigint NOT NULL,
	PRIMARY KEY (model, hash)
);

-- Confidence changes and other signals, for the feedback loops' metrics.
CREATE TABLE memory_signals (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	ts         bigint NOT NULL,
	memory_id  text NOT NULL,
	kind       text NOT NULL,
	delta      double precision,
	note       text
);

CREATE INDEX memory_signals_kind ON memory_signals (kind, ts);

-- Semantic patterns promoted from 3+ similar episodes.
CREATE TABLE patterns (
	id           text COLLATE "C" PRIMARY KEY,
	type         text NOT NULL CHECK (type IN ('success', 'failure', 'approach')),
	trigger_text text NOT NULL,
	pattern      text NOT NULL,
	resolution   text,
	frequency    bigint NOT NULL DEFAULT 1,
	success_rate double precision,
	confidence   double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
	last_seen    bigint NOT NULL,
	created_at   bigint NOT NULL,
	memory_id    text,
	gene_id      text,
	capsule_id   text
);

CREATE INDEX patterns_trigger ON patterns (trigger_text);
CREATE INDEX patterns_frequency ON patterns (frequency);

-- The thesaurus as recall reads it (memory_concepts.c rebuilds it when the
-- built-in or the user's thesaurus changed; id keeps the order of its lines).
CREATE TABLE memory_concepts (
	id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	first text NOT NULL,
	stems text NOT NULL,
	grp   bigint NOT NULL,
	term  text NOT NULL
);
CREATE INDEX memory_concepts_first ON memory_concepts (first);
CREATE INDEX memory_concepts_grp ON memory_concepts (grp);
CREATE TABLE memory_concepts_stamp (stamp text NOT NULL);

-- Word associations learnt from the memories (memory_assoc.c).
CREATE TABLE memory_assoc (
	stem   text NOT NULL,
	other  text NOT NULL,
	surf   text NOT NULL,
	weight double precision NOT NULL
);
CREATE INDEX memory_assoc_stem ON memory_assoc (stem);
CREATE TABLE memory_assoc_stamp (memories bigint NOT NULL);
