/*
 * test_memory_backend.c - lib/memory through its public functions on either
 * backend: the database named by FORGE_TEST_DB (a postgresql:// URI: tests/
 * pg.bats runs it so), else a new SQLite file.  Store, get, update, list
 * with filters, archive, restore, delete, relationships; recall (a query
 * full of tsquery and FTS5 syntax is no error); signals, patterns, stats;
 * consolidation's decay and archive (SQL of each backend) with an injected
 * clock.  Assertions look only at the memories each test made, so one
 * database serves them all.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/forge.h"
#include "core/json.h"
#include "memory/memory.h"
#include "store/db.h"
#include "store/store.h"
#include "unit.h"
#include "memory_fixture.h"

static char dbpath[512];

static jv mk(const char *type, const char *content, const char *tags_json, double conf)
{
	jv o = jv_object();

	o = json_set(o, "type", jv_string(type));
	o = json_set(o, "content", jv_string(content));
	o = json_set(o, "context", jv_string("backend test"));
	if (tags_json)
		o = json_set(o, "tags", json_parse(tags_json, strlen(tags_json)));
	if (conf >= 0)
		o = json_set(o, "confidence", jv_number(conf));
	return o;
}

static jv P(const char *text)
{
	return json_parse(text, strlen(text));
}

/* Whether the JSON array of memories (or of recall results) holds id;
 * consumes list. */
static bool holds(jv list, const char *id)
{
	bool yes = false;

	jv_array_foreach(list, i, e) {
		jv mem = json_has(e, "memory") ? json_get(e, "memory") : jv_copy(e);
		const char *got = json_get_str(mem, "id");

		yes = yes || (got && strcmp(got, id) == 0);
		jv_free(mem);
		jv_free(e);
		(void)i;
	}
	jv_free(list);
	return yes;
}

static void test_crud(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1];
	struct memory_filter f;
	const char *tag[] = { "zebra-tag" };
	jv got, list;

	open_mem(dbpath);
	CHECK(memory_store(a, m, mk("semantic", "quokka caches are flushed before every quokka deploy",
				    "[\"zebra-tag\",\"ops\"]", 0.6)) == 0);
	CHECK(memory_store(b, m, mk("procedural", "run the quokka migration dry first", "[\"ops\"]", -1)) == 0);
	CHECK(memory_get(&got, m, a) == 0);
	CHECK_STR(json_get_str(got, "type"), "semantic");
	CHECK(json_get_num(got, "confidence", -1) == 0.6);
	jv_free(got);
	/* update: content and tags; a missing id */
	CHECK(memory_update(m, a, P("{\"content\":\"quokka caches are flushed after deploy\","
				     "\"tags\":[\"zebra-tag\"]}")) == 0);
	CHECK(memory_get(&got, m, a) == 0);
	CHECK_STR(json_get_str(got, "content"), "quokka caches are flushed after deploy");
	jv_free(got);
	CHECK(memory_update(m, "01JDB3AAAAAAAAAAAAAAAAAAAA", P("{\"content\":\"x\"}")) ==
	      MEMORY_NOT_FOUND);
	/* list: by tag, by type, by confidence */
	memory_filter_init(&f);
	f.tags = tag;
	f.ntags = 1;
	CHECK(memory_list(&list, m, &f) == 0);
	CHECK(holds(jv_copy(list), a) && !holds(jv_copy(list), b));
	jv_free(list);
	memory_filter_init(&f);
	f.type = MEMORY_PROCEDURAL;
	CHECK(memory_list(&list, m, &f) == 0);
	CHECK(holds(jv_copy(list), b) && !holds(jv_copy(list), a));
	jv_free(list);
	memory_filter_init(&f);
	f.min_confidence = 0.55;
	CHECK(memory_list(&list, m, &f) == 0);
	CHECK(holds(jv_copy(list), a) && !holds(jv_copy(list), b));
	jv_free(list);
	/* relationships, archive, restore, delete */
	CHECK(memory_relate(m, a, b, "extends", 0.75) == 0);
	CHECK(memory_relate(m, a, b, "extends", 0.8) == 0);      /* kept: the first edge */
	CHECK(memory_relate(m, a, b, "related", -1) == 0);
	CHECK(memory_relations(&list, m, b) == 0);
	CHECK(jv_array_length(jv_copy(list)) == 2);
	jv e = jv_array_get(jv_copy(list), 0);
	CHECK(json_get_num(e, "similarity", -1) == 0.75);        /* NULL last */
	jv_free(e);
	jv_free(list);
	CHECK(memory_archive(m, a, "testing") == 0 && archived(a));
	CHECK(memory_archive(m, a, "again") == 0);
	memory_filter_init(&f);
	CHECK(memory_list(&list, m, &f) == 0);
	CHECK(!holds(jv_copy(list), a) && holds(jv_copy(list), b));
	jv_free(list);
	CHECK(memory_unarchive(m, a) == 0 && !archived(a));
	CHECK(memory_delete(m, b) == 0);
	CHECK(memory_get(&got, m, b) == 0 && jv_get_kind(got) == JV_KIND_NULL);
	jv_free(got);
	CHECK(memory_relations(&list, m, a) == 0 && jv_array_length(jv_copy(list)) == 0);
	jv_free(list);
	CHECK(memory_delete(m, b) == MEMORY_NOT_FOUND);
	close_mem();
}

static void test_recall(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1];
	static const char *const odd[] = {
		"it's a \"quote\": & | ! \\ back:slash * (wombat) <-> 'x':* NEAR/2 AND OR NOT ^",
		"wombat's & \"burrow\"", "::", "\\", "'", "!&|", "",
	};
	struct memory_query q;
	jv res;

	open_mem(dbpath);
	CHECK(memory_store(a, m, mk("semantic", "wombat burrows need the deadlock detector enabled", NULL, -1)) == 0);
	CHECK(memory_store(b, m, mk("semantic", "the platypus service retries idempotent requests", NULL, -1)) == 0);
	memory_query_init(&q, "wombat deadlock");
	CHECK(memory_recall(&res, m, &q) == 0);
	CHECK(jv_array_length(jv_copy(res)) >= 1);
	jv first = jv_array_get(jv_copy(res), 0);
	jv mem = json_get(first, "memory");
	CHECK_STR(json_get_str(mem, "id"), a);
	jv_free(mem);
	jv_free(first);
	jv_free(res);
	/* with a filter: the type, a tag it lacks */
	memory_query_init(&q, "wombat deadlock");
	q.filter.type = MEMORY_EPISODIC;
	CHECK(memory_recall(&res, m, &q) == 0 && !holds(jv_copy(res), a));
	jv_free(res);
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		memory_query_init(&q, odd[i]);
		CHECK_MSG(memory_recall(&res, m, &q) == 0, "query %zu: %s", i, forge_last_error());
		CHECK(i != 1 || holds(jv_copy(res), a));
		jv_free(res);
	}
	close_mem();
}

static void test_signals_patterns_stats(void)
{
	char a[ULID_LEN + 1];
	struct db_stmt *s;
	double after;
	jv stats, pats;

	open_mem(dbpath);
	CHECK(memory_store(a, m, mk("semantic", "narwhal builds need the cache warmed", "[\"narwhal\"]", 0.5)) == 0);
	CHECK(memory_signal(&after, m, a, MEMORY_SIGNAL_CONFIRMED) == 0 && fabs(after - 0.7) < 1e-9);
	CHECK(memory_adjust(&after, m, a, 5, NULL, NULL) == 0 && after == 1);
	CHECK(memory_signal(&after, m, "01JDB3AAAAAAAAAAAAAAAAAAAA", MEMORY_SIGNAL_APPLIED) == MEMORY_NOT_FOUND);
	/* a pattern used: the running success rate, confidence clamped */
	CHECK(db_prepare(&s, st, "INSERT INTO patterns (id, type, trigger_text, pattern, frequency, "
			 "confidence, last_seen, created_at) VALUES ('PAT-NARWHAL', 'success', 'narwhal', "
			 "'warm it', 1, 0.95, 0, 0)") == 0);
	CHECK(db_step_done(st, s, "pattern") == 0);
	CHECK(memory_pattern_update(m, "PAT-NARWHAL", true, 1) == 0);
	CHECK(memory_pattern_update(m, "PAT-NARWHAL", true, 0) == 0);
	CHECK(memory_pattern_update(m, "PAT-NONE", true, 0) == MEMORY_NOT_FOUND);
	CHECK(memory_patterns(&pats, m, 100) == 0);
	bool found = false;

	jv_array_foreach(pats, i, p) {
		if (json_get_str(p, "id") && strcmp(json_get_str(p, "id"), "PAT-NARWHAL") == 0) {
			found = true;
			CHECK(json_get_num(p, "frequency", -1) == 3);
			/* (0 * 1 + 1) / 2, then (0.5 * 2 + 0) / 3 */
			CHECK(fabs(json_get_num(p, "success_rate", -1) - 1.0 / 3) < 1e-9);
			CHECK(fabs(json_get_num(p, "confidence", -1) - 0.8) < 1e-9);  /* 1, then -0.2 */
		}
		jv_free(p);
		(void)i;
	}
	jv_free(pats);
	CHECK(found);
	CHECK(memory_stats(&stats, m) == 0);
	jv hist = json_get(stats, "confidence_histogram");
	CHECK(json_get_num(hist, "0.9-1.0", 0) >= 1);
	jv_free(hist);
	CHECK(json_get_num(stats, "database_bytes", 0) > 0);
	jv_free(stats);
	close_mem();
}

static void test_consolidate_decay_archive(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1];
	jv r;

	open_mem(dbpath);
	CHECK(memory_store(a, m, mk("semantic", "okapi uses tabs for indentation", NULL, 0.5)) == 0);
	CHECK(memory_store(b, m, mk("semantic", "ibex deploys on fridays never", NULL, 0.25)) == 0);
	clock_ms = T0 + 15 * DAY;         /* two weeks unused: -0.1 */
	CHECK_MSG(memory_consolidate(&r, m, NULL) == 0, "%s", forge_last_error());
	jv_free(r);
	CHECK(fabs(conf_of(a) - 0.4) < 1e-9 && !archived(a));
	CHECK(fabs(conf_of(b) - 0.15) < 1e-9 && archived(b));
	/* idempotent at the same time */
	CHECK(memory_consolidate(&r, m, NULL) == 0);
	jv_free(r);
	CHECK(fabs(conf_of(a) - 0.4) < 1e-9);
	char why[256];

	CHECK(memory_consolidation_due(why, sizeof why, m, 1000, 0) >= 0);
	close_mem();
}

int main(void)
{
	const char *db = getenv("FORGE_TEST_DB");
	char dir[256] = "";

	if (db && *db) {
		snprintf(dbpath, sizeof dbpath, "%s", db);
	} else {
		const char *base = getenv("TMPDIR");

		snprintf(dir, sizeof dir, "%s/test_memory_backend.XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			return 1;
		}
		snprintf(dbpath, sizeof dbpath, "%s/forge.db", dir);
	}
	unsetenv("FORGE_DB");
	RUN(test_crud);
	RUN(test_recall);
	RUN(test_signals_patterns_stats);
	RUN(test_consolidate_decay_archive);
	if (*dir) {
		static const char *const sides[] = { "", "-wal", "-shm", ".vectors", ".vectors.lock" };
		char side[600];

		for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
			snprintf(side, sizeof side, "%s%s", dbpath, sides[i]);
			unlink(side);
		}
		rmdir(dir);
	}
	return unit_done();
}
