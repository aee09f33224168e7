/*
 * memory.h - what Forge has learned: episodic, semantic and procedural
 * memories with confidence, recall, consolidation and human feedback
 * (DESIGN.md section 5 "memory"; seed 002; seed 000 sections 10-11).
 *
 * THE RULES (seed 002 section 9, exactly)
 *   initial confidence  0.5 LLM-extracted, 0.7 human (source "human"),
 *                       0.9 production (source "production")
 *   adjustments         +0.1 applied, +0.2 confirmed by a human,
 *                       -0.2 dismissed by a human, -0.05 per whole week
 *                       without access (decay); always clamped to [0, 1]
 *   archive             confidence below 0.2, or not accessed for 90 days
 *   recall relevance    rank fusion of the word and vector matches (below);
 *                       confidence and recency only break near-ties,
 *                       recency = 0.5^(days since last access / 30)
 *                       (a 30-day half-life: DESIGN.md wins over the seed)
 *   relationships       on insert: cosine > 0.7 "related", > 0.9 "similar"
 *   patterns            3+ similar episodes are promoted with the LLM
 *
 * RECALL.  Four ranked lists of candidates, fused by their ranks, not
 * their raw scores (reciprocal rank fusion: a memory scores the sum over
 * the lists it is in of weight / (60 + its rank there)):
 *   lexical   SQLite FTS5 (BM25, porter stems) over content, context and
 *             tags, the query's 16 rarest words, very common ones left
 *             out; weight w
 *   vector    the candidates of the other lists by their cosine to the
 *             query (not a scan of every vector): a weight-free local
 *             embedding (feature hashing of words, word pairs and character
 *             3-grams into `dim` signed buckets, L2-normalised; cosine above
 *             0.1), or, when an embedding provider is configured
 *             (llm.embeddings: openai or ollama), the API's vectors, cached
 *             in the database by model and text hash; weight 1 - w
 *   concepts  FTS5 again, over the other terms of the groups of the concept
 *             thesaurus (share/forge/concepts.tsv and memory.thesaurus,
 *             memory_concepts.c) whose terms the query holds (at most 24);
 *             weight 0.9 w times a share that is 1 while the best three
 *             word matches hold at most MEMORY_CONCEPT_COVER_LOW of the
 *             query's information (idf, stopwords aside), 0 from
 *             MEMORY_CONCEPT_COVER_HIGH, linear in between: paraphrases
 *             get it, a query that its word matches answer does not
 *   associations  FTS5 over the 6 words the memories associate with at
 *             least two of the query's (memory_assoc.c: pointwise mutual
 *             information over the memories, kept in memory_assoc, rebuilt
 *             by consolidation and when the memories moved by an eighth);
 *             weight 0.15 w times the concepts' share
 *   feedback  FTS5 over the words (at most 8, the query's own aside) that
 *             at least two of the 3 best memories of the lists above share
 *             and that are in another memory too, weighed by those
 *             memories' 1 / rank and the word's idf (pseudo-relevance
 *             feedback: the answer's neighbours' wording finds it; learns
 *             nothing, knows no vocabulary); weight 0.2 w times the
 *             concepts' share
 * w = memory.lexical_weight (0.8).  Each list counts at most its first 100
 * memories that pass the filter.  A memory in none of the lists is never
 * returned.  Confidence and recency add at most 0.9 of the smallest step
 * one rank in one list can make (memory_rrf_band), so they only order
 * memories that their matches cannot tell apart: whatever their
 * confidence and recency, a memory ranked better in one list and no worse
 * in the others stays ahead.  Relationships use the cosine alone.
 *
 * THE VECTOR FILE.  Vectors live in `<db>.vectors` (int8, one row per
 * memory, mmap'd and scanned at memory speed), stamped with the database's
 * id, its vector generation and the greatest memory seq it holds.  Rows
 * added since are appended in place under flock(2); any other change
 * (edited text, deleted rows, another embedder) rebuilds the file from
 * SQLite into a temporary file renamed over it.  SQLite is the truth: the
 * file can be deleted at any time.  Recall reads the rows of its
 * candidates only (the best by BM25 and by the expansions); relationships
 * of a new memory scan the whole file.
 *
 * JSON FORM of a memory (get, list, export, import):
 *   {"id","type","content","context","tags":[…],"confidence","source",
 *    "created_at","updated_at","last_accessed","access_count",
 *    "episode":{…}|absent,"frequency","success_rate","trigger","steps":[…],
 *    "pattern_id","archived_at","archived_reason"}
 * times are ISO-8601 UTC strings ("2026-11-21T21:30:00.123Z"); absent
 * optional fields are left out.
 *
 * ERRORS AND NOT FOUND.  Functions return 0 on success and -1 after
 * forge_error() (a database failure or bad input: the message says which).
 * Functions that take an id return MEMORY_NOT_FOUND (1) when there is no
 * such memory (or finding), without a message.  jv arguments are consumed
 * unless marked "borrows" (json.h); jv results are the caller's.
 */
#ifndef FORGE_MEMORY_H
#define FORGE_MEMORY_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/ids.h"

struct store;
struct config;
struct llm_client;

#define MEMORY_NOT_FOUND 1

/* The longest memory content and source a store takes (bytes). */
#define MEMORY_CONTENT_MAX (256u << 10)
#define MEMORY_SOURCE_MAX 1024u

/* Seed 002 section 9. */
#define MEMORY_CONF_LLM          0.5
#define MEMORY_CONF_HUMAN        0.7
#define MEMORY_CONF_PRODUCTION   0.9
#define MEMORY_DELTA_APPLIED     0.1
#define MEMORY_DELTA_CONFIRMED   0.2
#define MEMORY_DELTA_DISMISSED   (-0.2)
#define MEMORY_DECAY_WEEKLY      0.05
#define MEMORY_ARCHIVE_BELOW     0.2
#define MEMORY_STALE_DAYS        90
#define MEMORY_AUTO_APPLY        0.8
#define MEMORY_RELATED_ABOVE     0.7
#define MEMORY_SIMILAR_ABOVE     0.9
#define MEMORY_PROMOTE_MIN       3
#define MEMORY_HALF_LIFE_DAYS    30.0

/* Recall (RECALL above). */
#define MEMORY_RRF_K             60
#define MEMORY_RRF_DEPTH         100
#define MEMORY_CONCEPT_WEIGHT    0.9
#define MEMORY_ASSOC_WEIGHT      0.15
#define MEMORY_PRF_WEIGHT        0.2
#define MEMORY_CONCEPT_COVER_LOW  0.35
#define MEMORY_CONCEPT_COVER_HIGH 0.5
#define MEMORY_BOOST_CONFIDENCE  0.6
#define MEMORY_BOOST_RECENCY     0.3
#define MEMORY_LOCAL_COSINE_MIN  0.1

#define MEMORY_DAY_MS  86400000LL
#define MEMORY_WEEK_MS (7 * MEMORY_DAY_MS)

enum memory_type {
	MEMORY_ANY = -1,
	MEMORY_EPISODIC = 0,
	MEMORY_SEMANTIC = 1,
	MEMORY_PROCEDURAL = 2,
};

/* "episodic", …; NULL for MEMORY_ANY. */
const char *memory_type_name(enum memory_type t);
/* -1 with a message when name is not a type. */
int memory_type_parse(enum memory_type *out, const char *name);

struct memory_options {
	/* The clock (ms since the epoch); NULL = now_ms().  Tests inject one. */
	int64_t (*now)(void *payload);
	void *now_payload;
	/* Embeddings: provider NULL or "" = the local feature-hashing
	 * embedding; "openai" or "ollama" = llm_embed() with model/base_url. */
	const char *embed_provider;
	const char *embed_model;
	const char *embed_base_url;
	int dim;                  /* local embedding size; 0 = 256 (multiple of 16, 64..2048) */
	double lexical_weight;    /* the lexical list's weight in recall; < 0 = 0.8 */
	/* The vector file; NULL = "<db path>.vectors", "" = none (vectors kept
	 * in this process only; the default for ":memory:" databases). */
	const char *vector_path;
	/* A file of further concept groups for query expansion (memory_concepts.c);
	 * NULL or "" = the built-in thesaurus alone. */
	const char *thesaurus;
};

/* Defaults: local embedding, dim 256, lexical weight 0.8. */
void memory_options_init(struct memory_options *opt);
/* Fill from the configuration (llm.embeddings.*, memory.*); strings are
 * borrowed from cfg, which must outlive the memory handle. */
void memory_options_from_config(struct memory_options *opt, const struct config *cfg);

struct memory;

/* A memory handle over an open store (borrowed; it must outlive the
 * handle).  Nothing is read yet. */
int memory_open(struct memory **out, struct store *st, const struct memory_options *opt);
void memory_free(struct memory *m);   /* NULL-safe */

struct store *memory_store_of(struct memory *m);
int64_t memory_now(struct memory *m);

/* ---- the rules as pure functions (seed 002 section 9) ---------------- */

/* 0.7 for "human", 0.9 for "production", else 0.5. */
double memory_initial_confidence(const char *source);
/* current + delta clamped to [0, 1], rounded to 6 decimals. */
double memory_clamp(double confidence);
/* 0.5^(days/30) with days = (now - last_accessed) / 1 day, 1 when not in
 * the past. */
double memory_recency(int64_t last_accessed_ms, int64_t now_ms);
/* Reciprocal rank fusion: the sum of weights[i] / (MEMORY_RRF_K + ranks[i])
 * over the n lists, rank 1 the best, 0 = not in that list. */
double memory_rrf(const int *ranks, const double *weights, size_t n);
/* The smallest change one rank step makes in a list of weight min_weight,
 * within MEMORY_RRF_DEPTH ranks. */
double memory_rrf_band(double min_weight);
/* fused + band * (0.6 confidence + 0.3 recency): the boosts stay below
 * band, so they never outweigh a rank step (confidence and recency are
 * clamped to [0, 1]). */
double memory_relevance(double fused, double band, double recency, double confidence);
/* Decay for the whole weeks without access since max(last_accessed,
 * decayed_through): the new confidence, and in *through the time decay has
 * now been applied up to (unchanged when less than a week has passed). */
double memory_decay(int64_t *through, double confidence, int64_t last_accessed_ms,
		    int64_t decayed_through_ms, int64_t now_ms);
/* Confidence below 0.2 or no access for more than 90 days. */
bool memory_should_archive(double confidence, int64_t last_accessed_ms, int64_t now_ms);

/* ---- store, get, update, archive, delete ----------------------------- */

/*
 * Store a new memory given in the JSON form (consumes mem): type and
 * content required; confidence defaults from source; id, times and
 * access_count are made here unless `keep_ids` (import).  Finds its
 * relationships to existing memories (> 0.7 related, > 0.9 similar; a
 * "contradicts" edge when a related memory says the same negated: one of
 * the two holds a negation word, and their other words differ by at most
 * one in five).  id_out (may be NULL) receives the id.  -1 with a message
 * naming the field for bad input.  Known API keys (llm_redact_jv) in any
 * of its text are stored redacted, here, in memory_update and in
 * memory_import.
 */
int memory_store(char id_out[ULID_LEN + 1], struct memory *m, jv mem);

/* The memory in JSON form, or jv_null() when absent. */
int memory_get(jv *out, struct memory *m, const char *id);

/* Change content, context, tags, confidence, source, episode, frequency,
 * success_rate, trigger or steps (other keys: -1).  Consumes changes.  When
 * the text (content, context, tags) changes, its related, similar and
 * contradicts edges are found again for the new text, as memory_store
 * finds them; extends, replaces and edges without a similarity stay. */
int memory_update(struct memory *m, const char *id, jv changes);

/* Add delta to the confidence (clamped), recording the signal `kind`
 * ("applied", "confirmed", "dismissed", "adjusted", …) with note (may be
 * NULL).  *after (may be NULL) gets the new confidence. */
int memory_adjust(double *after, struct memory *m, const char *id, double delta,
		  const char *kind, const char *note);

enum memory_signal { MEMORY_SIGNAL_APPLIED, MEMORY_SIGNAL_CONFIRMED, MEMORY_SIGNAL_DISMISSED };
/* The section 9 adjustment for a signal: +0.1, +0.2 or -0.2. */
int memory_signal(double *after, struct memory *m, const char *id, enum memory_signal s);

/* Soft archive (reason may be NULL); archiving twice keeps the first time. */
int memory_archive(struct memory *m, const char *id, const char *reason);
/* Bring an archived memory back (access time reset to now). */
int memory_unarchive(struct memory *m, const char *id);
/* Delete for good, with its relationships. */
int memory_delete(struct memory *m, const char *id);

/* Add an edge (kind: related|similar|contradicts|extends|replaces);
 * similarity < 0 = NULL.  An existing edge of that kind is kept. */
int memory_relate(struct memory *m, const char *a, const char *b, const char *kind,
		  double similarity);
/* Edges touching id: [{"id","other","relationship","similarity","direction":"out"|"in"}]. */
int memory_relations(jv *out, struct memory *m, const char *id);

/* ---- listing --------------------------------------------------------- */

struct memory_filter {
	enum memory_type type;        /* MEMORY_ANY */
	const char *const *tags;      /* every one must be present; may be NULL */
	size_t ntags;
	double min_confidence;        /* 0 */
	bool include_archived;
	bool only_archived;
	int limit;                    /* <= 0: all */
};
void memory_filter_init(struct memory_filter *f);
/* Newest first, JSON form. */
int memory_list(jv *out, struct memory *m, const struct memory_filter *f);

/* ---- recall ------------------------------------------------------------ */

struct memory_query {
	const char *text;             /* what we are looking for (required) */
	struct memory_filter filter;  /* limit <= 0: 10 */
	bool no_touch;                /* do not count this as an access */
	const float *embedding;       /* a precomputed query vector, or NULL */
	size_t embedding_dim;
	bool no_expand;               /* leave out the concept list */
};
void memory_query_init(struct memory_query *q, const char *text);

/*
 * The most relevant memories, best first (RECALL above): [{"memory":{…},
 * "relevance" (the fused score over the best possible one, 0-1),
 * "similarity" ((1 - w) cosine + w coverage: what the memory and the
 * query share, whatever else is stored), "recency","confidence","cosine",
 * "lexical" (bm25 / the query's best bm25: a rank, not a similarity),
 * "coverage" (the share of the query's words, weighed by a smoothed idf
 * and stopwords aside, that the memory's content, context and tags hold),
 * "ranks":{"lexical","vector","concepts": rank or null}}].  Only memories
 * some list found.  Updates access_count and last_accessed of what is
 * returned (unless no_touch).  On error *out is null.
 */
int memory_recall(jv *out, struct memory *m, const struct memory_query *q);

/* ---- embeddings and the vector index ---------------------------------- */

/* The embedding of one text with the configured embedder: *out is dim
 * floats, L2-normalised, malloc'd.  API vectors are cached. */
int memory_embed(float **out, size_t *dim, struct memory *m, const char *text);
/* The local feature-hashing embedding into out[dim] (normalised; all
 * zero for a text without features).  Pure; thread-safe. */
void memory_embed_local(float *out, size_t dim, const char *text, size_t len);
/* Cosine of two normalised vectors. */
float memory_cosine(const float *a, const float *b, size_t dim);
/* Bring the vector file up to date now (recall does it on demand).
 * *rebuilt (may be NULL): whether it was rebuilt rather than appended. */
int memory_index_sync(bool *rebuilt, struct memory *m);

/* ---- episodes, procedures, patterns (seed 002 sections 4-6) ------------ */

/* Record an episode from a phase's or a run's events (an array of event
 * records, consumed): summary, context "<phase> phase: <task>", tags (phase,
 * tools, outcome, error kinds), confidence 0.5, source trace_id.  A run's
 * events (the first outside any phase) make phase "run": the content names
 * the task, the languages, the phases in order, the outcome, each bounce
 * with its findings or failures and the fix, the tools, duration and cost;
 * context "forge run: <task> (C)"; tags add lang:LANG and the findings' rules.
 * A run has one episode: when trace_id's run has one already (an earlier
 * end of it: a failed run resumed to a new end), that one is rewritten
 * for these events -- content, context, tags, episode; its confidence the
 * higher of the two -- and keeps its id.  Nor is a memory of trace_id with
 * the same content, context and tags stored again (the content hash).
 * *updated (may be NULL): whether id_out is such a memory, not a new one. */
int memory_record_episode(char id_out[ULID_LEN + 1], bool *updated, struct memory *m, const char *trace_id,
			  jv events);

/* The lessons of a run (its events, consumed): for each loop.phase_bounce, a
 * semantic memory that says, in words, what the bouncing phase (review or
 * test) found — rule, file:line and message of each finding, or the failing
 * test and its root cause — what fixed it (the next implement attempt's
 * summary), and the outcome; context "implement phase: TASK (a review
 * finding in C)" (or "a test failure"), tags lesson, implement, review|test, lang:LANG, the rules
 * and categories, fixed|unresolved; confidence 0.7 when the phase then
 * passed, else 0.5; source trace_id.  *ids: the new memories' ids.  A
 * bounce's lesson that an earlier end of the run stored (the same phase
 * sent the same attempt back, its n-th time) is rewritten as
 * memory_record_episode says, not stored again, nor is one that says what
 * a lesson of the run says already (the content hash): their ids go to
 * *updated (may be NULL).  Returns how many were stored, or -1. */
int memory_record_lessons(jv *ids, jv *updated, struct memory *m, const char *trace_id, jv events);

/* A procedure: "When TRIGGER:\n1. step…" with steps [{"order","description",
 * "tool"}] (consumed), tags (consumed; array or null), confidence 0.5. */
int memory_learn_procedure(char id_out[ULID_LEN + 1], struct memory *m, const char *trigger,
			   jv steps, const char *context, jv tags);
/* An application of a procedure and its outcome: success_rate is the running
 * mean over frequency applications, confidence +0.1 on success, -0.2 on
 * failure. */
int memory_record_outcome(struct memory *m, const char *id, bool success);

/*
 * PRODUCTION (seed 000 section 10.6, Loop 5).  A production record is an
 * anomaly {"kind":"anomaly","metric","baseline","current","deployment_id"
 * and/or "trace_id",…} or an error {"kind":"error","stack","frequency",
 * "first_seen","affected_users","related_commit",…}
 * (schemas/production.schema.json); forge-deploy adds {"kind":"rollback",
 * "status","reason","environment","commit"} for a deploy it rolled back.
 *
 * normalise: renames the seed's camelCase keys (deploymentId, firstSeen,
 * affectedUsers, relatedCommit, traceId, detectedAt) to snake_case and
 * infers a missing kind (metric: anomaly, stack: error).  Consumes and
 * returns rec.
 * check: 0 when rec (borrowed) is a valid anomaly or error, else -1 with a
 * message naming the field (".baseline: expected number, got string").
 * find_run: the run the record is about, in *trace (malloc'd, NULL when
 * none): trace_id when a run has it, else deployment_id as a trace id or
 * a commit prefix, else related_commit — a commit matched against the
 * newest checkpoint whose deployment or changes name it.  Borrows rec.
 * record: stores rec (consumed) as an episodic memory, source
 * "production", confidence 0.9, whose text says what happened after the
 * deploy of which run (its task, commit and changed files, so a later run
 * on that code recalls it); tags production, the kind and the files;
 * episode {"trace_id","commit","record"}.  trace may be NULL.
 */
jv production_normalise(jv rec);
int production_check(jv rec);
int production_find_run(char **trace, struct store *st, jv rec);
int memory_record_production(char id_out[ULID_LEN + 1], struct memory *m, jv rec, const char *trace);

/* A human approved gate gate_id with edits: a procedural memory (confidence
 * 0.7, source "human", tags ["gate", gate_id, "human-edit"]).  trace_id may
 * be NULL. */
int memory_record_gate_edit(char id_out[ULID_LEN + 1], struct memory *m, const char *gate_id,
			    const char *edits, const char *trace_id);

/* Patterns, highest confidence first. */
int memory_patterns(jv *out, struct memory *m, int limit);
/* A pattern was used: frequency+1, success rate updated when success is 0
 * or 1 (-1 = unknown), confidence +0.1 applied and successful, -0.2 applied
 * and failed. */
int memory_pattern_update(struct memory *m, const char *id, bool applied, int success);

/* ---- consolidation (seed 002 section 10) ------------------------------- */

/*
 * Merge similar memories (semantic and procedural pairs over 0.9: the more
 * confident one keeps both tag sets and +0.05, the other is archived),
 * promote clusters of 3+ similar episodes to patterns with one forced-tool
 * LLM call each (llm NULL: counted as skipped), decay, archive, and resolve
 * conflicts (of two contradicting memories the less confident is archived).
 * Idempotent; runs in short transactions, so other processes keep writing.
 * *report: {"merged","promoted","patterns_updated","decayed","archived",
 * "conflicts","skipped_promotions","errors":[…],"duration_ms"}.
 */
int memory_consolidate(jv *report, struct memory *m, struct llm_client *llm);

/* ---- export / import (JSON lines) -------------------------------------- */

/* One memory per line in the JSON form plus "relationships" (outgoing
 * edges).  Returns the count, or -1. */
long memory_export(struct memory *m, FILE *f, bool include_archived);
/* Read every line of f (name for messages) and import all or nothing: a
 * line that is not a valid memory fails the whole import with "NAME: line
 * N: REASON".  An id already present is skipped.  Up to 2000 lines are
 * linked by similarity to the memories already here (an export's own
 * "relationships" too), larger files by exact copy only
 * (memory_store_batch).  *imported, *skipped (may be NULL) get the counts. */
int memory_import(long *imported, long *skipped, struct memory *m, FILE *f, const char *name);
/* Store an array of memories in the JSON form (consumed) in one
 * transaction, all or nothing, keeping given ids and times (an id already
 * present is skipped) and adding their "relationships"; `link` also finds
 * relationships by similarity (one vector scan per memory, after commit).
 * Either way a memory stored with the same content, context, tags and type
 * as an active one is linked "similar" to it (one query: consolidation
 * merges the copy).  The bulk loader of imports and benchmarks. */
int memory_store_batch(long *stored, long *skipped, struct memory *m, jv items, bool link);

/*
 * When consolidation runs (seed 002 section 10: daily, or sooner when the
 * memories grow).  Each consolidation is recorded as a memory.consolidated
 * event of the trace "memory" whose payload is its report plus "trigger"
 * (why it ran: "manual", or the reason the supervisor started it) and
 * "memories" (how many there were then).
 * last: the latest record's payload with "at" (its time), or null.
 * record: stores a record (consumes report; source: the program).
 * due: 1 with the reason in why (n bytes) when memories were added since
 * the last consolidation (or ever, before the first) and either there are
 * at least new_memories of them or interval_ms has passed since it (or
 * since the oldest memory); 0 when not due; -1 on a database error.
 */
int memory_consolidation_last(jv *out, struct memory *m);
int memory_consolidation_record(struct memory *m, jv report, const char *trigger, const char *source);
int memory_consolidation_due(char *why, size_t n, struct memory *m, int64_t interval_ms, long new_memories);

/* ---- statistics -------------------------------------------------------- */

/* {"total","active","archived","by_type":{…},"average_confidence",
 *  "confidence_histogram":{…},"top_tags":[…],"patterns","relationships",
 *  "database_bytes","vector_file":{…}} */
int memory_stats(jv *out, struct memory *m);

/* ---- findings and human feedback (seed 000 section 10.5) ---------------- */

/*
 * A human dismissed finding id (reason may be NULL): the finding is marked,
 * the semantic memories that match it (not themselves dismissals) lose 0.2
 * confidence, the dismissal is stored as a semantic memory (0.7, source
 * "human"), and an event feedback.human_dismissed is stored under the
 * finding's trace.  *out: {"finding","memory_id","lowered":[{"id","before","after"}],
 * "already_dismissed":bool}.  MEMORY_NOT_FOUND when there is no such finding.
 */
int memory_dismiss_finding(jv *out, struct memory *m, const char *finding_id, const char *reason);

/* ---- feedback-loop metrics (seed 000 section 10.7) --------------------- */

/* Every figure with its basis: {"name":{"value":x|null,"n":count,"note"}}. */
int memory_metrics(jv *out, struct store *st);

/* ---- for the commands (forge memory, findings, metrics) ------------------ */

struct cli_common;

struct memory_cli {
	struct config *cfg;
	struct store *st;
	struct memory *m;
	struct llm_client *llm;
};

/*
 * Load the configuration (repository layer when in one; the model options
 * of the command line as its flags layer), open the database and a memory
 * handle with the configured embedder.  The database is read through a
 * mapping of the file (SQLite's mmap_size), not read(2): fewer page faults
 * for a process that reads a few dozen pages once.  On failure returns -1 after
 * forge_error() and sets *status: FORGE_EXIT_USAGE for a bad configuration
 * or no database to use, FORGE_EXIT_DEPENDENCY when the database failed.
 */
int memory_cli_open(int *status, struct memory_cli *c, const struct cli_common *common);
/* The same for a command that only reads: the database is opened with
 * store_open_readonly(), and recall does not record accesses. */
int memory_cli_open_readonly(int *status, struct memory_cli *c, const struct cli_common *common);
/* memory_cli_open(), or memory_cli_open_readonly() when the database file
 * does not exist (search: nothing to find, nothing to make). */
int memory_cli_open_existing(int *status, struct memory_cli *c, const struct cli_common *common);
/* A model client for the fast model as llm_choose() resolves it (so
 * --model M, a flags layer, makes M the fast model too);
 * -1 with the reason when none can be made (no key, no provider). */
int memory_cli_llm(struct memory_cli *c, const struct cli_common *common);
void memory_cli_close(struct memory_cli *c);   /* NULL-safe members */

#endif
