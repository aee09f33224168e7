/*
 * memory_feedback.c - findings and the human feedback on them (seed 000
 * section 10.5; memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

#define FINDING_COLS "id, run_id, trace_id, phase, layer, severity, category, rule, message, " \
	"file, line, confidence, fixable, fix, fingerprint, created_at, dismissed, dismissed_by, " \
	"dismissed_reason, dismissed_at"

static int db_fail(struct store *st, const char *what)
{
	return forge_error("database '%s': %s: %s", store_path(st), what, sqlite3_errmsg(store_db(st)));
}

static jv finding_json(sqlite3_stmt *s)
{
	static const char *const names[] = {
		"id", "run_id", "trace_id", "phase", "layer", "severity", "category", "rule", "message",
		"file", "line", "confidence", "fixable", "fix", "fingerprint", "created_at", "dismissed",
		"dismissed_by", "dismissed_reason", "dismissed_at"
	};
	jv o = jv_object();

	for (int i = 0; i < 20; i++) {
		jv v;

		switch (sqlite3_column_type(s, i)) {
		case SQLITE_NULL:
			v = jv_null();
			break;
		case SQLITE_INTEGER:
			v = i == 12 || i == 16 ? jv_bool(sqlite3_column_int(s, i) != 0) :
			    jv_number((double)sqlite3_column_int64(s, i));
			break;
		case SQLITE_FLOAT:
			v = jv_number(sqlite3_column_double(s, i));
			break;
		default:
			v = jv_string((const char *)sqlite3_column_text(s, i));
		}
		o = json_set(o, names[i], v);
	}
	return o;
}

static void bind_opt_str(sqlite3_stmt *s, int i, jv f, const char *key)
{
	store_bind_text(s, i, json_get_str(f, key));
}

/* The id of the row of trace that has fingerprint fp (the insert of a
 * finding found again skipped it). */
static int existing_id(char id[ULID_LEN + 1], struct store *st, const char *trace, const char *fp)
{
	sqlite3_stmt *s;
	int rc = -1;

	if (sqlite3_prepare_v2(store_db(st), "SELECT id FROM findings WHERE trace_id = ?1 AND fingerprint = ?2 "
			       "ORDER BY created_at, id LIMIT 1", -1, &s, NULL) != SQLITE_OK)
		return db_fail(st, "cannot read findings");
	store_bind_text(s, 1, trace);
	store_bind_text(s, 2, fp);
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(id, ULID_LEN + 1, "%s", (const char *)sqlite3_column_text(s, 0));
		rc = 0;
	} else {
		db_fail(st, "cannot read findings");
	}
	sqlite3_finalize(s);
	return rc;
}

int findings_put(char id_out[ULID_LEN + 1], struct store *st, jv f)
{
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1], fp[33];
	const char *trace, *fingerprint;
	struct buf b = BUF_INIT;
	sqlite3_stmt *s = NULL;
	int rc = -1;

	if (jv_get_kind(f) != JV_KIND_OBJECT) {
		forge_error("a finding must be a JSON object");
		goto out;
	}
	if (!json_get_str(f, "severity") || !json_get_str(f, "category") || !json_get_str(f, "message")) {
		forge_error("a finding needs severity, category and message");
		goto out;
	}
	snprintf(id, sizeof id, "%s", json_get_str(f, "id") ? json_get_str(f, "id") : "");
	if (!*id)
		ulid_new(id);
	timestamp_now(ts);
	buf_addf(&b, "%s\n%s\n%s", json_get_str(f, "rule") ? json_get_str(f, "rule") : "",
		 json_get_str(f, "file") ? json_get_str(f, "file") : "", json_get_str(f, "message"));
	mem_hash_hex(fp, b.buf, b.len);
	trace = json_get_str(f, "trace_id") ? json_get_str(f, "trace_id") : json_get_str(f, "run_id");
	fingerprint = json_get_str(f, "fingerprint") ? json_get_str(f, "fingerprint") : fp;
	/* One row per (trace, fingerprint): a review bounce that finds the same
	 * issue again adds nothing (one statement, so concurrent writers agree). */
	if (sqlite3_prepare_v2(store_db(st), "INSERT INTO findings (id, run_id, trace_id, phase, "
			       "layer, severity, category, rule, message, file, line, confidence, fixable, "
			       "fix, fingerprint, created_at) SELECT ?1,?2,?3,coalesce(?4,'review'),?5,?6,?7,?8,?9,?10,"
			       "?11,?12,?13,?14,?15,?16 WHERE ?3 IS NULL OR NOT EXISTS (SELECT 1 FROM findings "
			       "WHERE trace_id = ?3 AND fingerprint = ?15)",
			       -1, &s, NULL) != SQLITE_OK) {
		db_fail(st, "cannot store a finding");
		goto out;
	}
	store_bind_text(s, 1, id);
	bind_opt_str(s, 2, f, "run_id");
	store_bind_text(s, 3, trace);
	bind_opt_str(s, 4, f, "phase");
	bind_opt_str(s, 5, f, "layer");
	bind_opt_str(s, 6, f, "severity");
	bind_opt_str(s, 7, f, "category");
	bind_opt_str(s, 8, f, "rule");
	bind_opt_str(s, 9, f, "message");
	bind_opt_str(s, 10, f, "file");
	if (json_has(f, "line") && json_get_num(f, "line", -1) >= 0)
		sqlite3_bind_int64(s, 11, (sqlite3_int64)json_get_num(f, "line", 0));
	if (json_has(f, "confidence") && json_get_num(f, "confidence", -1) >= 0)
		sqlite3_bind_double(s, 12, json_get_num(f, "confidence", 0));
	sqlite3_bind_int(s, 13, json_get_bool(f, "fixable", false));
	bind_opt_str(s, 14, f, "fix");
	/* The producer's fingerprint (forge-review hashes the line's content)
	 * wins; otherwise one from rule, file and message. */
	store_bind_text(s, 15, fingerprint);
	store_bind_text(s, 16, ts);
	if (sqlite3_step(s) != SQLITE_DONE) {
		db_fail(st, "cannot store a finding");
		goto out;
	}
	if (sqlite3_changes(store_db(st)) == 0 && existing_id(id, st, trace, fingerprint) < 0)
		goto out;
	if (id_out)
		memcpy(id_out, id, sizeof id);
	rc = 0;
out:
	sqlite3_finalize(s);
	buf_release(&b);
	jv_free(f);
	return rc;
}

int findings_get(jv *out, struct store *st, const char *id)
{
	sqlite3_stmt *s;
	int step, rc = 0;

	*out = jv_null();
	if (sqlite3_prepare_v2(store_db(st), "SELECT " FINDING_COLS " FROM findings WHERE id = ?",
			       -1, &s, NULL) != SQLITE_OK)
		return db_fail(st, "cannot read findings");
	store_bind_text(s, 1, id);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW)
		*out = finding_json(s);
	else if (step != SQLITE_DONE)
		rc = db_fail(st, "cannot read findings");
	sqlite3_finalize(s);
	return rc;
}

int findings_list(jv *out, struct store *st, const char *trace_id, bool include_dismissed, int limit)
{
	sqlite3_stmt *s;
	int step, rc = 0;

	*out = jv_array();
	if (sqlite3_prepare_v2(store_db(st), "SELECT " FINDING_COLS " FROM findings WHERE "
			       "(?1 IS NULL OR trace_id = ?1 OR run_id = ?1) AND (?2 OR dismissed = 0) "
			       "ORDER BY created_at DESC, id DESC LIMIT ?3", -1, &s, NULL) != SQLITE_OK)
		return db_fail(st, "cannot read findings");
	store_bind_text(s, 1, trace_id);
	sqlite3_bind_int(s, 2, include_dismissed);
	sqlite3_bind_int(s, 3, limit > 0 ? limit : -1);
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		*out = jv_array_append(*out, finding_json(s));
	if (step != SQLITE_DONE)
		rc = db_fail(st, "cannot read findings");
	sqlite3_finalize(s);
	return rc;
}

/* Mark it; 1 when it already was. */
static int mark_dismissed(struct memory *m, const char *id, const char *reason)
{
	char ts[TIMESTAMP_LEN + 1];
	struct db_stmt *s;
	int rc;

	timestamp_format(ts, memory_now(m));
	if (mem_prepare(&s, m, "UPDATE findings SET dismissed = 1, dismissed_by = 'human', "
			"dismissed_reason = ?, dismissed_at = ? WHERE id = ? AND dismissed = 0") < 0)
		return -1;
	db_bind_text(s, 1, reason);
	db_bind_text(s, 2, ts);
	db_bind_text(s, 3, id);
	if (db_step(s) != DB_DONE)
		rc = mem_fail(m, "cannot dismiss finding '%s'", id);
	else
		rc = db_changes(s) ? 0 : 1;
	db_finalize(s);
	return rc;
}

static int store_event(struct memory *m, jv finding, const char *reason)
{
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1];
	const char *trace = json_get_str(finding, "trace_id");
	jv ev = jv_object(), p = jv_object();

	if (!trace) {
		jv_free(ev);
		jv_free(p);
		return 0;
	}
	ulid_new(id);
	timestamp_format(ts, memory_now(m));
	p = json_set(p, "finding_id", json_get(finding, "id"));
	p = json_set(p, "reason", json_str_or_null(reason));
	ev = json_set(ev, "kind", jv_string("event"));
	ev = json_set(ev, "id", jv_string(id));
	ev = json_set(ev, "trace_id", jv_string(trace));
	ev = json_set(ev, "ts", jv_string(ts));
	ev = json_set(ev, "source", jv_string("forge-findings"));
	ev = json_set(ev, "phase", json_get(finding, "phase"));
	ev = json_set(ev, "type", jv_string("feedback.human_dismissed"));
	ev = json_set(ev, "payload", p);
	int rc = store_event_put(m->st, ev, NULL, 0, NULL);

	jv_free(ev);
	return rc;
}

int memory_dismiss_finding(jv *out, struct memory *m, const char *finding_id, const char *reason)
{
	struct buf q = BUF_INIT, b = BUF_INIT;
	struct memory_query mq;
	char mid[ULID_LEN + 1] = "";
	jv f = jv_null(), hits = jv_null(), lowered = jv_array();
	int rc = -1, marked;
	const char *dismissal = "dismissal";

	*out = jv_null();
	if (findings_get(&f, m->st, finding_id) < 0)
		goto out;
	if (jv_get_kind(f) == JV_KIND_NULL) {
		rc = MEMORY_NOT_FOUND;
		goto out;
	}
	marked = mark_dismissed(m, finding_id, reason);
	if (marked < 0)
		goto out;
	if (marked == 0) {
		const char *cat = json_get_str(f, "category"), *file = json_get_str(f, "file");
		const char *rule = json_get_str(f, "rule"), *msg = json_get_str(f, "message");

		/* the semantic memories that produced it: lower them (not dismissals) */
		buf_addf(&q, "review finding: %s %s %s in %s", cat, rule ? rule : "", msg, file ? file : "");
		memory_query_init(&mq, q.buf);
		mq.filter.type = MEMORY_SEMANTIC;
		mq.filter.limit = 5;
		mq.no_touch = true;
		if (memory_recall(&hits, m, &mq) < 0)
			goto out;
		jv_array_foreach(hits, i, h) {
			jv mem = json_get(h, "memory"), tags = json_get(mem, "tags");
			bool is_dismissal = false;

			jv_array_foreach(tags, j, t) {
				is_dismissal = is_dismissal || strcmp(jv_string_value(t), dismissal) == 0;
				jv_free(t);
				(void)j;
			}
			double before = json_get_num(mem, "confidence", 0), after = before;

			if (!is_dismissal && json_get_num(h, "similarity", 0) >= 0.3 && rc == -1) {
				if (memory_adjust(&after, m, json_get_str(mem, "id"), MEMORY_DELTA_DISMISSED,
						  "dismissed", finding_id) != 0) {
					rc = -2;
				} else {
					jv l = jv_object();

					l = json_set(l, "id", json_get(mem, "id"));
					l = json_set(l, "before", jv_number(before));
					l = json_set(l, "after", jv_number(after));
					lowered = jv_array_append(lowered, l);
				}
			}
			jv_free(tags);
			jv_free(mem);
			jv_free(h);
			(void)i;
		}
		if (rc == -2) {
			rc = -1;
			goto out;
		}
		/* learn from the dismissal */
		jv dm = jv_object();

		buf_addf(&b, "Finding \"%s\"%s%s%s was dismissed by a human. %s", msg, rule ? " (rule " : "",
			 rule ? rule : "", rule ? ")" : "", reason && *reason ? reason : "No reason given.");
		dm = json_set(dm, "type", jv_string("semantic"));
		dm = json_set(dm, "content", jv_string(b.buf));
		buf_reset(&b);
		buf_addf(&b, "reviewing %s issues in %s", cat, file ? file : "the repository");
		dm = json_set(dm, "context", jv_string(b.buf));
		dm = json_set(dm, "confidence", jv_number(MEMORY_CONF_HUMAN));
		dm = json_set(dm, "source", jv_string("human"));
		jv tags = JV_ARRAY(jv_string(dismissal), jv_string(cat));

		if (rule)
			tags = jv_array_append(tags, jv_string(rule));
		if (json_get_str(f, "layer"))
			tags = jv_array_append(tags, jv_string(json_get_str(f, "layer")));
		dm = json_set(dm, "tags", tags);
		if (memory_store(mid, m, dm) < 0 || store_event(m, f, reason) < 0)
			goto out;
		jv_free(f);
		if (findings_get(&f, m->st, finding_id) < 0)
			goto out;
	}
	jv o = jv_object();

	o = json_set(o, "finding", f);
	f = jv_null();
	o = json_set(o, "memory_id", *mid ? jv_string(mid) : jv_null());
	o = json_set(o, "lowered", lowered);
	lowered = jv_null();
	o = json_set(o, "already_dismissed", jv_bool(marked == 1));
	*out = o;
	rc = 0;
out:
	jv_free(f);
	jv_free(hits);
	jv_free(lowered);
	buf_release(&q);
	buf_release(&b);
	return rc;
}
