/*
 * test_memory.c - the memory rules, recall ranking, consolidation outcomes
 * and the vector file (lib/memory/memory.h), with an injected clock.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "memory/memory.h"
#include "store/store.h"
#include "unit.h"
#include "memory_fixture.h"

static jv mk(const char *type, const char *content, const char *context, double conf)
{
	jv o = jv_object();

	o = json_set(o, "type", jv_string(type));
	o = json_set(o, "content", jv_string(content));
	o = json_set(o, "context", jv_string(context));
	if (conf >= 0)
		o = json_set(o, "confidence", jv_number(conf));
	return o;
}

static void test_initial_confidence(void)
{
	CHECK(memory_initial_confidence(NULL) == 0.5);
	CHECK(memory_initial_confidence("01JDB2") == 0.5);
	CHECK(memory_initial_confidence("human") == 0.7);
	CHECK(memory_initial_confidence("production") == 0.9);
}

static void test_adjustments(void)
{
	char id[ULID_LEN + 1];
	double after;

	open_mem(":memory:");
	CHECK(memory_store(id, m, mk("semantic", "retry the flaky network test once", "tests", -1)) == 0);
	CHECK(conf_of(id) == 0.5);
	CHECK(memory_signal(&after, m, id, MEMORY_SIGNAL_APPLIED) == 0 && fabs(after - 0.6) < 1e-9);
	CHECK(memory_signal(&after, m, id, MEMORY_SIGNAL_CONFIRMED) == 0 && fabs(after - 0.8) < 1e-9);
	CHECK(memory_signal(&after, m, id, MEMORY_SIGNAL_DISMISSED) == 0 && fabs(after - 0.6) < 1e-9);
	CHECK(memory_adjust(&after, m, id, 5, NULL, NULL) == 0 && after == 1);
	CHECK(memory_adjust(&after, m, id, -7, NULL, NULL) == 0 && after == 0);
	CHECK(memory_signal(&after, m, "01JDB3AAAAAAAAAAAAAAAAAAAA", MEMORY_SIGNAL_APPLIED) == MEMORY_NOT_FOUND);
	close_mem();
}

static void test_recency_half_life(void)
{
	CHECK(memory_recency(T0, T0) == 1);
	CHECK(fabs(memory_recency(T0, T0 + 30 * DAY) - 0.5) < 1e-12);
	CHECK(fabs(memory_recency(T0, T0 + 60 * DAY) - 0.25) < 1e-12);
	CHECK(fabs(memory_relevance(0.5, 0.01, 1, 1) - (0.5 + 0.01 * 0.9)) < 1e-12);
	CHECK(fabs(memory_relevance(0.5, 0.01, 0.5, 0) - (0.5 + 0.01 * 0.15)) < 1e-12);
}

static void test_decay_arithmetic(void)
{
	int64_t through;

	/* less than a week: nothing */
	CHECK(memory_decay(&through, 0.5, T0, 0, T0 + 6 * DAY) == 0.5 && through == 0);
	/* 3 whole weeks and 2 days: -0.15, decayed up to week 3 */
	CHECK(fabs(memory_decay(&through, 0.5, T0, 0, T0 + 23 * DAY) - 0.35) < 1e-9);
	CHECK(through == T0 + 21 * DAY);
	/* applying again at the same time changes nothing (idempotent) */
	CHECK(fabs(memory_decay(&through, 0.35, T0, through, T0 + 23 * DAY) - 0.35) < 1e-9);
	/* clamp at zero */
	CHECK(memory_decay(&through, 0.1, T0, 0, T0 + 70 * DAY) == 0);
	CHECK(memory_should_archive(0.19, T0, T0));
	CHECK(!memory_should_archive(0.2, T0, T0));
	CHECK(!memory_should_archive(0.5, T0, T0 + 90 * DAY));
	CHECK(memory_should_archive(0.5, T0, T0 + 90 * DAY + 1));
}

static jv consolidate(void)
{
	jv r;

	if (memory_consolidate(&r, m, NULL) < 0)
		printf("# consolidate: %s\n", forge_last_error());
	return r;
}

static void test_consolidate_decay_archive(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1], c[ULID_LEN + 1];

	open_mem(":memory:");
	CHECK(memory_store(a, m, mk("semantic", "alpha uses tabs for indentation", "style", 0.5)) == 0);
	CHECK(memory_store(b, m, mk("semantic", "bravo deploys on fridays never", "deploy", 0.25)) == 0);
	CHECK(memory_store(c, m, mk("procedural", "charlie runs make check first", "build", 0.9)) == 0);
	clock_ms = T0 + 15 * DAY;         /* two weeks unused: -0.1 */
	jv r = consolidate();
	CHECK(json_get_num(r, "decayed", -1) == 3);
	CHECK(json_get_num(r, "archived", -1) == 1);   /* bravo: 0.25 - 0.1 < 0.2 */
	jv_free(r);
	CHECK(fabs(conf_of(a) - 0.4) < 1e-9);
	CHECK(fabs(conf_of(c) - 0.8) < 1e-9);
	CHECK(fabs(conf_of(b) - 0.15) < 1e-9 && archived(b) && !archived(a));
	close_mem();
}

static void test_consolidate_thresholds(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1], s[ULID_LEN + 1];

	open_mem(":memory:");
	CHECK(memory_store(a, m, mk("semantic", "delta keeps a changelog", "docs", 0.25)) == 0);
	CHECK(memory_store(b, m, mk("semantic", "echo prefers small commits", "git", 0.9)) == 0);
	clock_ms = T0 + 7 * DAY;          /* one week: a 0.2 stays, b 0.85 */
	jv r = consolidate();
	CHECK(json_get_num(r, "archived", -1) == 0);
	jv_free(r);
	CHECK(!archived(a) && fabs(conf_of(a) - 0.2) < 1e-9);
	r = consolidate();                /* idempotent: nothing more */
	CHECK(json_get_num(r, "decayed", -1) == 0 && json_get_num(r, "archived", -1) == 0);
	jv_free(r);
	clock_ms = T0 + 14 * DAY;         /* a drops to 0.15: archived */
	r = consolidate();
	CHECK(json_get_num(r, "archived", -1) == 1);
	jv_free(r);
	CHECK(archived(a) && !archived(b));
	/* 90 days unused (b kept its confidence high by being accessed once) */
	CHECK(memory_store(s, m, mk("semantic", "foxtrot pins dependencies", "deps", 1)) == 0);
	clock_ms = T0 + 14 * DAY + 90 * DAY + 1;
	r = consolidate();
	jv_free(r);
	CHECK(archived(s));
	close_mem();
}

static void test_merge_similar(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1], e1[ULID_LEN + 1], e2[ULID_LEN + 1];
	jv rels, r, mem;

	open_mem(":memory:");
	jv x = mk("semantic", "Run the database migrations before the integration tests", "ci", 0.6);
	x = json_set(x, "tags", JV_ARRAY(jv_string("ci")));
	CHECK(memory_store(a, m, x) == 0);
	x = mk("semantic", "Run the database migrations before the integration tests.", "ci", 0.5);
	x = json_set(x, "tags", JV_ARRAY(jv_string("db")));
	CHECK(memory_store(b, m, x) == 0);
	CHECK(memory_relations(&rels, m, b) == 0);
	jv first = jv_array_get(rels, 0);

	CHECK_STR(json_get_str(first, "relationship"), "similar");
	jv_free(first);
	/* episodes are records of distinct events: never merged */
	CHECK(memory_store(e1, m, mk("episodic", "review phase for build: tests failed", "review", 0.5)) == 0);
	CHECK(memory_store(e2, m, mk("episodic", "review phase for build: tests failed", "review", 0.5)) == 0);
	r = consolidate();
	CHECK(json_get_num(r, "merged", -1) == 1);
	jv_free(r);
	CHECK(!archived(a) && archived(b) && !archived(e1) && !archived(e2));
	CHECK(fabs(conf_of(a) - 0.65) < 1e-9);
	CHECK(memory_get(&mem, m, a) == 0);
	CHECK(jv_array_length(json_get(mem, "tags")) == 2);
	jv_free(mem);
	r = consolidate();
	CHECK(json_get_num(r, "merged", -1) == 0);
	jv_free(r);
	close_mem();
}

/* Near twins that differ in a number or in one word are two facts, not a
 * duplicate: both stay (hunt38 #4); a restatement is merged and, on a tie,
 * the newer text is the one kept. */
static void test_merge_keeps_distinct_facts(void)
{
	static const char *const pairs[][2] = {
		{ "The deploy health check of the billing service must wait 30 seconds before the first probe",
		  "The deploy health check of the billing service must wait 300 seconds before the first probe" },
		{ "In the billing service, indent the code with tabs before committing, then run the linter and the unit tests",
		  "In the billing service, indent the code with spaces before committing, then run the linter and the unit tests" },
	};
	char a[ULID_LEN + 1], b[ULID_LEN + 1];
	jv r, mem;

	open_mem(":memory:");
	for (size_t i = 0; i < 2; i++) {
		CHECK(memory_store(a, m, mk("procedural", pairs[i][0], "", 0.7)) == 0);
		clock_ms += 1000;
		CHECK(memory_store(b, m, mk("procedural", pairs[i][1], "", 0.7)) == 0);
	}
	r = consolidate();
	CHECK(json_get_num(r, "merged", -1) == 0);
	jv_free(r);
	CHECK(!archived(a) && !archived(b));
	close_mem();

	open_mem(":memory:");
	CHECK(memory_store(a, m, mk("procedural", "Run the database migrations before the integration tests", "", 0.7)) == 0);
	clock_ms += 1000;
	CHECK(memory_store(b, m, mk("procedural", "Always run the database migrations before the integration tests", "", 0.7)) == 0);
	r = consolidate();
	CHECK(json_get_num(r, "merged", -1) == 1);
	jv_free(r);
	CHECK(archived(a) && !archived(b));
	CHECK(memory_get(&mem, m, b) == 0);
	CHECK_STR(json_get_str(mem, "content"), "Always run the database migrations before the integration tests");
	jv_free(mem);
	close_mem();
}

static void test_conflicts(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1];
	jv rels, r;

	open_mem(":memory:");
	CHECK(memory_store(a, m, mk("semantic", "Use tabs for indentation in the C sources of this repository",
				    "style", 0.7)) == 0);
	CHECK(memory_store(b, m, mk("semantic", "Do not use tabs for indentation in the C sources of this "
				    "repository", "style", 0.5)) == 0);
	CHECK(memory_relations(&rels, m, b) == 0);
	bool contra = false;

	jv_array_foreach(rels, i, e) {
		contra = contra || !strcmp(json_get_str(e, "relationship"), "contradicts");
		jv_free(e);
		(void)i;
	}
	jv_free(rels);
	CHECK(contra);
	r = consolidate();
	CHECK(json_get_num(r, "conflicts", -1) == 1);
	jv_free(r);
	CHECK(!archived(a) && archived(b));
	close_mem();
}

/* A negation word alone is no contradiction: two related memories of which
 * one says "no" about another thing are both kept (before: linked
 * "contradicts", and consolidation archived the weaker). */
static void test_no_conflict(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1];
	jv rels, r;
	bool related = false, contra = false;

	open_mem(":memory:");
	CHECK(memory_store(a, m, mk("semantic", "The calc tests run with make check; they need a C compiler "
				    "and bash.", "testing calc", 0.7)) == 0);
	CHECK(memory_store(b, m, mk("semantic", "The calc tests run with make check; they need no network "
				    "access.", "testing calc", 0.5)) == 0);
	CHECK(memory_relations(&rels, m, b) == 0);
	jv_array_foreach(rels, i, e) {
		related = related || !strcmp(json_get_str(e, "relationship"), "related") ||
			  !strcmp(json_get_str(e, "relationship"), "similar");
		contra = contra || !strcmp(json_get_str(e, "relationship"), "contradicts");
		jv_free(e);
		(void)i;
	}
	jv_free(rels);
	CHECK(related && !contra);
	r = consolidate();
	CHECK(json_get_num(r, "conflicts", -1) == 0);
	jv_free(r);
	CHECK(!archived(a) && !archived(b));
	close_mem();
}

/* Whether a and b are linked by kind, in either direction. */
static bool linked(const char *a, const char *b, const char *kind)
{
	jv rels;
	bool found = false;

	if (memory_relations(&rels, m, a) != 0)
		return false;
	jv_array_foreach(rels, i, e) {
		found = found || (!strcmp(json_get_str(e, "other"), b) &&
				  !strcmp(json_get_str(e, "relationship"), kind));
		jv_free(e);
		(void)i;
	}
	jv_free(rels);
	return found;
}

/* A memory whose text is rewritten (a resumed run's episode and lessons)
 * is linked by what it says now: before, it kept the edges found for its
 * first text, to memories it no longer resembles, and none to those it
 * does.  An edge given without a similarity stays. */
static void test_update_relinks(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1], c[ULID_LEN + 1];
	jv ch;

	open_mem(":memory:");
	CHECK(memory_store(a, m, mk("semantic", "Run the database migrations before the integration tests",
				    "ci", 0.6)) == 0);
	CHECK(memory_store(c, m, mk("semantic", "Indent Makefile recipes with a tab, never with spaces",
				    "make", 0.6)) == 0);
	CHECK(memory_store(b, m, mk("semantic", "Run the database migrations before the integration tests.",
				    "ci", 0.5)) == 0);
	CHECK(linked(b, a, "similar") && !linked(b, c, "similar") && !linked(b, c, "related"));
	CHECK(memory_relate(m, b, a, "extends", -1) == 0);
	ch = json_set(jv_object(), "content",
		      jv_string("Indent Makefile recipes with a tab, never with spaces."));
	ch = json_set(ch, "context", jv_string("make"));
	CHECK(memory_update(m, b, ch) == 0);
	CHECK(!linked(b, a, "similar") && !linked(a, b, "similar") && !linked(b, a, "related"));
	CHECK(linked(b, c, "similar"));
	CHECK(linked(b, a, "extends"));
	/* a change that leaves the text alone finds nothing again */
	CHECK(memory_update(m, b, json_set(jv_object(), "confidence", jv_number(0.8))) == 0);
	CHECK(linked(b, c, "similar") && linked(b, a, "extends"));
	close_mem();
}

static const char cassette[] =
	"{\"response\":{\"tool_calls\":[{\"id\":\"t1\",\"name\":\"record_pattern\",\"input\":"
	"{\"type\":\"failure\",\"trigger\":\"When the review phase runs on C changes\","
	"\"pattern\":\"We observe cppcheck warnings about uninitialised variables\","
	"\"resolution\":\"Do initialise locals at declaration\"}}],\"stop_reason\":\"tool_use\"}}\n";

static void test_promote(void)
{
	char ids[4][ULID_LEN + 1], path[] = "/tmp/forge-test-cassette-XXXXXX";
	struct llm_options o;
	struct llm_client *llm = NULL;
	jv r, pats, mem;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	CHECK(write(fd, cassette, sizeof cassette - 1) == (ssize_t)(sizeof cassette - 1));
	close(fd);
	open_mem(":memory:");
	for (int i = 0; i < 3; i++) {
		char text[200];

		snprintf(text, sizeof text, "review phase for \"fix parser\": cppcheck warns about an "
			 "uninitialised variable in parser.c line %d -> failed", 10 + i);
		jv e = mk("episodic", text, "review phase: fix parser", -1);

		e = json_set(e, "episode", json_parse("{\"outcome\":{\"success\":false}}", 29));
		CHECK(memory_store(ids[i], m, e) == 0);
	}
	r = consolidate();                 /* no model: counted as skipped */
	CHECK(json_get_num(r, "skipped_promotions", -1) == 1 && json_get_num(r, "promoted", -1) == 0);
	jv_free(r);
	llm_options_init(&o);
	o.provider = "replay";
	o.cassette = path;
	CHECK(llm_client_new(&llm, &o) == 0);
	CHECK(memory_consolidate(&r, m, llm) == 0);
	CHECK(json_get_num(r, "promoted", -1) == 1);
	jv_free(r);
	CHECK(memory_patterns(&pats, m, 10) == 0);
	CHECK(jv_array_length(jv_copy(pats)) == 1);
	jv p = jv_array_get(pats, 0);

	CHECK_STR(json_get_str(p, "type"), "failure");
	CHECK(json_get_num(p, "frequency", 0) == 3 && json_get_num(p, "success_rate", -1) == 0);
	CHECK(json_get_num(p, "confidence", 0) == 0.5);
	CHECK(memory_get(&mem, m, json_get_str(p, "memory_id")) == 0);
	CHECK_STR(json_get_str(mem, "type"), "semantic");
	jv_free(mem);
	jv_free(p);
	/* again: nothing new (the cassette has no second answer either) */
	CHECK(memory_consolidate(&r, m, llm) == 0);
	CHECK(json_get_num(r, "promoted", -1) == 0);
	jv_free(r);
	/* a fourth similar episode joins the pattern without a model call */
	jv e = mk("episodic", "review phase for \"fix parser\": cppcheck warns about an uninitialised "
		  "variable in parser.c line 99 -> failed", "review phase: fix parser", -1);
	CHECK(memory_store(ids[3], m, e) == 0);
	CHECK(memory_consolidate(&r, m, llm) == 0);
	CHECK(json_get_num(r, "patterns_updated", -1) == 1);
	jv_free(r);
	llm_client_free(llm);
	unlink(path);
	close_mem();
}

static const char *const corpus[][3] = {
	{ "auth", "Authentication uses JWT tokens signed with RS256", "auth implementation" },
	{ "db", "Database uses PostgreSQL with connection pooling through pgbouncer", "database setup" },
	{ "mock", "When tests fail with mock errors add clearAllMocks in afterEach", "jest tests failing" },
	{ "lint", "Run clang-tidy and cppcheck before committing C code", "static analysis of C" },
	{ "deploy", "Production deploys need the canary steps 5 25 100 with health checks", "deployment" },
	{ "flaky", "The network integration test is flaky; rerun it once before reporting", "flaky tests" },
	{ "parse", "parse_date crashes on empty strings; check the length first", "date parsing bug" },
	{ "docs", "Keep the README usage section in step with --help output", "documentation" },
};

static void test_recall_ranking(void)
{
	static const char *const queries[][2] = {
		{ "implementing authentication with tokens", "auth" },
		{ "postgres connection pool settings", "db" },
		{ "jest mock errors in tests", "mock" },
		{ "crash in parse_date", "parse" },
		{ "canary deploy to production", "deploy" },
		{ "cppcheck static analysis", "lint" },
	};
	char ids[8][ULID_LEN + 1];

	open_mem(":memory:");
	for (int i = 0; i < 8; i++)
		CHECK(memory_store(ids[i], m, mk("semantic", corpus[i][1], corpus[i][2], -1)) == 0);
	for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
		struct memory_query mq;
		jv out;
		int want = -1;

		for (int i = 0; i < 8; i++)
			want = strcmp(corpus[i][0], queries[q][1]) ? want : i;
		memory_query_init(&mq, queries[q][0]);
		mq.filter.limit = 3;
		CHECK(memory_recall(&out, m, &mq) == 0);
		jv r0 = jv_array_get(jv_copy(out), 0), top = json_get(r0, "memory");

		jv_free(r0);

		CHECK_MSG(json_get_str(top, "id") && !strcmp(json_get_str(top, "id"), ids[want]),
			  "query '%s' ranked '%s' first", queries[q][0], json_get_str(top, "content"));
		jv_free(top);
		jv_free(out);
	}
	/* access tracking: the returned memories were touched */
	jv mem;

	CHECK(memory_get(&mem, m, ids[0]) == 0 && json_get_num(mem, "access_count", 0) >= 1);
	jv_free(mem);
	close_mem();
}

/*
 * Pseudo-relevance feedback (memory_recall.c, prf_list): a query worded
 * otherwise than its answer finds it through the words its first hits
 * share.  The query shares no word with the answer ("build broke: header
 * for libfoo ...") and each of its words is in one memory only (no
 * association is learnt); the two memories it does find share libfoo,
 * headers and include with the answer.  An irrelevant memory of high
 * confidence that holds one of those words still ranks below the answer.
 */
static void test_recall_feedback(void)
{
	static const char *const mems[][3] = {
		{ "Compilation failed on the ARM runner: the vendored libfoo headers were missing "
		  "from the include path", "ci runner" },
		{ "After the upgrade of the nightly image the libfoo headers were no longer on the "
		  "include path", "nightly image" },
		{ "Build broke: header for libfoo not found; add its include dir to CFLAGS",
		  "makefile" },
		{ "Every source file starts with a licence header", "licensing" },
		{ "The staging database is reset every Sunday night", "staging" },
		{ "Use feature flags for risky changes to checkout", "checkout" },
		{ "Rotate the API keys of the payment provider every quarter", "payments" },
		{ "Dashboards are exported as JSON and committed", "observability" },
		{ "Keep pull requests under 400 lines for review", "review" },
		{ "Cache product images at the CDN for one day", "images" },
	};
	const char *q = "compilation stopped working after the toolchain upgrade";
	char ids[10][ULID_LEN + 1];
	struct memory_query mq;
	int answer = -1, licence = -1;
	jv out;

	open_mem(":memory:");
	for (int i = 0; i < 10; i++)
		CHECK(memory_store(ids[i], m, mk("semantic", mems[i][0], mems[i][1],
						 i == 3 ? 0.95 : 0.5)) == 0);
	memory_query_init(&mq, q);
	mq.filter.limit = 5;
	CHECK(memory_recall(&out, m, &mq) == 0);
	for (int r = 0; r < jv_array_length(jv_copy(out)); r++) {
		jv o = jv_array_get(jv_copy(out), r), mem = json_get(o, "memory");
		const char *id = json_get_str(mem, "id");

		if (id && !strcmp(id, ids[2]))
			answer = r;
		if (id && !strcmp(id, ids[3]))
			licence = r;
		jv_free(mem);
		jv_free(o);
	}
	CHECK_MSG(answer >= 0, "'%s' did not find 'Build broke: header for libfoo ...'", q);
	CHECK_MSG(licence < 0 || licence > answer, "the licence memory (%d) outranked the answer (%d)",
		  licence, answer);
	jv_free(out);
	close_mem();
}

/* The words whose rows recall counted (forge_df's MATCH strings, by
 * SQLite's statement trace), all of them in one string. */
static int trace_df(unsigned type, void *ctx, void *p, void *x)
{
	struct buf *b = ctx;
	char *sql;

	(void)x;
	if (type != SQLITE_TRACE_STMT || !strstr(sqlite3_sql(p), "forge_df("))
		return 0;
	sql = sqlite3_expanded_sql(p);
	if (sql)
		buf_addf(b, "%s\n", sql);
	sqlite3_free(sql);
	return 0;
}

/* The feedback list counts the rows of only the words it can weigh: with
 * three documents, a word of one of them alone is weighed 0 whatever its
 * rows (counting every word of the pool walked ~45K rows at 100K
 * memories, a third of a search).  "vendored" and "arm" are in the first
 * document alone; "libfoo" in all three. */
static void test_recall_feedback_counts_shared_words(void)
{
	static const char *const mems[][2] = {
		{ "Compilation failed on the ARM runner: the vendored libfoo headers were missing "
		  "from the include path", "ci runner" },
		{ "After the upgrade of the nightly image the libfoo headers were no longer on the "
		  "include path", "nightly image" },
		{ "Build broke: header for libfoo not found; add its include dir to CFLAGS",
		  "makefile" },
		{ "The staging database is reset every Sunday night", "staging" },
		{ "Keep pull requests under 400 lines for review", "review" },
	};
	struct buf counted = BUF_INIT;
	struct memory_query mq;
	char id[ULID_LEN + 1];
	jv out;

	open_mem(":memory:");
	for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
		CHECK(memory_store(id, m, mk("semantic", mems[i][0], mems[i][1], 0.5)) == 0);
	memory_query_init(&mq, "compilation stopped working after the toolchain upgrade");
	mq.filter.limit = 5;
	sqlite3_trace_v2(store_db(st), SQLITE_TRACE_STMT, trace_df, &counted);
	CHECK(memory_recall(&out, m, &mq) == 0);
	sqlite3_trace_v2(store_db(st), 0, NULL, NULL);
	CHECK_MSG(counted.buf && strstr(counted.buf, "\"libfoo\""), "the feedback words were not counted: %s",
		  counted.buf ? counted.buf : "(none)");
	CHECK_MSG(counted.buf && !strstr(counted.buf, "\"vendored\"") && !strstr(counted.buf, "\"arm\""),
		  "a word of one feedback document alone was counted: %s", counted.buf ? counted.buf : "");
	buf_release(&counted);
	jv_free(out);
	close_mem();
}

/* Rows matching phrase "term" (the document frequency count_df gives). */
static int64_t df_of(const char *term)
{
	sqlite3_stmt *s = NULL;
	char q[64];
	int64_t n = -1;

	snprintf(q, sizeof q, "\"%s\"", term);
	if (sqlite3_prepare_v2(store_db(st), "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
			       -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_text(s, 1, q, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(s) == SQLITE_ROW)
			n = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	return n;
}

/*
 * Recall's forge_bm25 (memory_recall.c) gives FTS5's bm25() bit for bit on
 * every matching row, with the phrases' document counts given (all of them,
 * some, none: the rest counted as bm25() does), so that recall ranks as it
 * did with bm25(); forge_df counts each phrase's rows up to a cap, as
 * count_df's one query per term did.
 */
static void test_recall_bm25(void)
{
	static const char *const terms[][3] = {
		{ "token", "pool", "deploy" }, { "auth", "mock", "the" }, { "errors", "in", "a" },
	};
	char id[ULID_LEN + 1], text[160];
	struct memory_query mq;
	jv out;

	open_mem(":memory:");
	for (int i = 0; i < 8; i++)
		CHECK(memory_store(id, m, mk("semantic", corpus[i][1], corpus[i][2], -1)) == 0);
	for (int i = 0; i < 40; i++) {
		snprintf(text, sizeof text, "note %d: the %s token pool %s in a deploy %s", i,
			 i % 3 ? "auth" : "mock", i % 5 ? "errors" : "", i % 7 ? "" : "token token");
		CHECK(memory_store(id, m, mk("semantic", text, "notes", -1)) == 0);
	}
	/* long ones too: a column of 130, 300 and 17,000 tokens is a varint of
	 * 2 or 3 bytes in FTS5's docsize row, which forge_bm25 reads itself */
	static const int words[] = { 130, 300, 17000 };

	for (int i = 0; i < 3; i++) {
		struct buf long_text = BUF_INIT;

		for (int w = 0; w < words[i]; w++)
			buf_adds(&long_text, w % 9 ? "lorem " : "token ");
		buf_adds(&long_text, i == 1 ? "pool deploy" : "errors");
		CHECK(memory_store(id, m, mk("semantic", long_text.buf, i == 2 ? "auth in a mock" : "notes", -1)) == 0);
		buf_release(&long_text);
	}
	memory_query_init(&mq, "token pool deploy");   /* forge_bm25 is made on first use */
	CHECK(memory_recall(&out, m, &mq) == 0);
	jv_free(out);
	for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++) {
		int64_t dfs[3];
		char match[128];

		snprintf(match, sizeof match, "\"%s\" OR \"%s\" OR \"%s\"", terms[t][0], terms[t][1], terms[t][2]);
		for (int k = 0; k < 3; k++)
			dfs[k] = df_of(terms[t][k]);
		for (int given = 0; given <= 3; given++) {
			sqlite3_stmt *s = NULL;
			int rows = 0, same = 0;

			CHECK(sqlite3_prepare_v2(store_db(st), "SELECT bm25(memories_fts), forge_bm25(memories_fts, ?2) "
						 "FROM memories_fts WHERE memories_fts MATCH ?1", -1, &s, NULL) == SQLITE_OK);
			sqlite3_bind_text(s, 1, match, -1, SQLITE_TRANSIENT);
			if (given)
				sqlite3_bind_blob(s, 2, dfs, (int)(given * sizeof dfs[0]), SQLITE_TRANSIENT);
			while (sqlite3_step(s) == SQLITE_ROW) {
				double a = sqlite3_column_double(s, 0), b = sqlite3_column_double(s, 1);

				rows++;
				same += memcmp(&a, &b, sizeof a) == 0;
			}
			sqlite3_finalize(s);
			CHECK_MSG(rows > 10 && same == rows, "%s, %d counts given: %d of %d rows the same",
				  match, given, same, rows);
		}
		/* forge_df: each phrase's rows, counted up to the cap given */
		for (int64_t cap = 1; cap <= 64; cap *= 4) {
			sqlite3_stmt *s = NULL;
			const int64_t *got = NULL;

			CHECK(sqlite3_prepare_v2(store_db(st), "SELECT forge_df(memories_fts, ?2) FROM memories_fts "
						 "WHERE memories_fts MATCH ?1 LIMIT 1", -1, &s, NULL) == SQLITE_OK);
			sqlite3_bind_text(s, 1, match, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(s, 2, cap);
			CHECK(sqlite3_step(s) == SQLITE_ROW && sqlite3_column_bytes(s, 0) == 3 * (int)sizeof dfs[0]);
			got = sqlite3_column_blob(s, 0);
			for (int k = 0; got && k < 3; k++)
				CHECK_MSG(got[k] == (dfs[k] < cap ? dfs[k] : cap), "'%s' up to %lld: %lld of %lld",
					  terms[t][k], (long long)cap, (long long)got[k], (long long)dfs[k]);
			sqlite3_finalize(s);
		}
	}
	close_mem();
}

static void test_recall_filters(void)
{
	char a[ULID_LEN + 1], b[ULID_LEN + 1];
	struct memory_query q;
	const char *tags[] = { "ci" };
	jv out, x;

	open_mem(":memory:");
	x = mk("procedural", "run make check before pushing", "ci", 0.9);
	x = json_set(x, "tags", JV_ARRAY(jv_string("ci")));
	CHECK(memory_store(a, m, x) == 0);
	CHECK(memory_store(b, m, mk("semantic", "make check runs the unit tests", "ci", 0.3)) == 0);
	memory_query_init(&q, "make check");
	q.filter.type = MEMORY_SEMANTIC;
	CHECK(memory_recall(&out, m, &q) == 0 && jv_array_length(jv_copy(out)) == 1);
	jv_free(out);
	memory_query_init(&q, "make check");
	q.filter.tags = tags;
	q.filter.ntags = 1;
	CHECK(memory_recall(&out, m, &q) == 0 && jv_array_length(jv_copy(out)) == 1);
	jv_free(out);
	memory_query_init(&q, "make check");
	q.filter.min_confidence = 0.5;
	CHECK(memory_recall(&out, m, &q) == 0 && jv_array_length(jv_copy(out)) == 1);
	jv_free(out);
	CHECK(memory_archive(m, a, "test") == 0);
	memory_query_init(&q, "make check");
	CHECK(memory_recall(&out, m, &q) == 0 && jv_array_length(jv_copy(out)) == 1);
	jv_free(out);
	close_mem();
}

static void test_vector_file(void)
{
	char dir[] = "/tmp/forge-test-mem-XXXXXX", path[128], id[ULID_LEN + 1];
	struct stat before, after;
	bool rebuilt;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/f.db", dir);
	open_mem(path);
	CHECK(memory_store(id, m, mk("semantic", "one memory", "x", -1)) == 0);
	CHECK(memory_index_sync(&rebuilt, m) == 0);
	CHECK(memory_store(NULL, m, mk("semantic", "two memories", "x", -1)) == 0);
	CHECK(memory_index_sync(&rebuilt, m) == 0 && !rebuilt);     /* appended */
	snprintf(path, sizeof path, "%s/f.db.vectors", dir);
	CHECK(stat(path, &before) == 0);
	CHECK(memory_update(m, id, json_set(jv_object(), "content", jv_string("one changed"))) == 0);
	/* edited: rebuilt (a new file renamed over the old), by the update's relinking */
	CHECK(stat(path, &after) == 0 && after.st_ino != before.st_ino);
	CHECK(memory_index_sync(&rebuilt, m) == 0 && !rebuilt);
	close_mem();
	snprintf(path, sizeof path, "%s/f.db.vectors", dir);
	CHECK(unlink(path) == 0);                                     /* derived: may go */
	snprintf(path, sizeof path, "%s/f.db", dir);
	open_mem(path);
	CHECK(memory_index_sync(&rebuilt, m) == 0 && rebuilt);
	close_mem();
	char cmd[200];

	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

/* Read the integer column of one row: -1 when there is none. */
static long long row_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	long long v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW)
			v = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	sqlite3_close(db);
	return v;
}

static long file_size(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n = -1;

	if (f && fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (f)
		fclose(f);
	return n;
}

/* A recall counts its memories beside the database (memory_access.c): the
 * rows are not written, a read shows the counts, the next write folds
 * them in; a torn line is skipped; a full file is folded by the recall. */
static void test_access_file(void)
{
	char dir[] = "/tmp/forge-test-mem-XXXXXX", path[128], acc[160], sql[200], id[ULID_LEN + 1];
	struct memory_query mq;
	jv out, mem;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/f.db", dir);
	snprintf(acc, sizeof acc, "%s.accesses", path);
	open_mem(path);
	CHECK(memory_store(id, m, mk("semantic", "migrations run with alembic upgrade head", "db", -1)) == 0);
	snprintf(sql, sizeof sql, "SELECT access_count FROM memories WHERE id = '%s'", id);
	clock_ms = T0 + DAY;
	memory_query_init(&mq, "alembic migrations");
	CHECK(memory_recall(&out, m, &mq) == 0 && jv_array_length(jv_copy(out)) == 1);
	jv_free(out);
	CHECK(memory_recall(&out, m, &mq) == 0);
	jv_free(out);
	CHECK(file_size(acc) > 0);
	CHECK(row_int(path, sql) == 0);                       /* the row is not written */
	CHECK(memory_get(&mem, m, id) == 0 && json_get_num(mem, "access_count", 0) == 2);
	CHECK(!strcmp(json_get_str(mem, "last_accessed"), "2026-01-02T00:00:00.000Z"));
	jv_free(mem);
	/* another process's torn line (no newline yet) is not counted */
	FILE *f = fopen(acc, "a");

	CHECK(f && fprintf(f, "%s 17", id) > 0 && fclose(f) == 0);
	CHECK(memory_get(&mem, m, id) == 0 && json_get_num(mem, "access_count", 0) == 2);
	jv_free(mem);
	/* a write folds the file into the rows */
	CHECK(memory_store(NULL, m, mk("semantic", "another memory", "x", -1)) == 0);
	CHECK(row_int(path, sql) == 2 && file_size(acc) == 0);
	CHECK(memory_get(&mem, m, id) == 0 && json_get_num(mem, "access_count", 0) == 2);
	jv_free(mem);
	/* a file at its limit: the recall writes the rows itself */
	f = fopen(acc, "w");
	CHECK(f != NULL);
	for (int i = 0; f && i < 2000; i++)
		fprintf(f, "01JDB3AAAAAAAAAAAAAAAAAAAA %lld\n", (long long)T0);
	CHECK(f && fclose(f) == 0);
	CHECK(memory_recall(&out, m, &mq) == 0);
	jv_free(out);
	CHECK(row_int(path, sql) == 3 && file_size(acc) == 0);
	close_mem();
	char cmd[200];

	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

static void test_episode(void)
{
	char id[ULID_LEN + 1];
	jv evs, mem;
	const char *text =
		"[{\"kind\":\"event\",\"id\":\"01JDB3AAAAAAAAAAAAAAAAAAA1\",\"trace_id\":\"01JDB2AAAAAAAAAAAAAAAAAAAA\","
		"\"ts\":\"2026-01-01T00:00:00.000Z\",\"phase\":\"implement\",\"type\":\"phase.started\","
		"\"payload\":{\"task\":\"add --version\"}},"
		"{\"kind\":\"event\",\"id\":\"01JDB3AAAAAAAAAAAAAAAAAAA2\",\"trace_id\":\"01JDB2AAAAAAAAAAAAAAAAAAAA\","
		"\"ts\":\"2026-01-01T00:00:02.000Z\",\"phase\":\"implement\",\"type\":\"tool.executed\","
		"\"payload\":{\"tool\":\"write_file\",\"ok\":true},\"cost\":{\"tokens\":100,\"usd\":0.01}},"
		"{\"kind\":\"event\",\"id\":\"01JDB3AAAAAAAAAAAAAAAAAAA3\",\"trace_id\":\"01JDB2AAAAAAAAAAAAAAAAAAAA\","
		"\"ts\":\"2026-01-01T00:00:10.000Z\",\"phase\":\"implement\",\"type\":\"phase.completed\",\"payload\":{}}]";

	open_mem(":memory:");
	evs = json_parse(text, strlen(text));
	CHECK(memory_record_episode(id, NULL, m, "01JDB2AAAAAAAAAAAAAAAAAAAA", evs) == 0);
	CHECK(memory_get(&mem, m, id) == 0);
	CHECK_STR(json_get_str(mem, "type"), "episodic");
	CHECK_STR(json_get_str(mem, "context"), "implement phase: add --version");
	CHECK(strstr(json_get_str(mem, "content"), "write_file") != NULL);
	CHECK(strstr(json_get_str(mem, "content"), "succeeded") != NULL);
	jv ep = json_get(mem, "episode");

	CHECK(json_get_num(ep, "duration_ms", 0) == 10000);
	jv_free(ep);
	jv_free(mem);
	/* procedure outcomes */
	CHECK(memory_learn_procedure(id, m, "tests fail with mock errors",
				     JV_ARRAY(jv_string("add clearAllMocks() in afterEach")), NULL, jv_null()) == 0);
	CHECK(memory_record_outcome(m, id, true) == 0 && fabs(conf_of(id) - 0.6) < 1e-9);
	CHECK(memory_record_outcome(m, id, false) == 0 && fabs(conf_of(id) - 0.4) < 1e-9);
	CHECK(memory_get(&mem, m, id) == 0 && json_get_num(mem, "success_rate", -1) == 0.5);
	jv_free(mem);
	/* gate edits */
	CHECK(memory_record_gate_edit(id, m, "architecture_approval", "split the parser", NULL) == 0);
	CHECK(memory_get(&mem, m, id) == 0);
	CHECK_STR(json_get_str(mem, "type"), "procedural");
	CHECK(json_get_num(mem, "confidence", 0) == 0.7);
	jv_free(mem);
	close_mem();
}

static void test_bad_input(void)
{
	open_mem(":memory:");
	CHECK(memory_store(NULL, m, mk("nonsense", "x", "y", -1)) < 0);
	CHECK(strstr(forge_last_error(), "unknown memory type") != NULL);
	CHECK(memory_store(NULL, m, mk("semantic", "", "y", -1)) < 0);
	CHECK(memory_store(NULL, m, mk("semantic", "x", "y", 1.5)) < 0);
	CHECK(memory_store(NULL, m, json_set(mk("semantic", "x", "y", -1), "tags", jv_string("a"))) < 0);
	CHECK(memory_update(m, "01JDB3AAAAAAAAAAAAAAAAAAAA", json_set(jv_object(), "content", jv_string("z")))
	      == MEMORY_NOT_FOUND);
	CHECK(memory_archive(m, "01JDB3AAAAAAAAAAAAAAAAAAAA", NULL) == MEMORY_NOT_FOUND);
	CHECK(memory_delete(m, "01JDB3AAAAAAAAAAAAAAAAAAAA") == MEMORY_NOT_FOUND);
	close_mem();
}

int main(void)
{
	RUN(test_initial_confidence);
	RUN(test_adjustments);
	RUN(test_recency_half_life);
	RUN(test_decay_arithmetic);
	RUN(test_consolidate_decay_archive);
	RUN(test_consolidate_thresholds);
	RUN(test_merge_similar);
	RUN(test_merge_keeps_distinct_facts);
	RUN(test_conflicts);
	RUN(test_no_conflict);
	RUN(test_update_relinks);
	RUN(test_promote);
	RUN(test_recall_ranking);
	RUN(test_recall_feedback);
	RUN(test_recall_feedback_counts_shared_words);
	RUN(test_recall_bm25);
	RUN(test_recall_filters);
	RUN(test_vector_file);
	RUN(test_access_file);
	RUN(test_episode);
	RUN(test_bad_input);
	return unit_done();
}
