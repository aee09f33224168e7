/*
 * test_lessons.c - the memories a run writes (lib/memory/memory.h): a
 * run's episode and its lessons read as sentences a person can use, from
 * hand-built events (a test bounce with its failures, a review bounce whose
 * findings are only in finding.detected events, a run that failed).
 */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "memory/memory.h"
#include "store/store.h"
#include "unit.h"
#include "memory_fixture.h"

/* One event: TYPE in PHASE (NULL: outside any phase) with PAYLOAD (JSON). */
static jv ev(const char *phase, const char *type, const char *payload)
{
	jv e = jv_object();

	e = json_set(e, "kind", jv_string("event"));
	e = json_set(e, "ts", jv_string("2026-01-01T00:00:00.000Z"));
	e = json_set(e, "phase", json_str_or_null(phase));
	e = json_set(e, "type", jv_string(type));
	return json_set(e, "payload", json_parse(payload, strlen(payload)));
}

static jv content_of(const char *id, const char *key)
{
	jv mem;

	if (memory_get(&mem, m, id) < 0)
		return jv_null();
	jv v = json_get(mem, key);
	jv_free(mem);
	return v;
}

static bool has(jv v, const char *s)
{
	bool ok = jv_get_kind(v) == JV_KIND_STRING && strstr(jv_string_value(v), s);

	if (!ok)
		printf("# no \"%s\" in %s\n", s, jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : "(none)");
	return ok;
}

static void test_test_bounce(void)
{
	jv evs = jv_array(), ids;
	char id[ULID_LEN + 1];

	open_mem(":memory:");
	evs = jv_array_append(evs, ev(NULL, "run.started", "{\"task\":\"parse ISO dates\"}"));
	evs = jv_array_append(evs, ev("implement", "phase.started", "{\"task\":\"parse ISO dates\"}"));
	evs = jv_array_append(evs, ev("implement", "implement.summary",
				      "{\"attempt\":1,\"summary\":\"Added parse_date.\",\"files\":[\"dates.py\"]}"));
	evs = jv_array_append(evs, ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev("test", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("test", "phase.completed", "{\"status\":\"rejected\"}"));
	evs = jv_array_append(evs, ev(NULL, "loop.phase_bounce",
				      "{\"from\":\"test\",\"n\":1,\"reason\":\"1 test fails\",\"failures\":[{\"test\":"
				      "\"test_leap_day\",\"file\":\"test_dates.py\",\"message\":\"ValueError: day is out "
				      "of range\",\"root_cause\":\"February 29 is not accepted\"}]}"));
	evs = jv_array_append(evs, ev("implement", "phase.started", "{}"));
	/* no summary this time: the phase's reason says what it did */
	evs = jv_array_append(evs, ev("implement", "phase.completed",
				      "{\"status\":\"ok\",\"reason\":\"attempt 2: 1 file changed\"}"));
	evs = jv_array_append(evs, ev("test", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("test", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev(NULL, "run.completed", "{\"status\":\"completed\"}"));

	CHECK_INT(memory_record_lessons(&ids, NULL, m, "01JDB2AAAAAAAAAAAAAAAAAAAA", jv_copy(evs)), 1);
	jv lid = jv_array_get(jv_copy(ids), 0);
	jv c = content_of(jv_string_value(lid), "content");
	CHECK(has(c, "Lesson for implement (Python) from the run \"parse ISO dates\": test sent implement "
		     "attempt 1 back: test \"test_leap_day\" (test_dates.py): ValueError: day is out of range "
		     "(root cause: February 29 is not accepted). Fixed in attempt 2: attempt 2: 1 file changed. "
		     "Then the tests passed. Outcome: fixed; the run completed."));
	jv_free(c);
	c = content_of(jv_string_value(lid), "tags");
	const char *want = "[\"lesson\",\"implement\",\"test\",\"lang:python\",\"fixed\"]";
	CHECK(jv_equal(c, json_parse(want, strlen(want))));
	c = content_of(jv_string_value(lid), "context");
	CHECK(has(c, "implement phase: parse ISO dates (a test failure in Python)"));
	jv_free(c);
	jv_free(lid);
	jv_free(ids);

	CHECK(memory_record_episode(id, NULL, m, "01JDB2AAAAAAAAAAAAAAAAAAAA", evs) == 0);
	c = content_of(id, "content");
	CHECK(has(c, "Run of \"parse ISO dates\" (Python): implement → test → implement → test; completed after "
		     "1 bounce. test sent implement attempt 1 back: test \"test_leap_day\""));
	CHECK(!strstr(jv_string_value(c), "unknown"));
	jv_free(c);
	c = content_of(id, "context");
	CHECK(has(c, "forge run: parse ISO dates (Python)"));
	jv_free(c);
	close_mem();
}

static void test_review_bounce_unfixed(void)
{
	jv evs = jv_array(), ids;
	char id[ULID_LEN + 1];

	open_mem(":memory:");
	evs = jv_array_append(evs, ev(NULL, "run.started", "{\"task\":\"add a cache\"}"));
	evs = jv_array_append(evs, ev("implement", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev("review", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("review", "finding.detected",
				      "{\"rule\":\"null-deref\",\"category\":\"bug\",\"file\":\"cache.c\",\"line\":12,"
				      "\"message\":\"malloc() result used without a NULL check.\"}"));
	evs = jv_array_append(evs, ev("review", "phase.completed", "{\"status\":\"rejected\"}"));
	/* an older supervisor: the bounce without its findings */
	evs = jv_array_append(evs, ev(NULL, "loop.phase_bounce", "{\"from\":\"review\",\"n\":1}"));
	evs = jv_array_append(evs, ev("implement", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("implement", "implement.summary",
				      "{\"attempt\":2,\"summary\":\"Checked malloc.\",\"files\":null}"));
	evs = jv_array_append(evs, ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev("review", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("review", "phase.completed", "{\"status\":\"rejected\"}"));
	evs = jv_array_append(evs, ev(NULL, "run.completed",
				      "{\"status\":\"failed\",\"reason\":\"review still requests changes\"}"));

	CHECK_INT(memory_record_lessons(&ids, NULL, m, NULL, jv_copy(evs)), 1);
	jv lid = jv_array_get(jv_copy(ids), 0);
	jv c = content_of(jv_string_value(lid), "content");
	CHECK(has(c, "review sent implement attempt 1 back: null-deref in cache.c:12: malloc() result used "
		     "without a NULL check. Fixed in attempt 2: Checked malloc. Then the review still said no. "
		     "Outcome: not fixed; the run failed."));
	jv_free(c);
	CHECK(memory_get(&c, m, jv_string_value(lid)) == 0);
	CHECK(json_get_num(c, "confidence", 0) == 0.5);
	jv tags = json_get(c, "tags");
	const char *want = "[\"bug\",\"lesson\",\"implement\",\"review\",\"lang:c\",\"null-deref\",\"unresolved\"]";
	CHECK(jv_equal(tags, json_parse(want, strlen(want))));
	jv_free(c);
	jv_free(lid);
	jv_free(ids);
	CHECK(memory_record_episode(id, NULL, m, NULL, evs) == 0);
	c = content_of(id, "content");
	CHECK(has(c, "; failed: review still requests changes after 1 bounce."));
	jv_free(c);
	/* a run without bounces has no lessons; bad input is refused */
	CHECK_INT(memory_record_lessons(&ids, NULL, m, NULL, JV_ARRAY(ev(NULL, "run.started", "{}"))), 0);
	CHECK_INT(jv_array_length(ids), 0);
	CHECK(memory_record_lessons(&ids, NULL, m, NULL, jv_object()) < 0);
	jv_free(ids);
	close_mem();
}

/* How many memories the run T has (its source). */
static int memories_of(const char *trace)
{
	struct memory_filter f;
	jv all;
	int n = 0;

	memory_filter_init(&f);
	f.include_archived = true;
	if (memory_list(&all, m, &f) < 0)
		return -1;
	jv_array_foreach(all, i, mem) {
		const char *src = json_get_str(mem, "source");
		n += src && strcmp(src, trace) == 0;
		jv_free(mem);
		(void)i;
	}
	jv_free(all);
	return n;
}

/* A run that failed after a bounce, reflected on then, resumed to a new
 * end and reflected on again: its episode and the bounce's lesson are
 * rewritten for the new end, not stored a second time. */
static void test_resumed_run(void)
{
	const char *t = "01JDB2BBBBBBBBBBBBBBBBBBBB";
	jv evs = jv_array(), ids, again;
	char id[ULID_LEN + 1], id2[ULID_LEN + 1];
	bool updated = true;

	open_mem(":memory:");
	evs = jv_array_append(evs, ev(NULL, "run.started", "{\"task\":\"add a cache\"}"));
	evs = jv_array_append(evs, ev("implement", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev("review", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("review", "phase.completed", "{\"status\":\"rejected\"}"));
	evs = jv_array_append(evs, ev(NULL, "loop.phase_bounce",
				      "{\"from\":\"review\",\"n\":1,\"findings\":[{\"rule\":\"null-deref\","
				      "\"file\":\"cache.c\",\"line\":12,\"message\":\"malloc() unchecked\"}]}"));
	evs = jv_array_append(evs, ev("implement", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("implement", "implement.summary",
				      "{\"attempt\":2,\"summary\":\"Checked malloc.\",\"files\":[\"cache.c\"]}"));
	evs = jv_array_append(evs, ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev(NULL, "run.completed", "{\"status\":\"failed\",\"reason\":\"the budget is spent\"}"));
	CHECK(memory_record_episode(id, &updated, m, t, jv_copy(evs)) == 0 && !updated);
	CHECK_INT(memory_record_lessons(&ids, &again, m, t, jv_copy(evs)), 1);
	CHECK_INT(jv_array_length(jv_copy(again)), 0);
	jv lid = jv_array_get(jv_copy(ids), 0);
	jv c = content_of(jv_string_value(lid), "content");
	CHECK(has(c, "Outcome: not fixed; the run failed."));
	jv_free(c);
	jv_free(ids);
	jv_free(again);

	/* resumed: the review passes, the run completes */
	evs = jv_array_append(evs, ev(NULL, "run.resumed", "{}"));
	evs = jv_array_append(evs, ev("review", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("review", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev(NULL, "run.completed", "{\"status\":\"completed\"}"));
	for (int round = 0; round < 2; round++) {   /* (and once more: nothing changes) */
		CHECK(memory_record_episode(id2, &updated, m, t, jv_copy(evs)) == 0 && updated);
		CHECK_STR(id2, id);
		c = content_of(id, "content");
		CHECK(has(c, "; completed after 1 bounce."));
		jv_free(c);
		CHECK_INT(memory_record_lessons(&ids, &again, m, t, jv_copy(evs)), 0);
		CHECK_INT(jv_array_length(jv_copy(ids)), 0);
		CHECK(jv_equal(jv_copy(again), JV_ARRAY(jv_copy(lid))));
		c = content_of(jv_string_value(lid), "content");
		CHECK(has(c, "Then the review passed. Outcome: fixed; the run completed."));
		jv_free(c);
		CHECK(memory_get(&c, m, jv_string_value(lid)) == 0);
		CHECK(json_get_num(c, "confidence", 0) == 0.7);
		jv_free(c);
		jv_free(ids);
		jv_free(again);
		CHECK_INT(memories_of(t), 2);
	}
	jv_free(lid);
	jv_free(evs);

	/* a phase's episode of the run, recorded twice: the same memory (the content hash) */
	evs = JV_ARRAY(ev("implement", "phase.started", "{\"task\":\"add a cache\"}"),
		       ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	CHECK(memory_record_episode(id, &updated, m, t, jv_copy(evs)) == 0 && !updated);
	CHECK(memory_record_episode(id2, &updated, m, t, evs) == 0 && updated);
	CHECK_STR(id2, id);
	CHECK_INT(memories_of(t), 3);
	close_mem();
}

/* Text of n copies of unit (a new string). */
static char *repeat(const char *unit, size_t n)
{
	size_t k = strlen(unit);
	char *s = malloc(k * n + 1);

	for (size_t i = 0; i < n; i++)
		memcpy(s + i * k, unit, k);
	s[k * n] = '\0';
	return s;
}

/* Whether the memory's content is at most max bytes, well-formed UTF-8
 * (no character cut in half, no U+FFFD) and holds "…" (it says it was cut). */
static bool cut_well(jv c, size_t max)
{
	const char *s = jv_get_kind(c) == JV_KIND_STRING ? jv_string_value(c) : "";
	size_t n = strlen(s);
	bool ok = n > 0 && n <= max && json_utf8_valid(s, n) && !strstr(s, "\xef\xbf\xbd") && strstr(s, "…");

	if (!ok)
		printf("# %zu bytes (at most %zu), UTF-8 %d: %.200s\n", n, max, json_utf8_valid(s, n), s);
	return ok;
}

/* A bounce whose evidence is long (a 280 KB root cause, long test and file
 * names) and whose message and fix are non-ASCII text longer than their
 * caps: the lesson and the episode are stored all the same (before: both
 * were over MEMORY_CONTENT_MAX and refused), each part cut on a UTF-8
 * character's start with "…" (before: cut inside "é"). */
static void test_long_evidence(void)
{
	char *cause = repeat("x ", 140000), *name = repeat("t", 100000), *msg = repeat("é", 150);
	char *fix = repeat("é", 300);
	jv evs = jv_array(), f = jv_object(), ids;
	char id[ULID_LEN + 1];
	struct buf m2 = BUF_INIT;

	open_mem(":memory:");
	buf_addf(&m2, "a%s", msg);  /* (byte 240 is inside an "é") */
	f = json_set(f, "test", jv_string(name));
	f = json_set(f, "file", jv_string(name));
	f = json_set(f, "message", jv_string(m2.buf));
	f = json_set(f, "root_cause", jv_string(cause));
	evs = jv_array_append(evs, ev(NULL, "run.started", "{\"task\":\"tidy calc_add\"}"));
	evs = jv_array_append(evs, ev("implement", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev("test", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("test", "phase.completed", "{\"status\":\"rejected\"}"));
	jv b = ev(NULL, "loop.phase_bounce", "{\"from\":\"test\",\"n\":1}");
	jv p = json_get(b, "payload");
	b = json_set(b, "payload", json_set(json_set(p, "failures", JV_ARRAY(jv_copy(f), jv_copy(f))), "reason",
					    jv_string(cause)));
	evs = jv_array_append(evs, b);
	evs = jv_array_append(evs, ev("implement", "phase.started", "{}"));
	jv sum = ev("implement", "implement.summary", "{\"attempt\":2,\"files\":[\"calc.c\"]}");
	p = json_get(sum, "payload");
	sum = json_set(sum, "payload", json_set(p, "summary", jv_string(fix)));
	evs = jv_array_append(evs, sum);
	evs = jv_array_append(evs, ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	jv end = ev(NULL, "run.completed", "{\"status\":\"failed\"}");
	p = json_get(end, "payload");
	end = json_set(end, "payload", json_set(p, "reason", jv_string(cause)));
	evs = jv_array_append(evs, end);

	CHECK_INT(memory_record_lessons(&ids, NULL, m, NULL, jv_copy(evs)), 1);
	jv lid = jv_array_get(jv_copy(ids), 0);
	jv c = content_of(jv_string_value(lid), "content");
	CHECK(cut_well(c, 8000));
	/* the message: "a" and 119 "é" (240 bytes hold 119 and a half), then "…" */
	char *want = repeat("é", 119);
	buf_reset(&m2);
	buf_addf(&m2, ": a%s… (root cause: x x ", want);
	CHECK(has(c, m2.buf));
	free(want);
	want = repeat("é", 200);
	buf_reset(&m2);
	buf_addf(&m2, "Fixed in attempt 2: %s…. ", want);
	CHECK(has(c, m2.buf));
	free(want);
	jv_free(c);
	jv_free(lid);
	jv_free(ids);
	CHECK(memory_record_episode(id, NULL, m, NULL, evs) == 0);
	c = content_of(id, "content");
	CHECK(cut_well(c, 10000));
	CHECK(has(c, "; failed: x x x "));
	jv_free(c);
	jv_free(f);
	buf_release(&m2);
	free(cause);
	free(name);
	free(msg);
	free(fix);
	close_mem();
}

/* A run a human rejected at a gate, then resumed: its end is run.completed,
 * not the checkpoint (state.updated) written after it, and the human's note
 * is what the episode keeps (before: "failed: no reason given"). */
static void test_gate_rejected(void)
{
	jv evs = jv_array();
	char id[ULID_LEN + 1];

	open_mem(":memory:");
	evs = jv_array_append(evs, ev(NULL, "run.started", "{\"task\":\"tidy calc_add\"}"));
	evs = jv_array_append(evs, ev("implement", "phase.started", "{}"));
	evs = jv_array_append(evs, ev("implement", "phase.completed", "{\"status\":\"ok\"}"));
	evs = jv_array_append(evs, ev(NULL, "gate.requested", "{\"gate\":\"escalation_test\",\"id\":\"G1\"}"));
	evs = jv_array_append(evs, ev(NULL, "run.paused", "{\"status\":\"paused\",\"reason\":\"waiting for a human\"}"));
	evs = jv_array_append(evs, ev(NULL, "state.updated", "{\"checkpoint\":\"C1\",\"phase\":\"test\"}"));
	evs = jv_array_append(evs, ev(NULL, "gate.rejected", "{\"gate\":\"escalation_test\",\"id\":\"G1\",\"by\":"
				      "\"human\",\"note\":\"the tests must pass first\"}"));
	evs = jv_array_append(evs, ev(NULL, "run.resumed", "{}"));
	evs = jv_array_append(evs, ev(NULL, "gate.rejected", "{\"gate\":\"escalation_test\",\"status\":\"rejected\"}"));
	evs = jv_array_append(evs, ev(NULL, "run.completed", "{\"status\":\"failed\",\"reason\":\"a human said no\"}"));
	evs = jv_array_append(evs, ev(NULL, "state.updated", "{\"checkpoint\":\"C2\",\"phase\":\"test\"}"));
	CHECK(memory_record_episode(id, NULL, m, NULL, jv_copy(evs)) == 0);
	jv c = content_of(id, "content");
	CHECK(has(c, "; failed: a human said no (gate escalation_test, the human's note: \"the tests must pass "
		     "first\") after 0 bounces."));
	jv_free(c);
	c = content_of(id, "episode");
	jv out = json_get(c, "outcome");
	CHECK(!json_get_bool(out, "success", true));
	jv last = json_get(out, "last_event");
	CHECK(has(last, "run.completed"));
	jv_free(last);
	jv_free(out);
	jv_free(c);

	/* paused and never resumed: the pause is the end, no note yet */
	jv paused = jv_array_slice(jv_copy(evs), 0, 6);
	CHECK(memory_record_episode(id, NULL, m, "01JDB2CCCCCCCCCCCCCCCCCCCC", paused) == 0);
	c = content_of(id, "content");
	CHECK(has(c, "; paused: waiting for a human after 0 bounces."));
	jv_free(c);

	/* resumed again and completed: a success, the old note gone */
	evs = jv_array_append(evs, ev(NULL, "run.resumed", "{}"));
	evs = jv_array_append(evs, ev(NULL, "run.completed", "{\"status\":\"completed\"}"));
	evs = jv_array_append(evs, ev(NULL, "state.updated", "{\"checkpoint\":\"C3\",\"phase\":\"deploy\"}"));
	CHECK(memory_record_episode(id, NULL, m, "01JDB2DDDDDDDDDDDDDDDDDDDD", evs) == 0);
	c = content_of(id, "content");
	CHECK(has(c, "; completed after 0 bounces."));
	CHECK(!strstr(jv_string_value(c), "note"));
	jv_free(c);
	close_mem();
}

int main(void)
{
	RUN(test_test_bounce);
	RUN(test_review_bounce_unfixed);
	RUN(test_resumed_run);
	RUN(test_long_evidence);
	RUN(test_gate_rejected);
	return unit_done();
}
