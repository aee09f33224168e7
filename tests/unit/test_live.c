/* test_live.c - unit tests of lib/store/live.c: the model's text of a call
 * in flight (table live_text), its writes throttled, its row gone when the
 * call ends, a dead writer's row told apart, a failed write never fatal. */
#include "core/forge.h"
#include "core/json.h"
#include "store/live.h"
#include "store/store.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

/* The writer's clock: moved by hand, so no check depends on timing. */
static int64_t fake_now = 1000;
static int64_t fake_clock(void) { return fake_now; }

static const char *db_path(const char *name)
{
	static char path[512];

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

/* The live calls of trace as one compact JSON text (malloc'd). */
static char *listed(struct store *st, const char *trace)
{
	jv l;

	if (store_live_list(&l, st, trace) < 0)
		return NULL;
	return json_dumps(l, false);
}

static void test_begin_add_end(void)
{
	struct store *st = NULL, *reader = NULL;
	struct store_live w;
	jv l = jv_null();

	CHECK_MSG(store_open(&st, db_path("a.db")) == 0, "%s", forge_last_error());
	CHECK(store_open_readonly(&reader, db_path("a.db")) == 0);
	store_live_init(&w, st);
	w.clock_ms = fake_clock;
	store_live_begin(&w, "T1", "plan", "claude-x", NULL);
	store_live_add(&w, "Hello", 5);
	/* the first text is written at once, seen by another connection */
	CHECK(store_live_list(&l, reader, "T1") == 0);
	CHECK_INT(jv_array_length(jv_copy(l)), 1);
	jv c = jv_array_get(jv_copy(l), 0);
	CHECK_STR(json_get_str(c, "text"), "Hello");
	CHECK_STR(json_get_str(c, "phase"), "plan");
	CHECK_STR(json_get_str(c, "model"), "claude-x");
	CHECK(json_get_bool(c, "alive", false));
	CHECK(json_has(c, "span") && !json_get_str(c, "span"));   /* the phase's own agent: null */
	CHECK_INT((int)json_get_num(c, "pid", 0), (int)getpid());
	jv_free(c);
	jv_free(l);
	/* many fragments within the interval: kept in memory, not written */
	for (int i = 0; i < 1000; i++)
		store_live_add(&w, " x", 2);
	CHECK_INT(w.writes, 1);
	CHECK_INT((int)w.text.len, 5 + 2000);
	char *seen = listed(reader, "T1");
	CHECK(strstr(seen, "\"text\":\"Hello\"") != NULL);
	free(seen);
	/* the interval passed: the next fragment writes the whole text so far */
	fake_now += STORE_LIVE_INTERVAL_MS;
	store_live_add(&w, "!", 1);
	CHECK_INT(w.writes, 2);
	CHECK(store_live_list(&l, reader, "T1") == 0);
	c = jv_array_get(jv_copy(l), 0);
	CHECK_INT((int)strlen(json_get_str(c, "text")), 5 + 2000 + 1);
	jv_free(c);
	jv_free(l);
	/* another trace sees nothing */
	char *other = listed(reader, "T2");
	CHECK_STR(other, "[]");
	free(other);
	store_live_end(&w);
	char *after = listed(reader, "T1");
	CHECK_STR(after, "[]");
	free(after);
	/* a second call of the same writer starts empty, its first text at once */
	store_live_begin(&w, "T1", "plan", NULL, NULL);
	store_live_add(&w, "again", 5);
	CHECK(store_live_list(&l, reader, "T1") == 0);
	c = jv_array_get(jv_copy(l), 0);
	CHECK_STR(json_get_str(c, "text"), "again");
	jv_free(c);
	jv_free(l);
	/* release ends the open call */
	store_live_release(&w);
	after = listed(reader, "T1");
	CHECK_STR(after, "[]");
	free(after);
	store_free(reader);
	store_free(st);
}

/* Text within the interval of the last write waits, unless the block ends:
 * then the row holds all of it at once (a tool call's JSON may follow). */
static void test_flush_at_block_end(void)
{
	struct store *st = NULL;
	struct store_live w;
	jv l = jv_null();

	CHECK(store_open(&st, db_path("e.db")) == 0);
	store_live_init(&w, st);
	w.clock_ms = fake_clock;
	store_live_begin(&w, "T1", "implement", "m", NULL);
	store_live_add(&w, "Let me look", 11);
	store_live_add(&w, " at calc.c.", 11);   /* same instant: kept in memory */
	CHECK_INT(w.writes, 1);
	store_live_flush(&w);
	CHECK_INT(w.writes, 2);
	CHECK(store_live_list(&l, st, "T1") == 0);
	jv c = jv_array_get(jv_copy(l), 0);
	CHECK_STR(json_get_str(c, "text"), "Let me look at calc.c.");
	jv_free(c);
	jv_free(l);
	/* nothing new: no write */
	store_live_flush(&w);
	CHECK_INT(w.writes, 2);
	store_live_release(&w);
	store_live_flush(&w);   /* between calls: nothing to do */
	CHECK_INT(w.writes, 2);
	store_free(st);
}

/* A row whose writer died in the call is listed with alive false. */
static void test_dead_writer(void)
{
	struct store *st = NULL;
	pid_t pid;
	int status;
	jv l = jv_null();

	CHECK(store_open(&st, db_path("b.db")) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct store *child = NULL;
		struct store_live w;
		if (store_open(&child, db_path("b.db")) < 0)
			_exit(1);
		store_live_init(&w, child);
		store_live_begin(&w, "T1", "implement", "m", NULL);
		store_live_add(&w, "half an answer", 14);
		_exit(0);   /* dies in the call: the row stays */
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(store_live_list(&l, st, "T1") == 0);
	CHECK_INT(jv_array_length(jv_copy(l)), 1);
	jv c = jv_array_get(jv_copy(l), 0);
	CHECK_STR(json_get_str(c, "text"), "half an answer");
	CHECK(!json_get_bool(c, "alive", true));
	jv_free(c);
	jv_free(l);
	store_free(st);
}

/* gc's prune: a dead writer's row on this host goes, a live one stays; on
 * another host only a row not written for stale_ms goes. */
static void test_prune(void)
{
	struct store *st = NULL;
	struct store_live w;
	pid_t pid;
	int status;
	size_t n = 99;
	char *l;

	CHECK(store_open(&st, db_path("d.db")) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct store *child = NULL;
		struct store_live cw;
		if (store_open(&child, db_path("d.db")) < 0)
			_exit(1);
		store_live_init(&cw, child);
		store_live_begin(&cw, "DEAD", "plan", "m", NULL);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	store_live_init(&w, st);
	store_live_begin(&w, "ALIVE", "plan", "m", NULL);
	/* two rows of another host: one written long ago, one just now */
	CHECK(store_exec(st, "INSERT INTO live_text (call_id, trace_id, pid, host, started_at, updated_at) VALUES"
			 " ('c-old', 'FAR', 1, 'elsewhere.invalid', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z')") == 0);
	char now[TIMESTAMP_LEN + 1], sql[400];
	timestamp_now(now);
	snprintf(sql, sizeof sql, "INSERT INTO live_text (call_id, trace_id, pid, host, started_at, updated_at) VALUES"
		 " ('c-new', 'NEAR', 1, 'elsewhere.invalid', '%s', '%s')", now, now);
	CHECK(store_exec(st, sql) == 0);
	CHECK_MSG(store_live_prune(&n, st, 86400 * 1000, true) == 0, "%s", forge_last_error());
	CHECK_INT((int)n, 2);
	l = listed(st, "DEAD");
	CHECK(strcmp(l, "[]") != 0);   /* a dry run: still there */
	free(l);
	CHECK(store_live_prune(&n, st, 86400 * 1000, false) == 0);
	CHECK_INT((int)n, 2);
	const char *gone[] = { "DEAD", "FAR" }, *kept[] = { "ALIVE", "NEAR" };
	for (int i = 0; i < 2; i++) {
		l = listed(st, gone[i]);
		CHECK_STR(l, "[]");
		free(l);
		l = listed(st, kept[i]);
		CHECK(strcmp(l, "[]") != 0);
		free(l);
	}
	CHECK(store_live_prune(&n, st, 86400 * 1000, false) == 0);
	CHECK_INT((int)n, 0);
	store_live_release(&w);
	store_free(st);
}

/* Two sub-agents of one phase streaming at once: two rows under the same
 * phase, told apart by their spans; each call's end deletes its own row. */
static void test_two_subagents(void)
{
	static const char span_a[] = "01JSUBAGENTAAAAAAAAAAAAAAA", span_b[] = "01JSUBAGENTBBBBBBBBBBBBBBB";
	struct store *st = NULL;
	struct store_live a, b;
	jv l = jv_null();

	CHECK(store_open(&st, db_path("f.db")) == 0);
	store_live_init(&a, st);
	store_live_init(&b, st);
	store_live_begin(&a, "T1", "implement-sub", "m", span_a);
	store_live_begin(&b, "T1", "implement-sub", "m", span_b);
	store_live_add(&a, "reading calc.c", 14);
	store_live_add(&b, "reading calc.h", 14);
	CHECK(store_live_list(&l, st, "T1") == 0);
	CHECK_INT(jv_array_length(jv_copy(l)), 2);
	jv_array_foreach(l, i, c) {
		const char *span = json_get_str(c, "span");
		CHECK_STR(json_get_str(c, "phase"), "implement-sub");
		CHECK(span && (!strcmp(span, span_a) || !strcmp(span, span_b)));
		CHECK_STR(json_get_str(c, "text"), !strcmp(span ? span : "", span_a) ? "reading calc.c" : "reading calc.h");
		jv_free(c);
	}
	jv_free(l);
	store_live_end(&a);
	CHECK(store_live_list(&l, st, "T1") == 0);
	CHECK_INT(jv_array_length(jv_copy(l)), 1);
	jv c = jv_array_get(jv_copy(l), 0);
	CHECK_STR(json_get_str(c, "span"), span_b);
	CHECK_STR(json_get_str(c, "text"), "reading calc.h");
	jv_free(c);
	jv_free(l);
	store_live_release(&a);
	store_live_release(&b);
	char *after = listed(st, "T1");
	CHECK_STR(after, "[]");
	free(after);
	store_free(st);
}

/* No store, no trace, a read-only store: nothing written, nothing fails. */
static void test_off_and_failing(void)
{
	struct store *st = NULL, *ro = NULL;
	struct store_live w;
	char *l;

	store_live_init(&w, NULL);
	store_live_begin(&w, "T1", "plan", "m", NULL);
	store_live_add(&w, "x", 1);
	store_live_release(&w);
	CHECK_INT(w.writes, 0);

	CHECK(store_open(&st, db_path("c.db")) == 0);
	store_live_init(&w, st);
	store_live_begin(&w, "", "plan", "m", NULL);
	store_live_add(&w, "x", 1);
	CHECK_INT(w.writes, 0);
	store_live_release(&w);

	CHECK(store_open_readonly(&ro, db_path("c.db")) == 0);
	store_live_init(&w, ro);
	store_live_begin(&w, "T1", "plan", "m", NULL);   /* refused: the writer turns off */
	CHECK(w.st == NULL);
	store_live_add(&w, "x", 1);
	store_live_release(&w);
	l = listed(st, "T1");
	CHECK_STR(l, "[]");
	free(l);
	store_free(ro);
	store_free(st);
}

int main(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof tmpdir, "%s/test_live.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	unsetenv("FORGE_DB");
	RUN(test_begin_add_end);
	RUN(test_flush_at_block_end);
	RUN(test_dead_writer);
	RUN(test_off_and_failing);
	RUN(test_prune);
	RUN(test_two_subagents);
	int rc = unit_done();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		rc = 1;
	return rc;
}
