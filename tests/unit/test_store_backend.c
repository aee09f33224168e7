/* test_store_backend.c - the run store through its public functions on
 * either backend: the database named by FORGE_TEST_DB (a postgresql:// URI
 * or a libpq conninfo: tests/pg.bats runs it so), else a new SQLite file.
 * Events (idempotent by id, replayed byte for byte), runs, checkpoints,
 * traces, leases, gates, plans, the model-call log, the breakers' reads,
 * findings and their dismissal, forge compile's documents, and what is
 * refused on PostgreSQL.  Every test works on trace ids of its
 * own, so one database serves them all. */
#include "compile/docs.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "engine/gates.h"
#include "llm/llm.h"
#include "os/proc.h"
#include "store/db.h"
#include "store/findings.h"
#include "store/live.h"
#include "store/plans.h"
#include "store/store.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dbpath[512];

/* The database under test; the process ends when it cannot be opened. */
static struct store *open_db(void)
{
	struct store *st = NULL;

	if (store_open(&st, dbpath) < 0) {
		fprintf(stderr, "cannot open %s: %s\n", dbpath, forge_last_error());
		exit(1);
	}
	return st;
}

/* JSON text as a jv. */
static jv P(const char *text)
{
	return json_parse(text, strlen(text));
}

/* o.key.sub as a number, -1 when absent; borrows o. */
static double get_num(jv o, const char *key, const char *sub)
{
	jv v = json_get(o, key);
	double n = jv_get_kind(v) == JV_KIND_OBJECT ? json_get_num(v, sub, -1) : -1;

	jv_free(v);
	return n;
}

/* A new trace id: a ULID, so prefixes of it are unique to this run. */
static void new_trace(char id[ULID_LEN + 1])
{
	ulid_new(id);
}

/* An event line of trace with id ID and time second s. */
static char *event_line(const char *trace, const char *id, int s)
{
	char *line = xmalloc(512);

	snprintf(line, 512, "{\"kind\":\"event\",\"id\":\"%s\",\"trace_id\":\"%s\","
		 "\"ts\":\"2026-11-21T10:00:%02d.000Z\",\"source\":\"test\",\"phase\":null,"
		 "\"type\":\"tool.executed\",\"payload\":{\"n\": %d}}", id, trace, s, s);
	return line;
}

static int put_line(struct store *st, const char *line, bool *inserted)
{
	jv ev = json_parse(line, strlen(line));
	int rc = store_event_put(st, ev, line, strlen(line), inserted);

	jv_free(ev);
	return rc;
}

static int collect_line(const char *line, size_t len, void *payload)
{
	struct buf *b = payload;

	buf_add(b, line, len);
	buf_addch(b, '\n');
	return 0;
}

static void test_events_idempotent(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1], id[3][ULID_LEN + 1];
	char *line[3];
	struct buf want = BUF_INIT, got = BUF_INIT;
	bool inserted = false;

	new_trace(trace);
	for (int i = 0; i < 3; i++) {
		ulid_new(id[i]);
		line[i] = event_line(trace, id[i], 3 - i);   /* stored out of time order */
	}
	CHECK(put_line(st, line[0], &inserted) == 0 && inserted);
	CHECK(put_line(st, line[0], &inserted) == 0 && !inserted);   /* re-sent: not duplicated */
	/* a batch: queued puts, a duplicate among them */
	CHECK(store_begin(st) == 0);
	CHECK(put_line(st, line[1], NULL) == 0);
	CHECK(put_line(st, line[2], NULL) == 0);
	CHECK(put_line(st, line[1], NULL) == 0);
	CHECK_MSG(store_commit(st) == 0, "%s", forge_last_error());
	/* rolled back: not stored */
	CHECK(store_begin(st) == 0);
	char lost[ULID_LEN + 1];
	ulid_new(lost);
	char *lost_line = event_line(trace, lost, 9);
	CHECK(put_line(st, lost_line, NULL) == 0);
	CHECK(store_rollback(st) == 0);
	/* replay: in the order they were stored, byte for byte, each once
	 * where it was first stored -- not by their ts, which go back (a
	 * clock stepped back, or another machine's behind) */
	for (int i = 0; i < 3; i++) {
		buf_adds(&want, line[i]);
		buf_addch(&want, '\n');
	}
	CHECK(store_events_foreach(st, trace, collect_line, &got) == 0);
	CHECK_STR(got.buf ? got.buf : "", want.buf);
	jv last = jv_null();
	CHECK(store_event_last(&last, st, trace, "tool.executed") == 0);
	CHECK_STR(json_get_str(last, "id"), id[2]);
	jv_free(last);
	/* a record without an id is refused */
	jv bad = P("{\"trace_id\":\"x\",\"ts\":\"t\",\"type\":\"a\"}");
	CHECK(store_event_put(st, bad, NULL, 0, NULL) == -1);
	jv_free(bad);
	for (int i = 0; i < 3; i++)
		free(line[i]);
	free(lost_line);
	buf_release(&want);
	buf_release(&got);
	store_free(st);
}

static void test_runs(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1];
	jv run = jv_null(), list = jv_null();

	new_trace(trace);
	CHECK(store_run_create(st, trace, "add mul", "/repo", P("{\"a\":1}")) == 0);
	CHECK(store_run_create(st, trace, "again", NULL, jv_null()) == -1);
	CHECK_MSG(strstr(forge_last_error(), "already exists"), "%s", forge_last_error());
	CHECK(store_run_update(st, trace, "running", "plan", NULL) == 0);
	CHECK(store_run_update(st, trace, NULL, "implement", NULL) == 0);
	CHECK(store_run_set_cost(st, trace, 1234, 0.5) == 0);
	CHECK(store_run_get(&run, st, trace) == 0);
	CHECK_STR(json_get_str(run, "status"), "running");
	CHECK_STR(json_get_str(run, "current_phase"), "implement");
	CHECK_STR(json_get_str(run, "repo"), "/repo");
	CHECK(get_num(run, "config", "a") == 1);
	CHECK(json_get_num(run, "total_tokens", 0) == 1234 && json_get_num(run, "total_cost_usd", 0) == 0.5);
	CHECK(!json_get_str(run, "completed_at"));
	jv brief = jv_null();
	CHECK(store_run_get_brief(&brief, st, trace) == 0);
	CHECK(jv_equal(json_set(jv_copy(run), "config", jv_null()), brief));
	jv_free(run);
	/* cancelled stays cancelled */
	CHECK(store_run_update(st, trace, "cancelled", NULL, "by hand") == 0);
	CHECK(store_run_update(st, trace, "completed", NULL, "late") == 0);
	CHECK(store_run_get(&run, st, trace) == 0);
	CHECK_STR(json_get_str(run, "status"), "cancelled");
	CHECK_STR(json_get_str(run, "error"), "by hand");
	CHECK(json_get_str(run, "completed_at") != NULL);
	jv_free(run);
	CHECK(store_run_update(st, trace, "bogus", NULL, NULL) == -1);
	CHECK(store_run_update(st, "NO-SUCH-RUN", "running", NULL, NULL) == -1);
	CHECK_MSG(strstr(forge_last_error(), "no run"), "%s", forge_last_error());
	CHECK(store_run_get(&run, st, "NO-SUCH-RUN") == 0 && jv_get_kind(run) == JV_KIND_NULL);
	CHECK(store_runs_list(&list, st, 0) == 0);
	bool found = false;
	jv_array_foreach(list, i, r) {
		found |= strcmp(json_get_str(r, "trace_id"), trace) == 0;
		jv_free(r);
	}
	CHECK(found);
	jv_free(list);
	store_free(st);
}

/*
 * A run's totals count its model-call log when that is more: a killed run
 * wrote none after its last checkpoint (before: its row's alone).
 */
static void test_run_spent_from_log(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1];
	jv run = jv_null(), list = jv_null();
	struct llm_usage u = { .input_tokens = 100, .output_tokens = 50, .cache_read_tokens = 10 };
	struct llm_call_log rec = {
		.trace_id = trace, .phase = "implement", .provider = "anthropic", .model = "m",
		.attempt = 1, .call = 1, .request = P("{\"q\":1}"), .response = P("{\"text\":\"x\"}"),
		.usage = &u, .cost_usd = 0.25, .cost_known = true, .duration_ms = 1,
	};

	new_trace(trace);
	CHECK(store_run_create(st, trace, "add mul", "/repo", jv_null()) == 0);
	/* none logged: the row's */
	CHECK(store_run_set_cost(st, trace, 1000, 0.5) == 0);
	CHECK(store_run_get(&run, st, trace) == 0);
	CHECK(json_get_num(run, "total_cost_usd", 0) == 0.5 && json_get_num(run, "total_tokens", 0) == 1000);
	jv_free(run);
	/* logged for less than the row says (a call with no price): the row's */
	CHECK_MSG(llm_log_call(st, &rec) == 0, "%s", forge_last_error());
	CHECK(store_run_get(&run, st, trace) == 0);
	CHECK(json_get_num(run, "total_cost_usd", 0) == 0.5 && json_get_num(run, "total_tokens", 0) == 1000);
	jv_free(run);
	/* logged for more: the log's, each total on its own */
	for (int i = 0; i < 7; i++)
		CHECK(llm_log_call(st, &rec) == 0);
	rec.cost_known = false;
	CHECK(llm_log_call(st, &rec) == 0);
	CHECK(store_run_get(&run, st, trace) == 0);
	CHECK_MSG(json_get_num(run, "total_cost_usd", 0) == 2.0, "%g", json_get_num(run, "total_cost_usd", 0));
	CHECK_MSG(json_get_num(run, "total_tokens", 0) == 9 * 160, "%g", json_get_num(run, "total_tokens", 0));
	jv_free(run);
	CHECK(store_runs_list(&list, st, 0) == 0);
	bool found = false;
	jv_array_foreach(list, i, r) {
		if (strcmp(json_get_str(r, "trace_id"), trace) == 0)
			found = json_get_num(r, "total_cost_usd", 0) == 2.0 && json_get_num(r, "total_tokens", 0) == 1440;
		jv_free(r);
	}
	CHECK(found);
	jv_free(list);
	jv_free(rec.request);
	jv_free(rec.response);
	store_free(st);
}

static void test_checkpoints(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1];
	char *id1 = NULL, *id2 = NULL;
	jv state = P("{\"phase\":\"plan\",\"status\":\"running\",\"n\":1}"), out = jv_null();

	new_trace(trace);
	CHECK(store_checkpoint_latest(&out, st, trace) == 0 && jv_get_kind(out) == JV_KIND_NULL);
	CHECK(store_checkpoint_save(st, trace, NULL, state, &id1) == 0);
	state = json_set(state, "n", jv_number(2));
	CHECK(store_checkpoint_save(st, trace, "implement", state, &id2) == 0);
	CHECK(store_checkpoint_latest(&out, st, trace) == 0);
	CHECK(json_get_num(out, "n", 0) == 2);
	jv_free(out);
	CHECK(store_checkpoint_list(&out, st, trace) == 0);
	CHECK_INT(jv_array_length(jv_copy(out)), 2);
	jv first = jv_array_get(jv_copy(out), 0);
	CHECK_STR(json_get_str(first, "id"), id1);
	CHECK_STR(json_get_str(first, "phase"), "plan");
	jv_free(first);
	jv_free(out);
	CHECK(store_checkpoint_load(&out, st, id2) == 0);
	CHECK_STR(json_get_str(out, "phase"), "implement");
	CHECK(get_num(out, "state", "n") == 2);
	jv_free(out);
	jv not_object = jv_array();
	CHECK(store_checkpoint_save(st, trace, NULL, not_object, NULL) == -1);   /* borrows */
	jv_free(not_object);
	jv_free(state);
	free(id1);
	free(id2);
	store_free(st);
}

/* Store an event of trace: type, ts, its payload and cost (JSON text). */
static void put_at(struct store *st, const char *trace, const char *type, const char *ts,
		   const char *payload, const char *cost)
{
	char id[ULID_LEN + 1], line[1024];

	ulid_new(id);
	snprintf(line, sizeof line, "{\"kind\":\"event\",\"id\":\"%s\",\"trace_id\":\"%s\",\"ts\":\"%s\","
		 "\"source\":\"test\",\"phase\":\"plan\",\"type\":\"%s\",\"payload\":%s,\"cost\":%s}",
		 id, trace, ts, type, payload, cost);
	CHECK_MSG(put_line(st, line, NULL) == 0, "%s", forge_last_error());
}

/*
 * A trace's history is the order it was written in, whatever the writers'
 * clocks say: a checkpoint stamped an hour ahead (written before the clock
 * went back, or by a machine whose clock is ahead) is not the newest once
 * another is saved; the model calls after the last checkpoint, the pauses
 * and the last event are read in that order too.
 */
static void test_history_order(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1], ahead[ULID_LEN + 1], sql[512];
	char *saved = NULL;
	jv state = P("{\"phase\":\"review\"}"), out = jv_null();
	double usd = -1, tokens = -1;
	long calls = -1;
	int64_t ms = 0;

	new_trace(trace);
	ulid_new(ahead);
	snprintf(sql, sizeof sql, "INSERT INTO checkpoints (id, trace_id, phase, status, ts, state) VALUES "
		 "('%s', '%s', 'plan', 'ok', '2099-01-01T00:00:00.000Z', '{\"phase\":\"plan\"}')", ahead, trace);
	CHECK_MSG(store_exec(st, sql) == 0, "%s", forge_last_error());
	/* a trace without state.updated events (written before there were):
	 * the calls after the checkpoint's ts */
	put_at(st, trace, "llm.called", "2099-01-01T00:00:01.000Z", "{}", "{\"usd\":1,\"tokens\":10}");
	CHECK(store_spent_since_checkpoint(&usd, &tokens, &calls, st, trace) == 0);
	CHECK(usd == 1 && tokens == 10 && calls == 1);
	put_at(st, trace, "state.updated", "2099-01-01T00:00:02.000Z", "{}", "null");
	CHECK(store_checkpoint_save(st, trace, NULL, state, &saved) == 0);
	put_at(st, trace, "state.updated", "2026-11-21T10:00:00.000Z", "{}", "null");
	/* the newest is the one saved last, stamped with its own time */
	CHECK(store_checkpoint_latest(&out, st, trace) == 0);
	CHECK_STR(json_get_str(out, "phase"), "review");
	jv_free(out);
	CHECK(store_checkpoint_list(&out, st, trace) == 0);
	CHECK_INT(jv_array_length(jv_copy(out)), 2);
	jv first = jv_array_get(jv_copy(out), 0), second = jv_array_get(jv_copy(out), 1);
	CHECK_STR(json_get_str(first, "id"), ahead);
	CHECK_STR(json_get_str(second, "id"), saved);
	CHECK_MSG(strcmp(json_get_str(second, "ts"), "2099") < 0, "%s", json_get_str(second, "ts"));
	jv_free(first);
	jv_free(second);
	jv_free(out);
	/* the calls after it: stored after its state.updated, their ts
	 * before the other checkpoint's */
	CHECK(store_spent_since_checkpoint(&usd, &tokens, &calls, st, trace) == 0);
	CHECK(usd == 0 && calls == 0);
	put_at(st, trace, "llm.called", "2026-11-21T10:00:01.000Z", "{}", "{\"usd\":2,\"tokens\":20}");
	put_at(st, trace, "llm.called", "2026-11-21T10:00:02.000Z", "{}", "{\"usd\":4,\"tokens\":40}");
	CHECK(store_spent_since_checkpoint(&usd, &tokens, &calls, st, trace) == 0);
	CHECK(usd == 6 && tokens == 60 && calls == 2);
	/* a pause the clock made negative counts 0, the next one its 5 s; the
	 * run is not paused now (before: the 2099 pause was the last one) */
	put_at(st, trace, "run.paused", "2099-01-01T00:00:03.000Z", "{}", "null");
	put_at(st, trace, "run.resumed", "2026-11-21T10:00:00.000Z", "{}", "null");
	put_at(st, trace, "run.paused", "2026-11-21T10:00:03.000Z", "{}", "null");
	put_at(st, trace, "run.resumed", "2026-11-21T10:00:08.000Z", "{}", "null");
	int64_t now = -1;
	CHECK(timestamp_parse(&now, "2099-01-01T00:00:04.000Z") == 0);
	CHECK(store_paused_ms(&ms, st, trace, now) == 0);
	CHECK_MSG(ms == 5000, "%lld", (long long)ms);
	/* the last event is the one stored last */
	CHECK(store_last_event_ms(&ms, st, trace) == 0);
	int64_t want = -1;
	CHECK(timestamp_parse(&want, "2026-11-21T10:00:08.000Z") == 0);
	CHECK(ms == want);
	jv last = jv_null();
	CHECK(store_event_last(&last, st, trace, "state.updated") == 0);
	CHECK_STR(json_get_str(last, "ts"), "2026-11-21T10:00:00.000Z");
	jv_free(last);
	jv_free(state);
	free(saved);
	store_free(st);
}

static void test_traces_and_prefixes(void)
{
	struct store *st = open_db();
	char a[ULID_LEN + 1], b[ULID_LEN + 1], *out = NULL;
	jv list = jv_null();

	new_trace(a);
	snprintf(b, sizeof b, "%s", a);
	b[ULID_LEN - 1] = b[ULID_LEN - 1] == 'Z' ? 'Y' : 'Z';   /* same start, another end */
	CHECK(store_run_create(st, a, "one", NULL, jv_null()) == 0);
	char ev[ULID_LEN + 1];
	ulid_new(ev);
	char *line = event_line(b, ev, 1);
	CHECK(put_line(st, line, NULL) == 0);
	free(line);
	CHECK(store_resolve_trace(&out, st, a) == 0);
	CHECK_STR(out, a);
	free(out);
	char prefix[ULID_LEN];
	snprintf(prefix, sizeof prefix, "%.*s", ULID_LEN - 1, a);
	CHECK(store_resolve_trace(&out, st, prefix) == STORE_TRACE_AMBIGUOUS);
	for (char *p = prefix; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	CHECK(store_resolve_trace(&out, st, prefix) == STORE_TRACE_AMBIGUOUS);   /* lower case tried upper */
	CHECK(store_resolve_trace(&out, st, "ZZZZZZZZZZZZZ") == STORE_TRACE_NONE);
	CHECK(store_traces(&list, st, 0) == 0);
	int seen = 0;
	jv_array_foreach(list, i, t) {
		const char *id = json_get_str(t, "trace_id");
		if (strcmp(id, a) == 0)
			seen += json_get_num(t, "events", -1) == 0 && json_get_str(t, "task") ? 1 : 100;
		if (strcmp(id, b) == 0)
			seen += json_get_num(t, "events", -1) == 1 && !json_get_str(t, "task") ? 1 : 100;
		jv_free(t);
	}
	CHECK_INT(seen, 2);
	jv_free(list);
	store_free(st);
}

static void test_leases(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1];
	jv held = jv_null();
	struct db_stmt *s;

	new_trace(trace);
	CHECK(store_lease_take(&held, st, trace, "A", "test") == STORE_LEASE_TAKEN);
	CHECK(store_lease_take(&held, st, trace, "A", "test") == STORE_LEASE_TAKEN);
	CHECK(store_lease_take(&held, st, trace, "B", "test") == STORE_LEASE_HELD);
	CHECK_STR(json_get_str(held, "holder"), "A");
	jv_free(held);
	/* A's process is gone: B takes it over */
	CHECK(db_prepare(&s, st, "UPDATE leases SET pid = ?2 WHERE trace_id = ?1") == 0);
	db_bind_text(s, 1, trace);
	db_bind_int64(s, 2, (1 << 30) + 1);
	CHECK(db_step_done(st, s, "update") == 0);
	CHECK(store_lease_take(&held, st, trace, "B", "test") == STORE_LEASE_STOLEN);
	CHECK_STR(json_get_str(held, "holder"), "A");
	jv_free(held);
	CHECK(store_lease_get(&held, st, trace) == 0);
	CHECK_STR(json_get_str(held, "holder"), "B");
	CHECK(json_get_num(held, "pid", 0) == getpid());
	/* B's start identity: a reused pid is not B */
	char me[PROC_START_ID_LEN];

	CHECK(proc_start_id(me, getpid()));
	CHECK_STR(json_get_str(held, "pid_start"), me);
	CHECK(json_get_num(held, "renewals", -1) == 0);
	jv_free(held);
	CHECK(db_prepare(&s, st, "UPDATE leases SET pid_start = 'another-boot/1' WHERE trace_id = ?1") == 0);
	db_bind_text(s, 1, trace);
	CHECK(db_step_done(st, s, "update") == 0);
	CHECK(store_lease_take(&held, st, trace, "C", "test") == STORE_LEASE_STOLEN);
	CHECK_STR(json_get_str(held, "holder"), "B");
	jv_free(held);
	CHECK(store_lease_renew(st, trace, "C") == 0);
	CHECK(store_lease_renew(st, trace, "C") == 0);
	/* C on another host, renewed by a clock 30 minutes behind this one's
	 * (within STORE_LEASE_CLOCK_SLACK_S): alive until this host has seen
	 * it unchanged for the TTL */
	char behind[TIMESTAMP_LEN + 1];

	timestamp_format(behind, now_ms() - 30 * 60 * 1000);
	CHECK(db_prepare(&s, st, "UPDATE leases SET host = 'far.example', renewed_at = ?2 WHERE trace_id = ?1") == 0);
	db_bind_text(s, 1, trace);
	db_bind_text(s, 2, behind);
	CHECK(db_step_done(st, s, "update") == 0);
	CHECK(store_lease_take(&held, st, trace, "D", "test") == STORE_LEASE_HELD);
	CHECK(json_get_num(held, "renewals", 0) == 2 && json_get_str(held, "seen_at"));
	jv_free(held);
	CHECK(db_prepare(&s, st, "UPDATE lease_sightings SET seen_at = '2020-01-01T00:00:00.000Z'"
			 " WHERE trace_id = ?1 AND renewals = 2 AND holder = 'C'") == 0);
	db_bind_text(s, 1, trace);
	CHECK(db_step(s) == DB_DONE);
	CHECK(db_changes(s) == 1);
	db_finalize(s);
	CHECK(store_lease_get(&held, st, trace) == 0 && !json_get_bool(held, "alive", true));
	jv_free(held);
	CHECK(store_lease_take(&held, st, trace, "B", "test") == STORE_LEASE_STOLEN);
	CHECK_STR(json_get_str(held, "holder"), "C");
	jv_free(held);
	CHECK(store_lease_release(st, trace, "A") == 0);   /* not A's: nothing */
	CHECK(store_lease_get(&held, st, trace) == 0 && jv_get_kind(held) == JV_KIND_OBJECT);
	jv_free(held);
	CHECK(store_lease_release(st, trace, "B") == 0);
	CHECK(store_lease_get(&held, st, trace) == 0 && jv_get_kind(held) == JV_KIND_NULL);
	store_free(st);
}

/* Events of trace stored: its replayed lines. */
static int count_line(const char *line, size_t len, void *payload)
{
	(void)line;
	(void)len;
	++*(long *)payload;
	return 0;
}

static long events_of(struct store *st, const char *trace)
{
	long n = 0;

	return store_events_foreach(st, trace, count_line, &n) == 0 ? n : -1;
}

static const char *status_of(struct store *st, const char *trace, char out[32])
{
	jv run = jv_null();

	if (store_run_get(&run, st, trace) < 0)
		return "?";
	snprintf(out, 32, "%s", json_get_str(run, "status") ? json_get_str(run, "status") : "?");
	jv_free(run);
	return out;
}

/* The fence: once another process took the lease over, nothing of the
 * holder's is written, in a transaction (the whole of it rolled back) or
 * alone (hunt34 #1: a run the new holder completed turned failed). */
static void test_lease_fence(void)
{
	struct store *st = open_db(), *other = open_db();
	char trace[ULID_LEN + 1], id[ULID_LEN + 1], status[32];
	jv held = jv_null(), state = P("{\"phase\":\"implement\",\"status\":\"running\"}");
	struct db_stmt *s;
	char *ckpt = NULL;

	new_trace(trace);
	CHECK(store_run_create(st, trace, "fenced", NULL, jv_null()) == 0);
	CHECK(store_lease_take(&held, st, trace, "A", "test") == STORE_LEASE_TAKEN);
	store_fence(st, trace, "A");
	/* A holds it: its writes go in */
	CHECK(store_begin(st) == 0);
	ulid_new(id);
	char *line = event_line(trace, id, 1);
	CHECK(put_line(st, line, NULL) == 0);
	free(line);
	CHECK(store_checkpoint_save(st, trace, NULL, state, NULL) == 0);
	CHECK(store_run_update(st, trace, "running", "implement", NULL) == 0);
	CHECK_MSG(store_commit(st) == 0, "%s", forge_last_error());
	CHECK(store_run_update(st, trace, NULL, "review", NULL) == 0);
	CHECK(!store_lease_fenced(st));
	/* B takes it over (A judged dead) and completes the run */
	CHECK(db_prepare(&s, other, "UPDATE leases SET holder = 'B' WHERE trace_id = ?1") == 0);
	db_bind_text(s, 1, trace);
	CHECK(db_step_done(other, s, "take over") == 0);
	CHECK(store_run_update(other, trace, "completed", NULL, "") == 0);
	long events = events_of(other, trace);
	CHECK(events == 1);
	/* A wakes: its batch is rolled back at the commit */
	CHECK(store_begin(st) == 0);
	ulid_new(id);
	line = event_line(trace, id, 2);
	CHECK(put_line(st, line, NULL) == 0);
	free(line);
	CHECK(store_run_update(st, trace, "failed", NULL, "late") == 0);
	CHECK(store_commit(st) == -1);
	CHECK_MSG(strstr(forge_last_error(), "was taken over by another process"), "%s", forge_last_error());
	CHECK(store_lease_fenced(st));
	/* and alone: refused too */
	CHECK(store_run_update(st, trace, "failed", NULL, "late") == -1);
	CHECK(store_run_set_cost(st, trace, 1, 1) == -1);
	CHECK(store_checkpoint_save(st, trace, NULL, state, &ckpt) == -1 && !ckpt);
	ulid_new(id);
	line = event_line(trace, id, 3);
	CHECK(put_line(st, line, NULL) == -1);
	free(line);
	CHECK_STR(status_of(other, trace, status), "completed");
	CHECK(events_of(other, trace) == events);
	jv cps = jv_null();
	CHECK(store_checkpoint_list(&cps, other, trace) == 0 && jv_array_length(jv_copy(cps)) == 1);
	jv_free(cps);
	/* without the fence (the lease released) it writes as before */
	store_fence(st, NULL, NULL);
	CHECK(store_run_set_cost(st, trace, 1, 1) == 0);
	jv_free(state);
	store_free(st);
	store_free(other);
}

static void test_gates(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1], id[ULID_LEN + 1];
	jv gate = P("{\"id\":\"architecture_approval\",\"prompt\":\"ok?\"}"), out = jv_null();

	new_trace(trace);
	CHECK(gate_request(id, st, trace, gate, "plan") == 0);
	CHECK(gate_list(&out, st, trace, true) == 0);
	CHECK_INT(jv_array_length(jv_copy(out)), 1);
	jv_free(out);
	CHECK(gate_decide(st, id, true, "human", "fine") == 0);
	CHECK(gate_decide(st, id, false, "human", NULL) == GATE_REFUSED);
	CHECK(gate_list(&out, st, trace, true) == 0);
	CHECK_INT(jv_array_length(jv_copy(out)), 0);
	jv_free(out);
	CHECK(gate_latest(&out, st, trace, "architecture_approval") == 0);
	CHECK_STR(json_get_str(out, "status"), "approved");
	CHECK_STR(json_get_str(out, "note"), "fine");
	jv_free(out);
	CHECK(gate_list(&out, st, NULL, false) == 0 && jv_array_length(jv_copy(out)) >= 1);
	jv_free(out);
	jv_free(gate);
	store_free(st);
}

static void test_plans_and_llm_log(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1], id[ULID_LEN + 1];
	int v = 0;
	jv plan = P("{\"tasks\":[]}"), out = jv_null();

	new_trace(trace);
	CHECK(plans_append(&v, id, st, trace, plan, "initial plan") == 0 && v == 1);
	CHECK(plans_append(&v, NULL, st, trace, plan, "no changes") == 0 && v == 2);
	CHECK(plans_latest(&v, &out, st, trace) == 0 && v == 2);
	CHECK(jv_get_kind(out) == JV_KIND_OBJECT);
	jv_free(out);
	CHECK(plans_list(&out, st, trace) == 0);
	CHECK_INT(jv_array_length(jv_copy(out)), 2);
	jv_free(out);
	struct llm_usage u = { .input_tokens = 10, .output_tokens = 5 };
	struct llm_call_log rec = {
		.trace_id = trace, .phase = "plan", .provider = "anthropic", .model = "m",
		.attempt = 1, .call = 1, .request = P("{\"q\":1}"),
		.response = P("{\"text\":\"hello\",\"tool_calls\":[]}"),
		.usage = &u, .cost_usd = 0.25, .cost_known = true, .duration_ms = 12,
	};
	CHECK_MSG(llm_log_call(st, &rec) == 0, "%s", forge_last_error());
	CHECK(llm_log_replies(&out, st, trace, 0) == 0);
	CHECK_INT(jv_array_length(jv_copy(out)), 1);
	jv r = jv_array_get(jv_copy(out), 0);
	CHECK_STR(json_get_str(r, "text"), "hello");
	CHECK(json_get_num(r, "cost_usd", 0) == 0.25);
	jv calls = json_get(r, "tool_calls");
	CHECK(jv_get_kind(calls) == JV_KIND_ARRAY);
	jv_free(calls);
	jv_free(r);
	jv_free(out);
	jv_free(rec.request);
	jv_free(rec.response);
	jv_free(plan);
	store_free(st);
}

static void test_breaker_reads(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1];
	long calls = -1, failed = -1;

	new_trace(trace);
	/* (a database a second run of these tests shares: what they add) */
	double before = -1, usd = -1;
	CHECK(store_cost_between(&before, st, "2019-03-05T00:00:00.000Z", "2019-03-06T00:00:00.000Z") == 0);
	for (int i = 0; i < 3; i++) {
		char id[ULID_LEN + 1], line[512];

		ulid_new(id);
		snprintf(line, sizeof line, "{\"kind\":\"event\",\"id\":\"%s\",\"trace_id\":\"%s\","
			 "\"ts\":\"2019-03-0%dT00:00:00.000Z\",\"source\":\"test\",\"phase\":null,"
			 "\"type\":\"llm.called\",\"payload\":{},\"cost\":{\"usd\":1.5}}", id, trace, 4 + i);
		CHECK(put_line(st, line, NULL) == 0);
	}
	CHECK(store_cost_between(&usd, st, "2019-03-05T00:00:00.000Z", "2019-03-06T00:00:00.000Z") == 0);
	CHECK(usd - before == 1.5);
	/* the same records read by the trace, of one type, and by phase */
	long n = 0;
	CHECK(store_events_foreach_type(st, trace, "llm.called", count_line, &n) == 0);
	CHECK_INT(n, 3);
	n = 0;
	CHECK(store_events_foreach_type(st, trace, "tool.executed", count_line, &n) == 0);
	CHECK_INT(n, 0);
	char cid[ULID_LEN + 1], cline[512];
	ulid_new(cid);
	snprintf(cline, sizeof cline, "{\"kind\":\"event\",\"id\":\"%s\",\"trace_id\":\"%s\","
		 "\"ts\":\"2019-03-07T00:00:00.000Z\",\"source\":\"test\",\"phase\":\"review\","
		 "\"type\":\"llm.called\",\"payload\":{},\"cost\":{\"usd\":0.25,\"tokens\":9}}", cid, trace);
	CHECK(put_line(st, cline, NULL) == 0);
	jv by = jv_null();
	CHECK(store_cost_by_phase(&by, st, trace) == 0);
	CHECK(json_get_num(by, "review", -1) == 0.25);
	CHECK_INT(jv_object_length(jv_copy(by)), 1);
	jv_free(by);
	for (int i = 0; i < 3; i++) {
		char id[ULID_LEN + 1];
		ulid_new(id);
		char *line = event_line(trace, id, i);
		CHECK(put_line(st, line, NULL) == 0);
		free(line);
	}
	CHECK(store_tool_outcomes(&calls, &failed, st, trace, "2026-11-21T10:00:01.000Z", jv_null()) == 0);
	CHECK_INT(calls, 2);
	CHECK_INT(failed, 0);
	/* a phase's calls left out read each record (the same on both backends) */
	CHECK(store_tool_outcomes(&calls, &failed, st, trace, "2026-11-21T10:00:01.000Z",
				  json_set(jv_object(), "review", jv_string("2026-11-21T10:00:09.000Z"))) == 0);
	CHECK_INT(calls, 2);
	CHECK(store_tool_outcomes(&calls, &failed, st, trace, "", json_set(jv_object(), "", jv_string("x"))) == 0);
	CHECK_INT(calls, 3);
	store_free(st);
}

static void test_backend_and_schema(void)
{
	struct store *st = open_db();
	jv status = jv_null();
	bool pg = db_is_postgres(dbpath);

	CHECK(store_backend(st) == (pg ? DB_POSTGRES : DB_SQLITE));
	CHECK(store_db_status(&status, dbpath) == 0);
	CHECK_STR(json_get_str(status, "backend"), pg ? "postgresql" : "sqlite");
	CHECK(json_get_num(status, "version", -1) == json_get_num(status, "known", -2));
	jv pending = json_get(status, "pending");
	CHECK_INT(jv_array_length(pending), 0);   /* consumes pending */
	CHECK(store_schema_version(st) == (int)json_get_num(status, "known", -2));
	jv_free(status);
	if (pg) {
		/* modules that keep SQLite statements say so, never crash */
		sqlite3_stmt *s = NULL;
		CHECK(store_prepare(&s, st, "SELECT 1") == -1 && !s);
		CHECK_MSG(strstr(forge_last_error(), "not supported on PostgreSQL yet"), "%s", forge_last_error());
		CHECK(store_require_sqlite(st, "memory") == -1);
		CHECK_MSG(strstr(forge_last_error(), "memory is not supported on PostgreSQL yet"), "%s",
			  forge_last_error());
		CHECK(store_db(st) == NULL);
	} else {
		CHECK(store_require_sqlite(st, "memory") == 0);
	}
	store_free(st);
}

static void test_display_path(void)
{
	char *p;

	CHECK(db_is_postgres("postgres://h/db") && db_is_postgres("postgresql://h/db"));
	CHECK(db_is_postgres("host=/run/pg dbname=forge") && db_is_postgres("dbname=forge"));
	CHECK(!db_is_postgres("forge.db") && !db_is_postgres("postgres:") && !db_is_postgres("a=b.db"));
	p = db_display_path("postgresql://me:s3cret@db.example/forge?sslmode=require");
	CHECK_STR(p, "postgresql://me:***@db.example/forge?sslmode=require");
	free(p);
	p = db_display_path("postgres://me@h/db?password=s3cret&sslmode=require");
	CHECK_STR(p, "postgres://me@h/db?password=***&sslmode=require");
	free(p);
	p = db_display_path("host=/tmp dbname=forge password='a b' user=me");
	CHECK_STR(p, "host=/tmp dbname=forge password=*** user=me");
	free(p);
	p = db_display_path("/tmp/forge.db");
	CHECK_STR(p, "/tmp/forge.db");
	free(p);
	/* libpq's spacing and any of its keywords first (before: read as a
	 * SQLite file named after the string, its password in the name) */
	CHECK(db_is_postgres("dbname = forge host=/tmp password=Pw"));
	CHECK(db_is_postgres("\ttarget_session_attrs=read-write host=/tmp dbname=forge"));
	CHECK(db_is_postgres("sslrootcert=/etc/ca.pem dbname=forge"));
	CHECK(!db_is_postgres("dbnames=forge") && !db_is_postgres("host") && !db_is_postgres("my host=x"));
	p = db_display_path("dbname = forge password = Pw user=me\tpassword='x y'");
	CHECK_STR(p, "dbname = forge password = *** user=me\tpassword=***");
	free(p);
	p = db_display_path("host=/tmp dbname='pass word=1' password=Pw");
	CHECK_STR(p, "host=/tmp dbname='pass word=1' password=***");
	free(p);
	/* white space around a URI: PostgreSQL still, shown (and given to
	 * libpq) without it (before: a SQLite file named after the URI) */
	CHECK(db_is_postgres(" postgresql://h/db") && db_is_postgres("\n\tpostgres://h/db"));
	p = db_display_path("\n postgresql://me:Pw@h/db?sslmode=require \n");
	CHECK_STR(p, "postgresql://me:***@h/db?sslmode=require");
	free(p);
	p = db_pg_trim(" \thost=/tmp dbname=forge\n");
	CHECK_STR(p, "host=/tmp dbname=forge");
	free(p);
	/* a query key percent-encoded as libpq decodes it, and sslpassword
	 * (the client key's passphrase): hidden too */
	p = db_display_path("postgresql://me@/db?host=/s&pass%77ord=Pw&%73slpassword=Key&sslmode=require");
	CHECK_STR(p, "postgresql://me@/db?host=/s&pass%77ord=***&%73slpassword=***&sslmode=require");
	free(p);
	p = db_display_path("postgresql://me@h/db?sslpassword=Key#x&application_name=password=no");
	CHECK_STR(p, "postgresql://me@h/db?sslpassword=***&application_name=password=no");
	free(p);
	p = db_display_path("sslpassword=Key dbname=forge sslpassword = 'a b'");
	CHECK_STR(p, "sslpassword=*** dbname=forge sslpassword = ***");
	free(p);
}

/* The live text of a streaming call: written, read back from another
 * connection (another process's view), gone when the call ends; a
 * sub-agent's row (migration 013 / pg 006) carries its span, the phase's
 * own agent's none. */
static void test_live_text(void)
{
	struct store *st = open_db(), *reader = open_db();
	struct store_live w, sub;
	char trace[ULID_LEN + 1], span[ULID_LEN + 1];
	jv list = jv_null(), row;

	new_trace(trace);
	ulid_new(span);
	store_live_init(&w, st);
	store_live_init(&sub, st);
	store_live_begin(&w, trace, "implement", "m-1", NULL);
	CHECK(w.st != NULL);
	store_live_add(&w, "Hello, ", 7);	/* the first text is written at once */
	CHECK(store_live_list(&list, reader, trace) == 0);
	CHECK(jv_array_length(jv_copy(list)) == 1);
	row = jv_array_get(jv_copy(list), 0);
	CHECK_STR(json_get_str(row, "text"), "Hello, ");
	CHECK_STR(json_get_str(row, "phase"), "implement");
	CHECK(json_has(row, "span") && !json_get_str(row, "span"));
	CHECK(json_get_num(row, "pid", 0) == (double)getpid());
	CHECK(jv_equal(json_get(row, "alive"), jv_true()));
	jv_free(row);
	jv_free(list);
	store_live_begin(&sub, trace, "implement-sub", "m-1", span);
	CHECK(sub.st != NULL);
	store_live_add(&sub, "sub", 3);
	store_live_end(&w);
	CHECK(w.st != NULL);
	CHECK(store_live_list(&list, reader, trace) == 0);
	CHECK(jv_array_length(jv_copy(list)) == 1);
	row = jv_array_get(jv_copy(list), 0);
	CHECK_STR(json_get_str(row, "span"), span);
	CHECK_STR(json_get_str(row, "text"), "sub");
	jv_free(row);
	jv_free(list);
	store_live_end(&sub);
	CHECK(store_live_list(&list, reader, trace) == 0);
	CHECK(jv_array_length(jv_copy(list)) == 0);
	jv_free(list);
	store_live_release(&w);
	store_live_release(&sub);
	store_free(reader);
	store_free(st);
}

/* A finding of trace as JSON text's object (f's fields over the defaults). */
static jv finding(const char *trace, const char *message, const char *extra)
{
	char text[512];

	snprintf(text, sizeof text, "{\"severity\":\"warning\",\"category\":\"style\",\"rule\":\"R1\","
		 "\"file\":\"a.c\",\"line\":7,\"message\":\"%s\",\"trace_id\":\"%s\"%s%s}", message, trace,
		 extra ? "," : "", extra ? extra : "");
	return P(text);
}

/* Findings: stored once per (trace, fingerprint), read back with their
 * types, listed newest first by trace or run, dismissed once. */
static void test_findings(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1], other[ULID_LEN + 1], id1[ULID_LEN + 1], id2[ULID_LEN + 1];
	char id3[ULID_LEN + 1], again[ULID_LEN + 1];
	jv f = jv_null(), list = jv_null(), first;

	new_trace(trace);
	new_trace(other);
	CHECK(findings_put(id1, st, finding(trace, "unused variable x",
					   "\"confidence\":0.75,\"fixable\":true,\"layer\":\"static\"")) == 0);
	CHECK(findings_put(id2, st, finding(trace, "caf\u00e9 'quoted' ?1", NULL)) == 0);
	CHECK(strcmp(id1, id2) != 0);
	/* found again in the same trace (a bounce): the first row's id, no new row */
	CHECK(findings_put(again, st, finding(trace, "unused variable x", NULL)) == 0);
	CHECK_STR(again, id1);
	/* the same in another trace is another row; a run_id stands for the trace */
	CHECK(findings_put(id3, st, P("{\"severity\":\"error\",\"category\":\"bug\","
				       "\"message\":\"unused variable x\",\"rule\":\"R1\",\"file\":\"a.c\","
				       "\"run_id\":\"RUN-1\",\"fingerprint\":\"fp-own\"}")) == 0);
	CHECK(findings_put(NULL, st, finding(other, "unused variable x", NULL)) == 0);

	CHECK(findings_get(&f, st, id1) == 0);
	CHECK_STR(json_get_str(f, "trace_id"), trace);
	CHECK_STR(json_get_str(f, "phase"), "review");
	CHECK_STR(json_get_str(f, "layer"), "static");
	CHECK(json_get_num(f, "line", -1) == 7);
	CHECK(json_get_num(f, "confidence", -1) == 0.75);
	CHECK(jv_equal(json_get(f, "fixable"), jv_true()));
	CHECK(jv_equal(json_get(f, "dismissed"), jv_false()));
	CHECK(jv_equal(json_get(f, "fix"), jv_null()));
	CHECK_INT(strlen(json_get_str(f, "fingerprint")), 32);
	jv_free(f);
	CHECK(findings_get(&f, st, id3) == 0);
	CHECK_STR(json_get_str(f, "trace_id"), "RUN-1");
	CHECK_STR(json_get_str(f, "fingerprint"), "fp-own");
	CHECK(jv_equal(json_get(f, "line"), jv_null()));
	CHECK(jv_equal(json_get(f, "fixable"), jv_false()));
	jv_free(f);
	CHECK(findings_get(&f, st, "01NOSUCHFINDING00000000000") == 0);
	CHECK(jv_get_kind(f) == JV_KIND_NULL);

	CHECK(findings_list(&list, st, trace, false, 0) == 0);
	CHECK_INT(jv_array_length(jv_copy(list)), 2);
	first = jv_array_get(jv_copy(list), 0);     /* newest first */
	CHECK_STR(json_get_str(first, "id"), id2);
	CHECK_STR(json_get_str(first, "message"), "caf\u00e9 'quoted' ?1");
	jv_free(first);
	jv_free(list);
	CHECK(findings_list(&list, st, trace, false, 1) == 0);
	CHECK_INT(jv_array_length(list), 1);
	CHECK(findings_list(&list, st, "RUN-1", false, 0) == 0);
	CHECK_INT(jv_array_length(list), 1);

	/* dismissed once: the first reason is kept; listed only with the dismissed */
	CHECK_INT(findings_dismiss(st, id1, "human", "not a bug", "2026-11-21T10:00:00.000Z"), 0);
	CHECK_INT(findings_dismiss(st, id1, "human", "again", "2026-11-21T11:00:00.000Z"),
		  FINDINGS_ALREADY_DISMISSED);
	CHECK_INT(findings_dismiss(st, "01NOSUCHFINDING00000000000", "human", NULL, "2026-11-21T11:00:00.000Z"),
		  FINDINGS_NOT_FOUND);
	CHECK(findings_get(&f, st, id1) == 0);
	CHECK(jv_equal(json_get(f, "dismissed"), jv_true()));
	CHECK_STR(json_get_str(f, "dismissed_by"), "human");
	CHECK_STR(json_get_str(f, "dismissed_reason"), "not a bug");
	CHECK_STR(json_get_str(f, "dismissed_at"), "2026-11-21T10:00:00.000Z");
	jv_free(f);
	CHECK(findings_list(&list, st, trace, false, 0) == 0);
	CHECK_INT(jv_array_length(list), 1);
	CHECK(findings_list(&list, st, trace, true, 0) == 0);
	CHECK_INT(jv_array_length(list), 2);
	/* the dismissed ones of every trace: this database's other tests' too */
	CHECK(findings_list_dismissed(&list, st, 0) == 0);
	CHECK(jv_array_length(jv_copy(list)) >= 1);
	jv_array_foreach(list, i, d) {
		CHECK(jv_equal(json_get(d, "dismissed"), jv_true()));
		jv_free(d);
		(void)i;
	}
	jv_free(list);
	CHECK(findings_list_dismissed(&list, st, 1) == 0);
	CHECK_INT(jv_array_length(list), 1);

	/* bad findings: a clear error, nothing stored */
	CHECK(findings_put(NULL, st, P("{\"severity\":\"warning\"}")) == -1);
	CHECK_MSG(strstr(forge_last_error(), "needs severity, category and message"), "%s", forge_last_error());
	CHECK(findings_put(NULL, st, finding(trace, "bad severity", "\"severity\":\"loud\"")) == -1);
	CHECK_MSG(strstr(forge_last_error(), "cannot store a finding"), "%s", forge_last_error());
	CHECK(findings_put(NULL, st, jv_string("not an object")) == -1);
	store_free(st);
}

/* forge compile's documents: versions per (project, kind), an equal one not
 * appended again, read back by version, listed in the stages' order, never
 * updated or deleted. */
static void test_compile_docs(void)
{
	struct store *st = open_db();
	char project[64], trace[ULID_LEN + 1];
	jv row = jv_null(), list = jv_null(), doc1 = P("{\"flows\":[\"sign in\"],\"s\":\"caf\u00e9\"}");
	jv doc2 = P("{\"flows\":[\"sign in\",\"sign out\"]}");
	int v = 0;

	new_trace(trace);
	snprintf(project, sizeof project, "/tmp/project-%s", trace);
	CHECK(docs_append(&v, st, project, "flows", trace, doc1) == 0);
	CHECK_INT(v, 1);
	CHECK(docs_append(&v, st, project, "flows", trace, doc1) == 0);
	CHECK_INT(v, 1);
	CHECK(docs_append(&v, st, project, "flows", NULL, doc2) == 0);
	CHECK_INT(v, 2);
	CHECK(docs_append(&v, st, project, "intent", trace, doc1) == 0);
	CHECK_INT(v, 1);
	CHECK(docs_append(&v, st, project, "zz_custom", trace, doc1) == 0);
	jv not_object = jv_array();      /* borrowed */
	CHECK(docs_append(&v, st, project, "flows", trace, not_object) == -1);
	jv_free(not_object);

	CHECK(docs_get(&row, st, project, "flows", 0) == 0);
	CHECK(json_get_num(row, "version", -1) == 2);
	CHECK(jv_equal(json_get(row, "trace_id"), jv_null()));
	jv got = json_get(row, "doc");
	CHECK(json_equal(got, doc2));
	jv_free(got);
	jv_free(row);
	CHECK(docs_get(&row, st, project, "flows", 1) == 0);
	CHECK_STR(json_get_str(row, "trace_id"), trace);
	got = json_get(row, "doc");
	CHECK(json_equal(got, doc1));
	jv_free(got);
	jv_free(row);
	CHECK(docs_get(&row, st, project, "flows", 9) == 0);
	CHECK(jv_get_kind(row) == JV_KIND_NULL);

	CHECK(docs_list(&list, st, project) == 0);
	CHECK_INT(jv_array_length(jv_copy(list)), 4);
	const char *want[] = { "intent/1", "flows/1", "flows/2", "zz_custom/1" };
	jv_array_foreach(list, i, r) {
		char kv[64];

		snprintf(kv, sizeof kv, "%s/%.0f", json_get_str(r, "kind"), json_get_num(r, "version", 0));
		jv_free(r);
		CHECK_STR(kv, want[i]);
	}
	jv_free(list);
	/* append-only */
	CHECK(store_exec(st, "DELETE FROM compile_docs") == -1);
	CHECK(store_exec(st, "UPDATE compile_docs SET version = 7") == -1);
	CHECK(docs_get(&row, st, project, "intent", 0) == 0);
	CHECK(json_get_num(row, "version", -1) == 1);
	jv_free(row);
	jv_free(doc1);
	jv_free(doc2);
	store_free(st);
}

/* Writers of one document kind at once, each its own connection (a forked
 * process): every version is taken once, none fails (on PostgreSQL the
 * advisory lock of docs_append; on SQLite BEGIN IMMEDIATE). */
enum { WRITERS = 4, EACH = 10 };

/* append(st, key, doc) WRITERS processes at once, EACH documents
 * {"writer":W,"i":I} each; checks they all succeeded. */
static void concurrent_appends(int (*append)(struct store *st, const char *key, jv doc), const char *key)
{
	pid_t pids[WRITERS];

	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		CHECK(pids[w] >= 0);
		if (pids[w] == 0) {
			struct store *st = open_db();
			int bad = 0;

			for (int i = 0; i < EACH; i++) {
				char text[64];

				snprintf(text, sizeof text, "{\"writer\":%d,\"i\":%d}", w, i);
				jv doc = P(text);
				if (append(st, key, doc) < 0) {
					fprintf(stderr, "writer %d: %s\n", w, forge_last_error());
					bad = 1;
				}
				jv_free(doc);
			}
			store_free(st);
			_exit(bad);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status = -1;

		CHECK(waitpid(pids[w], &status, 0) == pids[w]);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d: status %d", w, status);
	}
}

/* Checks list (consumed) holds versions 1..WRITERS*EACH in order. */
static void check_versions(jv list)
{
	CHECK_INT(jv_array_length(jv_copy(list)), WRITERS * EACH);
	jv_array_foreach(list, i, r) {
		double v = json_get_num(r, "version", 0);

		jv_free(r);
		CHECK_INT(v, i + 1);
	}
	jv_free(list);
}

static int append_plan(struct store *st, const char *trace, jv plan)
{
	int v;

	return plans_append(&v, NULL, st, trace, plan, "concurrent");
}

static int append_flows(struct store *st, const char *project, jv doc)
{
	int v;

	return docs_append(&v, st, project, "flows", NULL, doc);
}

/* Plan versions appended by several processes at once to one trace: each
 * gets its own next number (on PostgreSQL, store_lock; without it two take
 * the same number and the second fails on the unique version). */
static void test_plans_concurrent(void)
{
	char trace[ULID_LEN + 1];
	jv list = jv_null();

	new_trace(trace);
	concurrent_appends(append_plan, trace);
	struct store *st = open_db();

	CHECK(plans_list(&list, st, trace) == 0);
	check_versions(list);
	store_free(st);
}

static void test_compile_docs_concurrent(void)
{
	char project[64], trace[ULID_LEN + 1];
	jv list = jv_null();

	new_trace(trace);
	snprintf(project, sizeof project, "/tmp/concurrent-%s", trace);
	concurrent_appends(append_flows, project);
	struct store *st = open_db();

	CHECK(docs_list(&list, st, project) == 0);
	check_versions(list);
	store_free(st);
}

/* The write-ahead log's durability calls: no-ops on PostgreSQL; on SQLite
 * a passive checkpoint after a write copies the whole log. */
static void test_log_durability(void)
{
	struct store *st = open_db();
	char trace[ULID_LEN + 1], id[ULID_LEN + 1];

	new_trace(trace);
	ulid_new(id);
	char *line = event_line(trace, id, 1);

	CHECK(put_line(st, line, NULL) == 0);
	free(line);
	CHECK(store_sync_log(st) == 0);
	CHECK(store_checkpoint_log(st) == !db_is_postgres(dbpath));
	CHECK(store_sync_log(st) == 0);
	CHECK(strchr(store_sqlite_version(), '.') != NULL);
	store_free(st);
}

/* Run sql (no parameters, no row) on st. */
static int exec_sql(struct store *st, const char *sql)
{
	struct db_stmt *s;

	return db_prepare(&s, st, sql) < 0 ? -1 : db_step_done(st, s, "running '%s'", sql);
}

/* The integer the one-column query sql gives with ?1 = arg (or unbound
 * when arg < 0); -1 for NULL or no row. */
static long long query_int(struct store *st, const char *sql, long long arg)
{
	struct db_stmt *s;
	long long v = -1;

	if (db_prepare(&s, st, sql) < 0)
		return -2;
	if (arg >= 0)
		db_bind_int64(s, 1, arg);
	if (db_step(s) == DB_ROW && !db_col_null(s, 0))
		v = db_col_int64(s, 0);
	db_finalize(s);
	return v;
}

/* db_prepare() keeps SQLite statements for the next prepare of the same
 * text: a kept one comes back reset and unbound, a second prepare while the
 * first is out gets its own, and more texts than the store keeps still run. */
static void test_statement_reuse(void)
{
	struct store *st = open_db();
	struct db_stmt *a, *b;
	char sql[64];

	CHECK_INT(exec_sql(st, "CREATE TEMP TABLE reuse_t (x INTEGER)"), 0);
	for (int i = 1; i <= 50; i++) {
		CHECK_INT(db_prepare(&a, st, "INSERT INTO reuse_t (x) VALUES (?1)"), 0);
		db_bind_int64(a, 1, i);
		CHECK_INT(db_step_done(st, a, "inserting %d", i), 0);
	}
	CHECK_INT(query_int(st, "SELECT count(*) FROM reuse_t WHERE ?1 = 1", 1), 50);
	CHECK_INT(query_int(st, "SELECT sum(x) FROM reuse_t WHERE ?1 = 1", 1), 1275);
	/* bindings do not outlive db_finalize() */
	CHECK_INT(query_int(st, "SELECT ?1", 7), 7);
	CHECK_INT(query_int(st, "SELECT ?1", -1), -1);
	/* left mid-result, it starts again from the first row */
	CHECK_INT(db_prepare(&a, st, "SELECT x FROM reuse_t ORDER BY x"), 0);
	CHECK_INT(db_step(a), DB_ROW);
	CHECK_INT(db_step(a), DB_ROW);
	CHECK_INT(db_col_int64(a, 0), 2);
	/* the same text while a is out: a statement of its own */
	CHECK_INT(db_prepare(&b, st, "SELECT x FROM reuse_t ORDER BY x"), 0);
	CHECK_INT(db_step(b), DB_ROW);
	CHECK_INT(db_col_int64(b, 0), 1);
	CHECK_INT(db_step(a), DB_ROW);
	CHECK_INT(db_col_int64(a, 0), 3);
	db_finalize(a);
	db_finalize(b);
	CHECK_INT(db_prepare(&a, st, "SELECT x FROM reuse_t ORDER BY x"), 0);
	CHECK_INT(db_step(a), DB_ROW);
	CHECK_INT(db_col_int64(a, 0), 1);
	db_finalize(a);
	/* more texts than are kept, twice over */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 80; i++) {
			snprintf(sql, sizeof sql, "SELECT ?1 + %d", i);
			CHECK_INT(query_int(st, sql, 1000), 1000 + i);
		}
	CHECK_INT(exec_sql(st, "DROP TABLE reuse_t"), 0);
	store_free(st);
}

int main(void)
{
	const char *db = getenv("FORGE_TEST_DB");
	char dir[256];

	if (db && *db) {
		snprintf(dbpath, sizeof dbpath, "%s", db);
	} else {
		const char *base = getenv("TMPDIR");
		snprintf(dir, sizeof dir, "%s/test_store_backend.XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			return 1;
		}
		snprintf(dbpath, sizeof dbpath, "%s/forge.db", dir);
	}
	unsetenv("FORGE_DB");
	RUN(test_display_path);
	RUN(test_backend_and_schema);
	RUN(test_events_idempotent);
	RUN(test_runs);
	RUN(test_run_spent_from_log);
	RUN(test_checkpoints);
	RUN(test_history_order);
	RUN(test_traces_and_prefixes);
	RUN(test_leases);
	RUN(test_lease_fence);
	RUN(test_gates);
	RUN(test_plans_and_llm_log);
	RUN(test_breaker_reads);
	RUN(test_live_text);
	RUN(test_findings);
	RUN(test_compile_docs);
	RUN(test_compile_docs_concurrent);
	RUN(test_plans_concurrent);
	RUN(test_log_durability);
	RUN(test_statement_reuse);
	if (!(db && *db)) {
		char side[600];

		unlink(dbpath);
		snprintf(side, sizeof side, "%s-wal", dbpath);
		unlink(side);
		snprintf(side, sizeof side, "%s-shm", dbpath);
		unlink(side);
		rmdir(dir);
	}
	return unit_done();
}
