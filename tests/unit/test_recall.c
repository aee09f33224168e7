/*
 * test_recall.c - recall's rank fusion, its bounded confidence and recency
 * boosts, query expansion and stemming (lib/memory/memory_recall.c), on
 * hand-built memories with an injected clock.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "memory/memory.h"
#include "memory/memory_internal.h"
#include "store/store.h"
#include "unit.h"
#include "memory_fixture.h"

/* Store a semantic memory with confidence conf, last accessed at `last`. */
static void put(char id[ULID_LEN + 1], const char *content, double conf, int64_t last)
{
	jv o = jv_object();

	o = json_set(o, "type", jv_string("semantic"));
	o = json_set(o, "content", jv_string(content));
	o = json_set(o, "confidence", jv_number(conf));
	clock_ms = last;
	if (memory_store(id, m, o) < 0) {
		printf("# store: %s\n", forge_last_error());
		exit(1);
	}
	clock_ms = T0;
}

/* Twenty memories about other things, so that words have document
 * frequencies like in a real set. */
static void fillers(void)
{
	static const char *const what[] = { "logging", "README", "linter", "migrations", "fixtures",
					    "release notes", "coverage", "changelog", "docstrings",
					    "benchmarks" };
	char text[128], id[ULID_LEN + 1];

	for (int i = 0; i < 20; i++) {
		if (i % 2)
			snprintf(text, sizeof text, "review %s in every pull request", what[i / 2]);
		else
			snprintf(text, sizeof text, "keep %s short and in one place", what[i / 2]);
		put(id, text, 0.5, T0);
	}
}

/* The ids recall returns for text (limit 10, no_touch), best first, as one
 * space-separated string (malloc'd); expand false leaves out the concept list. */
static char *recall_field(const char *text, bool expand, const char *field)
{
	struct memory_query q;
	struct buf b = BUF_INIT;
	jv out;

	memory_query_init(&q, text);
	q.no_touch = true;
	q.no_expand = !expand;
	if (memory_recall(&out, m, &q) < 0) {
		printf("# recall: %s\n", forge_last_error());
		return xstrdup("(error)");
	}
	jv_array_foreach(out, i, r) {
		jv mem = json_get(r, "memory");

		buf_addf(&b, "%s%s", i ? " " : "", json_get_str(mem, field));
		jv_free(mem);
		jv_free(r);
	}
	jv_free(out);
	return b.buf ? buf_detach(&b, NULL) : xstrdup("");
}

static char *recall_ids(const char *text, bool expand)
{
	return recall_field(text, expand, "id");
}

/* Position (0-based) of id in the space-separated ids, -1 when absent. */
static int pos_of(const char *ids, const char *id)
{
	const char *p = strstr(ids, id);
	int n = 0;

	if (!p)
		return -1;
	for (const char *s = ids; s < p; s++)
		n += *s == ' ';
	return n;
}

/* ---- pure functions ----------------------------------------------------- */

/* Two hand-made lists fuse by rank: being near the top of both beats being
 * first in one only; equal weights make list order irrelevant. */
static void test_rrf_order(void)
{
	/* lexical: a b c d; vector: c a e */
	static const char names[] = "abcde";
	static const int lex[5] = { 1, 2, 3, 4, 0 }, vec[5] = { 2, 0, 1, 0, 3 };
	const double w[2] = { 1, 1 };
	double f[5];
	char order[6];

	for (int i = 0; i < 5; i++) {
		int r[2] = { lex[i], vec[i] };

		f[i] = memory_rrf(r, w, 2);
	}
	for (int i = 0; i < 5; i++) {         /* selection by fused score */
		int best = -1;

		for (int j = 0; j < 5; j++) {
			if (!memchr(order, names[j], (size_t)i) && (best < 0 || f[j] > f[best]))
				best = j;
		}
		order[i] = names[best];
	}
	order[5] = 0;
	CHECK_STR(order, "acbed");
	CHECK(fabs(f[0] - (1.0 / 61 + 1.0 / 62)) < 1e-12);
	int none[2] = { 0, 0 };

	CHECK(memory_rrf(none, w, 2) == 0);
	/* a weight scales its list */
	const double w2[2] = { 0.25, 1 };
	int only_lex[2] = { 1, 0 }, only_vec[2] = { 0, 2 };

	CHECK(memory_rrf(only_vec, w2, 2) > memory_rrf(only_lex, w2, 2));
}

/* The boosts never outweigh one rank step, at any depth, in any list mix. */
static void test_boost_below_a_rank_step(void)
{
	const double w[3] = { 0.4, 0.6, 0.2 };
	double band = memory_rrf_band(0.2);

	for (int l = 0; l < 3; l++) {
		for (int r = 1; r < MEMORY_RRF_DEPTH; r++) {
			for (int other = 0; other <= MEMORY_RRF_DEPTH; other += 25) {
				int better[3] = { other, other, other }, worse[3] = { other, other, other };

				better[l] = r;
				worse[l] = r + 1;
				double hi = memory_relevance(memory_rrf(better, w, 3), band, 0, 0);
				double lo = memory_relevance(memory_rrf(worse, w, 3), band, 1, 1);

				CHECK_MSG(hi > lo, "list %d rank %d vs %d (others %d): %.12g <= %.12g",
					  l, r, r + 1, other, hi, lo);
			}
		}
		/* ranked at the bottom of one list beats absent from it */
		int in[3] = { 0, 0, 0 }, out[3] = { 0, 0, 0 };

		in[l] = MEMORY_RRF_DEPTH;
		CHECK(memory_relevance(memory_rrf(in, w, 3), band, 0, 0) >
		      memory_relevance(memory_rrf(out, w, 3), band, 1, 1));
	}
	/* between equal matches they decide */
	CHECK(memory_relevance(0.01, band, 0.5, 0.9) > memory_relevance(0.01, band, 0.5, 0.5));
	CHECK(memory_relevance(0.01, band, 1, 0.5) > memory_relevance(0.01, band, 0.2, 0.5));
}

/* ---- recall on hand-built memories --------------------------------------- */

/* A confident memory that matches the query less never outranks the one
 * that matches it; one that does not match at all is not returned. */
static void test_confident_irrelevant_never_outranks(void)
{
	char rel[ULID_LEN + 1], near[ULID_LEN + 1], none[ULID_LEN + 1];

	open_mem(":memory:");
	fillers();
	put(rel, "The parser crashes on an empty date string: check the length first", 0.05, T0);
	put(near, "The date picker crashes on an empty string in dark mode", 1.0, T0);
	put(none, "Always run the whole test suite before tagging a release", 1.0, T0);
	char *ids = recall_ids("parser crashes on empty date string", true);

	CHECK_MSG(pos_of(ids, rel) == 0, "ranked: %s (relevant %s)", ids, rel);
	CHECK_MSG(pos_of(ids, near) > 0 || pos_of(ids, near) == -1, "%s", ids);
	CHECK_MSG(pos_of(ids, none) == -1, "a memory with no match was returned: %s", ids);
	free(ids);
	close_mem();
}

/* A memory used today never outranks an old one that matches better. */
static void test_recent_irrelevant_never_outranks(void)
{
	char rel[ULID_LEN + 1], recent[ULID_LEN + 1];

	open_mem(":memory:");
	fillers();
	put(rel, "Docker builds in CI are slow unless the layer cache is mounted", 0.3, T0 - 300 * DAY);
	put(recent, "CI runners were upgraded to a newer kernel", 0.9, T0);
	char *ids = recall_ids("slow docker builds in CI layer cache", true);

	CHECK_MSG(pos_of(ids, rel) == 0, "ranked: %s (relevant %s)", ids, rel);
	CHECK(pos_of(ids, recent) != 0);
	free(ids);
	/* and between two equal matches, the recent and confident one first */
	char a[ULID_LEN + 1], b[ULID_LEN + 1];

	put(a, "zebra quokka", 0.2, T0 - 200 * DAY);
	put(b, "Zebra, quokka.", 0.9, T0);
	ids = recall_ids("zebra quokka", true);
	CHECK_MSG(pos_of(ids, b) == 0 && pos_of(ids, a) == 1, "%s (want %s %s)", ids, b, a);
	free(ids);
	close_mem();
}

/* The rank of id in recall's list `list` for text, 0 when not in it (or
 * not returned). */
static int list_rank(const char *text, const char *id, const char *list)
{
	struct memory_query q;
	int rank = 0;
	jv out;

	memory_query_init(&q, text);
	q.no_touch = true;
	if (memory_recall(&out, m, &q) < 0) {
		printf("# recall: %s\n", forge_last_error());
		return -1;
	}
	jv_array_foreach(out, i, r) {
		jv mem = json_get(r, "memory"), ranks = json_get(r, "ranks");

		if (strcmp(json_get_str(mem, "id"), id) == 0)
			rank = (int)json_get_num(ranks, list, 0);
		jv_free(mem);
		jv_free(ranks);
		jv_free(r);
		(void)i;
	}
	jv_free(out);
	return rank;
}

static int concept_rank(const char *text, const char *id)
{
	return list_rank(text, id, "concepts");
}

/* The concept list finds a memory that says the same in other words, by a
 * thesaurus group ("waiting on each other" is a deadlock). */
static void test_concepts_find_paraphrase(void)
{
	char hit[ULID_LEN + 1], other[ULID_LEN + 1];

	open_mem(":memory:");
	fillers();
	put(hit, "Two transfers locked rows in opposite order and Postgres aborted one: deadlock "
	    "detected", 0.5, T0);
	put(other, "Transactions of the nightly import run in batches of 500 rows", 0.9, T0);
	char *plain = recall_ids("transactions waiting on each other forever", false);
	char *con = recall_ids("transactions waiting on each other forever", true);

	CHECK_MSG(pos_of(con, hit) == 0, "%s (want %s first)", con, hit);
	CHECK_MSG(pos_of(plain, hit) != 0, "first without the thesaurus: %s", plain);
	CHECK_INT(concept_rank("transactions waiting on each other forever", hit), 1);
	free(plain);
	free(con);
	close_mem();
}

/* The seqs whose text recall read (memory_hits' statement), by SQLite's
 * statement trace: each a bound seq, in the order read. */
#define TEXT_SQL "SELECT content, context, tags FROM memories WHERE seq = ?"

struct text_reads {
	long long seq[64];
	int n;
	int alone;              /* reads outside a transaction */
};

static int trace_text(unsigned type, void *ctx, void *p, void *x)
{
	struct text_reads *r = ctx;
	sqlite3_stmt *s = p;
	char *sql;

	(void)x;
	if (type != SQLITE_TRACE_STMT || strcmp(sqlite3_sql(s), TEXT_SQL) != 0)
		return 0;
	r->alone += sqlite3_get_autocommit(sqlite3_db_handle(s)) != 0;
	sql = sqlite3_expanded_sql(s);
	if (sql && r->n < (int)(sizeof r->seq / sizeof r->seq[0]))
		r->seq[r->n++] = strtoll(sql + strlen(TEXT_SQL) - 1, NULL, 10);
	sqlite3_free(sql);
	return 0;
}

/* A recall reads each memory's text once: the coverage of its results
 * reuses what the concept weight read of the best word matches (it read
 * the first three again: 13 reads of 10 memories, ~3% of a search); and
 * inside its read transaction (a statement alone takes and drops
 * SQLite's read lock, three system calls on a file database). */
static void test_recall_reads_each_text_once(void)
{
	struct text_reads r = { .n = 0 };
	char id[ULID_LEN + 1];

	open_mem(":memory:");
	fillers();
	put(id, "Squash the migrations of a release into one file before tagging it", 0.5, T0);
	sqlite3_trace_v2(store_db(st), SQLITE_TRACE_STMT, trace_text, &r);
	char *ids = recall_ids("review migrations before the release", true);

	sqlite3_trace_v2(store_db(st), 0, NULL, NULL);
	CHECK_MSG(pos_of(ids, id) == 0, "%s (want %s first)", ids, id);
	CHECK_MSG(r.n >= 10, "%d texts read (coverage reads every result's)", r.n);
	CHECK_MSG(r.alone == 0, "%d of %d texts read outside the read transaction", r.alone, r.n);
	for (int i = 0; i < r.n; i++)
		for (int k = 0; k < i; k++)
			CHECK_MSG(r.seq[i] != r.seq[k], "memory %lld's text read twice (reads %d and %d of %d)",
				  r.seq[i], k + 1, i + 1, r.n);
	free(ids);
	close_mem();
}

/* Three memories say "flapping" and "healthcheck" together with "quorum
 * ensemble"; a fourth says only "quorum ensemble".  A query worded with the
 * first two finds the fourth through the words the memories associate with
 * them (PMI, learnt on the first recall), which no thesaurus holds. */
static void put_flapping(char bridge[3][ULID_LEN + 1], char target[ULID_LEN + 1])
{
	fillers();
	put(bridge[0], "The service kept flapping because the healthcheck hit a slow quorum ensemble",
	    0.5, T0);
	put(bridge[1], "Flapping replicas: a healthcheck timeout made the quorum ensemble fail", 0.5, T0);
	put(bridge[2], "Healthcheck flapping again after the deploy, quorum ensemble threshold raised",
	    0.5, T0);
	put(target, "Set the quorum ensemble period to 10 s and its failure threshold to 3", 0.5, T0);
}

static void test_assoc_finds_paraphrase(void)
{
	char bridge[3][ULID_LEN + 1], target[ULID_LEN + 1];
	const char *query = "dashboard flapping healthcheck overnight";

	open_mem(":memory:");
	put_flapping(bridge, target);
	char *plain = recall_ids(query, false);
	char *exp = recall_ids(query, true);

	CHECK_MSG(pos_of(plain, target) < 0, "found by its words alone: %s", plain);
	CHECK_MSG(pos_of(exp, target) >= 0, "%s (want %s in it)", exp, target);
	CHECK_MSG(list_rank(query, target, "associations") >= 1, "not in the association list");
	/* the memories that say the query's words stay ahead of it */
	for (int i = 0; i < 3; i++)
		CHECK_MSG(pos_of(exp, bridge[i]) >= 0 && pos_of(exp, bridge[i]) < pos_of(exp, target),
			  "%s: %s not before %s", exp, bridge[i], target);
	free(plain);
	free(exp);
	close_mem();
}

/* An associate of one query word only is that word's context, not the
 * query's subject: two of the query's words must bring it in.  And the
 * associations follow the memories: 20 new ones (more than 16) rebuild
 * them. */
static void test_assoc_needs_two_words(void)
{
	char bridge[3][ULID_LEN + 1], target[ULID_LEN + 1], id[ULID_LEN + 1];

	open_mem(":memory:");
	put_flapping(bridge, target);
	CHECK_INT(list_rank("dashboard flapping overnight", target, "associations"), 0);
	close_mem();
	/* no association before the words go together often enough */
	open_mem(":memory:");
	fillers();
	put(bridge[0], "The service kept flapping because the healthcheck hit a slow quorum ensemble",
	    0.5, T0);
	put(target, "Set the quorum ensemble period to 10 s and its failure threshold to 3", 0.5, T0);
	CHECK_INT(list_rank("dashboard flapping healthcheck overnight", target, "associations"), 0);
	memory_free(m);
	/* a new handle after 20 more memories learns them anew */
	struct memory_options o;

	memory_options_init(&o);
	o.now = fake_now;
	CHECK(memory_open(&m, st, &o) == 0);
	for (int i = 0; i < 20; i++) {
		char text[64];

		snprintf(text, sizeof text, "the changelog of week %d is reviewed", i);
		put(id, i == 0 ? "Healthcheck flapping, the quorum ensemble again" :
		    i == 1 ? "Flapping pods: healthcheck versus quorum ensemble" : text, 0.5, T0);
	}
	CHECK(list_rank("dashboard flapping healthcheck overnight", target, "associations") >= 1);
	close_mem();
}

/* A memory that holds the query's own words stays ahead of one that only
 * holds the terms of its concepts, however confident and recent. */
static void test_concepts_keep_literal_first(void)
{
	char lit[ULID_LEN + 1], syn[ULID_LEN + 1];

	open_mem(":memory:");
	fillers();
	put(lit, "The nightly jobs were waiting on each other for an hour", 0.3, T0 - 100 * DAY);
	put(syn, "A deadlock between the nightly jobs: lock order fixed, no circular wait", 0.95, T0);
	char *ids = recall_ids("jobs waiting on each other", true);

	CHECK_MSG(pos_of(ids, lit) == 0, "%s (want %s first)", ids, lit);
	free(ids);
	/* and when the query's words explain little of it (the concept list
	 * weighs most), the literal match still is not pushed down */
	ids = recall_ids("why were the jobs waiting on each other overnight", true);
	CHECK_MSG(pos_of(ids, lit) == 0, "%s (want %s first)", ids, lit);
	free(ids);
	close_mem();
}

/* A phrase of the thesaurus matches the query's words in order, stopwords
 * included: "memory" alone is not "out of memory". */
static void test_concepts_match_phrases(void)
{
	char oom[ULID_LEN + 1];

	open_mem(":memory:");
	fillers();
	put(oom, "The importer was OOMKilled on big files", 0.5, T0);
	char *ids = recall_ids("the worker ran out of memory", true);

	CHECK_MSG(pos_of(ids, oom) == 0, "%s (want %s)", ids, oom);
	free(ids);
	CHECK_INT(concept_rank("the worker ran out of memory", oom), 1);
	CHECK_INT(concept_rank("memory of the worker", oom), 0);
	close_mem();
}

/* memory.thesaurus adds groups; an edited file is loaded again; a missing
 * one is an error naming it. */
static void test_user_thesaurus(void)
{
	char dir[] = "/tmp/forge-test-thes-XXXXXX", path[128], db[128], id[ULID_LEN + 1];
	struct memory_options o;
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/groups.tsv", dir);
	snprintf(db, sizeof db, "%s/f.db", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("# ours\nzorblax\tfrobnicator | wug\n", f);
	fclose(f);
	memory_options_init(&o);
	o.now = fake_now;
	o.thesaurus = path;
	CHECK(store_open(&st, db) == 0 && memory_open(&m, st, &o) == 0);
	put(id, "The frobnicator broke again after the upgrade", 0.5, T0);
	char *ids = recall_ids("why does zorblax break", true);

	CHECK_MSG(pos_of(ids, id) == 0, "%s (want %s)", ids, id);
	free(ids);
	CHECK_INT(concept_rank("why does quux fail", id), 0);
	close_mem();
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("quux|frobnicator\n", f);
	fclose(f);
	CHECK(store_open(&st, db) == 0 && memory_open(&m, st, &o) == 0);
	ids = recall_ids("why does quux fail", true);
	CHECK_MSG(pos_of(ids, id) == 0, "after the edit: %s (want %s)", ids, id);
	free(ids);
	CHECK_INT(concept_rank("why does quux fail", id), 1);
	close_mem();
	unlink(path);
	CHECK(store_open(&st, db) == 0 && memory_open(&m, st, &o) == 0);
	struct memory_query q;
	jv out;

	memory_query_init(&q, "quux");
	q.no_touch = true;
	CHECK(memory_recall(&out, m, &q) < 0);
	CHECK_MSG(strstr(forge_last_error(), "memory.thesaurus") && strstr(forge_last_error(), path),
		  "%s", forge_last_error());
	jv_free(out);
	close_mem();
	static const char *const ext[] = { "", ".vectors", ".vectors.lock", "-wal", "-shm" };

	for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
		snprintf(path, sizeof path, "%s%s", db, ext[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* A read-only store uses the database's thesaurus table when it is current,
 * and builds its own (in temp) when it is not. */
static void test_concepts_read_only(void)
{
	char dir[] = "/tmp/forge-test-thro-XXXXXX", path[128], db[128], id[ULID_LEN + 1];
	struct memory_options o;
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/f.db", dir);
	snprintf(path, sizeof path, "%s/groups.tsv", dir);
	open_mem(db);
	put(id, "Two transfers aborted with a deadlock detected error", 0.5, T0);
	CHECK_INT(concept_rank("accounts waiting on each other", id), 1);
	close_mem();
	memory_options_init(&o);
	o.now = fake_now;
	CHECK(store_open_readonly(&st, db) == 0 && memory_open(&m, st, &o) == 0);
	CHECK_INT(concept_rank("accounts waiting on each other", id), 1);
	close_mem();
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("quux | transfers aborted\n", f);
	fclose(f);
	o.thesaurus = path;
	CHECK(store_open_readonly(&st, db) == 0 && memory_open(&m, st, &o) == 0);
	CHECK_INT(concept_rank("why quux", id), 1);
	CHECK_INT(concept_rank("accounts waiting on each other", id), 1);
	close_mem();
	static const char *const ext[] = { "", ".vectors", ".vectors.lock", "-wal", "-shm" };

	for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
		snprintf(path, sizeof path, "%s%s", db, ext[i]);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/groups.tsv", dir);
	unlink(path);
	rmdir(dir);
}

/* Words are matched by their stems. */
static void test_stemming(void)
{
	char id[ULID_LEN + 1];

	open_mem(":memory:");
	fillers();
	put(id, "Cached responses went stale after the schema migrated", 0.5, T0);
	char *ids = recall_ids("caching stale responses", false);

	CHECK_MSG(pos_of(ids, id) == 0, "%s", ids);
	free(ids);
	close_mem();
}

/* A database made before migration 008 gets the stemming index (and 009's events). */
/* The thesaurus' stamp (mem_stamp_hex): any byte changed, added or taken
 * away changes it, whatever its place in the 8-byte steps; the same text
 * the same stamp, the same on every machine (a fixed value). */
static void test_stamp_hash(void)
{
	char text[100], a[33], b[33];

	for (size_t i = 0; i < sizeof text; i++)
		text[i] = (char)('a' + i % 26);
	mem_stamp_hex(a, text, sizeof text);
	mem_stamp_hex(b, text, sizeof text);
	CHECK_STR(a, b);
	CHECK_INT((int)strlen(a), 32);
	for (size_t i = 0; i < sizeof text; i++) {
		text[i] ^= 1;
		mem_stamp_hex(b, text, sizeof text);
		CHECK_MSG(strcmp(a, b) != 0, "byte %zu changed, same stamp", i);
		text[i] ^= 1;
	}
	for (size_t n = 0; n < sizeof text; n++) {
		mem_stamp_hex(b, text, n);
		CHECK_MSG(strcmp(a, b) != 0, "%zu bytes, the stamp of 100", n);
	}
	/* trailing zero bytes are not the end of the text */
	mem_stamp_hex(a, "ab", 2);
	mem_stamp_hex(b, "ab\0", 3);
	CHECK(strcmp(a, b) != 0);
	mem_stamp_hex(a, "", 0);
	CHECK_STR(a, "9ca066f1a4ab2eeacd9729efc13f9168");
}

static void test_migration_rebuilds_index(void)
{
	char dir[] = "/tmp/forge-test-recall-XXXXXX", path[128], id[ULID_LEN + 1];

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/f.db", dir);
	open_mem(path);
	put(id, "Cached responses went stale after the schema migrated", 0.5, T0);
	/* back to the old tokenizer and schema version 7 */
	CHECK(store_exec(st, "DROP TABLE memories_fts; CREATE VIRTUAL TABLE memories_fts USING fts5 ("
			 "content, context, tags, content = 'memories', content_rowid = 'seq', "
			 "tokenize = 'unicode61 remove_diacritics 2'); INSERT INTO memories_fts "
			 "(memories_fts) VALUES ('rebuild'); "
			 /* ... and the events table as it was before migration 009 */
			 "DROP VIEW events; DROP TABLE event_log; CREATE TABLE events (id TEXT PRIMARY KEY "
			 "NOT NULL, trace_id TEXT NOT NULL, ts TEXT NOT NULL, source TEXT, phase TEXT, type "
			 "TEXT NOT NULL, payload TEXT, tokens INTEGER, cost_usd REAL, duration_ms INTEGER, "
			 "record TEXT NOT NULL) STRICT; "
			 /* ... and the leases and live_text tables as 007 and 011 made them
			  * (015 and 016 add the holder's start and the sightings) */
			 "ALTER TABLE leases DROP COLUMN renewed_at; ALTER TABLE live_text DROP COLUMN span_id; "
			 "ALTER TABLE leases DROP COLUMN pid_start; ALTER TABLE leases DROP COLUMN renewals; "
			 "DROP TABLE lease_sightings; "
			 "PRAGMA user_version = 7") == 0);
	close_mem();
	open_mem(path);
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	char *ids = recall_ids("caching", false);

	CHECK_MSG(pos_of(ids, id) == 0, "%s", ids);
	free(ids);
	close_mem();
	unlink(path);
	snprintf(path, sizeof path, "%s/f.db.vectors", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/f.db.vectors.lock", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/f.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/f.db-shm", dir);
	unlink(path);
	rmdir(dir);
}

/* A recall at a few dozen memories reads the vector file's rows with one
 * read (memory_index.c: copy_rows), not one per candidate, and ranks as
 * the vectors kept in memory do. */
static void test_recall_reads_vectors_once(void)
{
	char dir[] = "/tmp/forge-test-recall-XXXXXX", path[128], id[ULID_LEN + 1];
	const char *query = "review migrations before the release";
	char *in_memory, *from_file;

	open_mem(":memory:");
	fillers();
	put(id, "Squash the migrations of a release into one file before tagging it", 0.5, T0);
	in_memory = recall_field(query, true, "content");
	close_mem();
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/f.db", dir);
	open_mem(path);
	fillers();
	put(id, "Squash the migrations of a release into one file before tagging it", 0.5, T0);
	close_mem();
	open_mem(path);
	from_file = recall_field(query, true, "content");
	CHECK_MSG(vindex_rows(m) == 21, "%zu rows in the vector file", vindex_rows(m));
	CHECK_MSG(vindex_file_reads(m) == 1, "%zu reads of the vector file", vindex_file_reads(m));
	CHECK_MSG(strncmp(from_file, "Squash", 6) == 0, "%s", from_file);
	/* the same memories in the same order */
	CHECK_MSG(strchr(in_memory, ' ') && !strcmp(in_memory, from_file), "%s / %s", in_memory, from_file);
	free(in_memory);
	free(from_file);
	close_mem();
	static const char *const files[] = { "f.db", "f.db.vectors", "f.db.vectors.lock", "f.db-wal",
					     "f.db-shm", "f.db.accesses" };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		unlink(path);
	}
	CHECK(rmdir(dir) == 0);
}

int main(void)
{
	RUN(test_rrf_order);
	RUN(test_boost_below_a_rank_step);
	RUN(test_confident_irrelevant_never_outranks);
	RUN(test_recent_irrelevant_never_outranks);
	RUN(test_concepts_find_paraphrase);
	RUN(test_concepts_keep_literal_first);
	RUN(test_concepts_match_phrases);
	RUN(test_user_thesaurus);
	RUN(test_concepts_read_only);
	RUN(test_assoc_finds_paraphrase);
	RUN(test_assoc_needs_two_words);
	RUN(test_stemming);
	RUN(test_recall_reads_each_text_once);
	RUN(test_migration_rebuilds_index);
	RUN(test_recall_reads_vectors_once);
	RUN(test_stamp_hash);
	return unit_done();
}
