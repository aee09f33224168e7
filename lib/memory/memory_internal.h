/*
 * memory_internal.h - what the lib/memory*.c files share; not an interface.
 *
 * The files call each other bottom-up only (no circles; scripts/check-layers
 * checks it): a file calls only the files listed before it.
 *
 *   memory_access.c       recall's accesses recorded beside the database
 *   memory_db.c           the rules, the types, statements, transactions,
 *                         errors, times, hashes, rows as JSON
 *   memory_embed.c        embeddings (local and API, cached)
 *   memory_index.c        the vector file (on PostgreSQL in-process; pgvector)
 *   memory_concepts.c     words as FTS5 stems them, the concept thesaurus
 *   memory_assoc.c        word associations learnt from the memories (PMI)
 *   memory_crud.c         adjust, archive, delete, relationships, listing
 *   memory_recall.c       recall and the relationships of a new memory
 *   memory_store.c        store, get, update, import of one memory
 *   memory_promote.c      episodes promoted to patterns
 *   memory_consolidate.c  merge, promote, decay, archive, conflicts
 *   memory_episode.c      episodes, procedures, outcomes, gate edits
 *   memory_feedback.c     findings and the feedback on them
 *   memory_io.c           export, import, batch stores
 *   memory_stats.c        statistics and the feedback-loop metrics
 *   memory.c              the handle: options, open, free
 */
#ifndef FORGE_MEMORY_INTERNAL_H
#define FORGE_MEMORY_INTERNAL_H

#include <sqlite3.h>

#include "core/buf.h"
#include "memory/memory.h"
#include "store/db.h"
#include "store/store.h"

struct vindex;
struct mem_access;

/* Statements prepared once per handle (the hot paths of recall). */
enum mem_stmt {
	MS_STAMP, MS_VOCAB, MS_FTS, MS_GET, MS_GET_SEQ, MS_TOUCH, MS_SEQ, MS_INSERT, MS_RELATE,
	MS_TEXT, MS_CONCEPT_FIRST, MS_CONCEPT_GROUP, MS_ASSOC, MS_COUNT
};

struct memory {
	struct store *st;
	bool pg;                  /* the store is on PostgreSQL */
	int pgvector;             /* PostgreSQL: the vector extension is there (1), not (0), not asked (-1) */
	int64_t (*now)(void *payload);
	void *now_payload;
	char *embed_provider;     /* NULL = local */
	char *embed_model;
	char *embed_base_url;
	char *embedder_id;        /* "local-fh1:256" or "openai:text-embedding-3-small" */
	int dim;                  /* local dim; for an API, learnt from the first vector */
	double lexw;
	float vec_floor;          /* the vector list: cosines above it */
	char *vec_path;           /* NULL = in-process index only */
	struct vindex *idx;
	char *acc_path;           /* "<db>.accesses" (memory_access.c); NULL = the rows directly */
	struct mem_access *acc;   /* what that file held when last read; NULL = not read */
	struct db_stmt *stmt[MS_COUNT]; /* cached statements (mem_cached) */
	fts5_tokenizer stem_api;  /* FTS5's porter tokenizer (memory_recall.c), */
	Fts5Tokenizer *stem;      /* made on first use; NULL = not yet */
	sqlite3 *stem_db;         /* PostgreSQL: the in-memory SQLite whose FTS5 stems */
	char *thesaurus;          /* memory.thesaurus: the user's groups; NULL = none */
	bool concepts_synced;     /* memory_concepts checked against its sources */
	bool concepts_missing;    /* not current and not buildable here (read-only PostgreSQL) */
	const char *concepts_schema;   /* where it is: "main" or "temp" (static) */
	bool assoc_checked;       /* memory_assoc checked against the memories */
	bool assoc_ready;         /* memory_assoc exists */
	bool rank_ready;          /* forge_bm25 is on the store's connection (memory_recall.c) */
};

/* The columns of a memory row, in the order mem_row_json() reads them. */
#define MEM_COLS "id, type, content, context, tags, confidence, source, created_at, " \
	"updated_at, last_accessed, access_count, episode, frequency, success_rate, " \
	"trigger_text, steps, pattern_id, archived_at, archived_reason, seq, decayed_through"
#define MEM_NCOLS 21

/* memory_access.c */
/* Record that recall returned the n memories ids[] at now: appended to
 * m->acc_path.  1 recorded; 0 not (no file, it is full, or it cannot be
 * written: the caller writes the rows); -1 error. */
int mem_access_record(struct memory *m, const char *const *ids, size_t n, int64_t now);
/* In the write transaction mem_begin opened: the recorded accesses added to
 * their rows and the file emptied (its lines put back on failure). */
int mem_access_fold(struct memory *m);
/* Read the file again when it changed since this handle last read it (once
 * per public read: what mem_access_pending answers from). */
void mem_access_refresh(struct memory *m);
/* The recorded accesses of id not yet in its row: how many, the newest. */
bool mem_access_pending(const struct memory *m, const char *id, long *count, int64_t *last);
void mem_access_free(struct mem_access *acc);   /* NULL-safe */

/* memory_db.c */
int mem_fail(struct memory *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mem_prepare(struct db_stmt **out, struct memory *m, const char *sql);
/* A cached statement, reset and unbound; the caller resets it after use
 * (never finalizes it), so no read transaction stays open. */
int mem_cached(struct db_stmt **out, struct memory *m, enum mem_stmt which, const char *sql);
/* The row's memory as JSON, its recorded accesses (mem_access_pending)
 * added to access_count and last_accessed. */
jv mem_row_json(const struct memory *m, struct db_stmt *s, int first);
jv mem_time_json(int64_t ms);
int mem_time_parse(int64_t *out, jv v);   /* borrows v: ISO string or number of ms */
/* The text that is embedded for a memory: content, context, tags. */
void mem_embed_text(struct buf *out, const char *content, const char *context, const char *tags_json);
/* 32 hex digits (two FNV-1a 64 hashes) of s[0..len). */
void mem_hash_hex(char out[33], const char *s, size_t len);
/* 32 hex digits of s[0..len), 8 bytes a step: the stamp of a large text
 * checked in every process (the thesaurus, 27 KB: ~25K instructions where
 * mem_hash_hex takes 330K).  Not mem_hash_hex's value; not for what is
 * stored as a content hash. */
void mem_stamp_hex(char out[33], const char *s, size_t len);
int mem_begin(struct memory *m);
int mem_commit(struct memory *m);
void mem_rollback(struct memory *m);
int mem_signal_log(struct memory *m, const char *id, const char *kind, double delta,
		   const char *note);
/* The seq of id: 0 on success, MEMORY_NOT_FOUND, -1. */
int mem_seq_of(int64_t *seq, struct memory *m, const char *id);
/* Tags array (borrowed) → compact JSON text, validated: array of strings. */
int mem_tags_text(char **out, jv tags);
/* Whether the database has pgvector (the `vector` extension created in it;
 * asked once per handle); false on SQLite. */
bool mem_pgvector(struct memory *m);

/* memory_embed.c */
/* Embed n texts with the configured embedder into n × *dim floats (malloc'd,
 * normalised); API vectors come from / go to the cache. */
int mem_embed_many(float **out, size_t *dim, struct memory *m, const char *const *texts,
		   const size_t *lens, size_t n);
/* Tokeniser shared with recall's FTS query: calls fn for each lowercased
 * word (letters, digits, '_' and bytes >= 0x80). */
void mem_words(const char *text, size_t len,
	       void (*fn)(const char *w, size_t n, void *payload), void *payload);
bool mem_stopword(const char *w, size_t n);
/* Blank (spaces) the stock phrasing of Forge's own episode and lesson
 * texts and their stock tags in text ("Fixed in attempt 2", "Outcome:
 * fixed", "lesson"): what is left is what the memory is about. */
void mem_unstock(char *text);

/* memory_index.c */
struct vhit {
	int64_t seq;
	float cos;
};
void vindex_free(struct vindex *v);
/* Up to date with the database; rebuilt instead of appended when needed. */
int vindex_sync(struct memory *m, bool *rebuilt);
/* The best n rows by cosine to q (dim floats), type filter (MEMORY_ANY for
 * all); *out malloc'd, best first; *count the number found. */
int vindex_search(struct vhit **out, size_t *count, struct memory *m, const float *q,
		  size_t dim, int type, size_t n);
/* vindex_search in the server (pgvector; memory_index.c says how): 1 done
 * (*out malloc'd, *count found), 0 not here (SQLite, no pgvector, a local
 * embedder, no transaction open, or any failure: the client ranks). */
int vindex_pg_search(struct vhit **out, size_t *count, struct memory *m, const float *q,
		     size_t dim, int type, size_t n);
/* Cosine of q to row seq; false when the row is not in the index. */
bool vindex_cosine(float *cos, struct memory *m, int64_t seq, const float *q, size_t dim);
/* How many reads of the vector file's rows this handle made since it
 * mapped the file (for tests and benches). */
size_t vindex_file_reads(struct memory *m);
/* Rows in the index (0 before the first sync). */
size_t vindex_rows(struct memory *m);
/* {"path","rows","dim","bytes","embedder"} */
jv vindex_info(struct memory *m);

/* memory_concepts.c */
#define MEM_TERM_LEN 48
/* The built-in thesaurus (share/forge/concepts.tsv), a resource. */
#define MEM_CONCEPTS_RESOURCE "concepts.tsv"
typedef void mem_stem_fn(const char *surf, size_t ns, const char *stem, size_t nst, void *payload);
/* Call fn for each word of text as FTS5's porter tokenizer splits it: its
 * lowercased surface form and its stem (words of MEM_TERM_LEN bytes or
 * more left out); stopwords too when keep_stop. */
int mem_stems(struct memory *m, const char *text, size_t len, bool keep_stop, mem_stem_fn *fn,
	      void *payload);
/* The table memory_concepts current with the built-in thesaurus and
 * m->thesaurus: checked once per handle, rebuilt when either changed (a
 * read-only store whose table is not current builds temp.memory_concepts).
 * An unreadable m->thesaurus fails. */
int mem_concepts_sync(struct memory *m);
/* A term a query's concepts add: as written (an FTS5 phrase), its stems
 * (space-separated), its group. */
struct mem_concept {
	char *term;
	char *stems;
	long grp;
};
/* The other terms of every group (at most 12) one of whose terms text holds
 * (its stems consecutive in text's, stopwords included), terms the query
 * holds left out, at most max, taken from the groups in turn: *out
 * malloc'd (mem_concepts_free), *count of them. */
int mem_concepts_expand(struct mem_concept **out, size_t *count, struct memory *m,
			const char *text, size_t max);
void mem_concepts_free(struct mem_concept *c, size_t n);

/* memory_assoc.c */
/* Rebuild the word associations from every active memory (nothing on a
 * read-only store). */
int mem_assoc_build(struct memory *m);
/* Checked once per handle: rebuilt when missing or when the number of
 * active memories (`memories`) moved by more than an eighth (or 16) since
 * it was built. */
int mem_assoc_sync(struct memory *m, size_t memories);
/* A word a query's words bring in: its stem, the form MATCH is given, its
 * score. */
struct mem_assoc {
	char stem[MEM_TERM_LEN];
	char surf[MEM_TERM_LEN];
	double score;
	int support;              /* the query's words that bring it in */
};
/* The associates of at least two of the query's words stems[0..n) (each
 * weighed by idf[i]; 0 leaves a word out), the query's own words left out,
 * the best max first:
 * *out malloc'd (free()), *count of them.  None before the table exists. */
int mem_assoc_expand(struct mem_assoc **out, size_t *count, struct memory *m,
		     const char *const *stems, const double *idf, size_t n, size_t max);

/* memory_recall.c */
/* Relationships of a new memory (called by memory_store before insert):
 * [{"id","similarity","kind","contradicts":bool}]. */
int mem_find_related(jv *out, struct memory *m, const float *vec, size_t dim,
		     const char *content);
/* Whether texts a and b state the same fact, for a merge: false when a
 * number differs, one of them is negated and the other not, or each holds
 * a word (not a stop word) the other lacks -- one word changed is another
 * fact ("indent with tabs" / "with spaces").  One text holding the other's
 * words and more (a restatement, a detail added) is the same fact. */
bool mem_same_fact(const char *a, const char *b);

/* memory_store.c */
/* memory_store(), unless a memory of the same source, type and
 * content_hash (content, context and tags) is there, archived or not:
 * that one is kept as it is, its id in id_out (may be NULL).  *stored says
 * which.  Without a source, always stored.  (A run's own memories: the
 * same lesson of the same run is not stored twice.) */
int mem_store_once(char id_out[ULID_LEN + 1], bool *stored, struct memory *m, jv mem);

#endif
