/* plans.c - append-only plan versions; see plans.h. */
#include "store/plans.h"
#include "core/buf.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "store/store.h"
#include "store/db.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sql_fail(struct store *st, const char *what)
{
	return store_fail(st, "plan versions: %s", what);
}

/* The latest version number and content (as text) of trace's plan. */
static int latest_row(int *out_version, jv *out_plan, struct store *st, const char *trace_id)
{
	static const char sql[] =
		"SELECT version, content FROM plan_versions WHERE trace_id = ?1 AND kind = 'plan' "
		"ORDER BY version DESC LIMIT 1";
	struct db_stmt *s = NULL;
	int rc = -1, step;

	*out_version = 0;
	if (out_plan)
		*out_plan = jv_null();
	if (db_prepare(&s, st, sql) < 0)
		goto out;
	db_bind_text(s, 1, trace_id);
	step = db_step(s);
	if (step == DB_ROW) {
		*out_version = (int)db_col_int64(s, 0);
		if (out_plan)
			*out_plan = db_col_json(s, 1);
	} else if (step != DB_DONE) {
		sql_fail(st, "cannot read");
		goto out;
	}
	rc = 0;
out:
	db_finalize(s);
	return rc;
}

int plans_latest(int *out_version, jv *out_plan, struct store *st, const char *trace_id)
{
	return latest_row(out_version, out_plan, st, trace_id);
}

/* Serialise the writers of trace_id's plan until the transaction ends (on
 * PostgreSQL; SQLite's BEGIN IMMEDIATE already does): two at once would
 * both take the same next version, and the second fail on the unique
 * (trace_id, kind, version). */
static int lock_trace(struct store *st, const char *trace_id)
{
	struct buf key = BUF_INIT;
	int rc;

	buf_addf(&key, "plan_versions\n%s", trace_id);
	rc = store_lock(st, key.buf);
	buf_release(&key);
	return rc;
}

int plans_append(int *out_version, char *out_id, struct store *st, const char *trace_id,
		 jv plan, const char *changelog)
{
	static const char sql[] =
		"INSERT INTO plan_versions (id, trace_id, kind, version, content, changelog, created_at) "
		"VALUES (?1, ?2, 'plan', ?3, ?4, ?5, ?6)";
	struct db_stmt *s = NULL;
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1];
	char *text = NULL;
	int version = 0, rc = -1;

	*out_version = 0;
	if (jv_get_kind(plan) != JV_KIND_OBJECT)
		return forge_error("plan versions: the plan of '%s' is not an object", trace_id);
	if (store_begin(st) < 0)
		return -1;
	if (lock_trace(st, trace_id) < 0 || latest_row(&version, NULL, st, trace_id) < 0)
		goto out;
	version++;
	ulid_new(id);
	timestamp_now(ts);
	text = json_dumps(jv_copy(plan), false);
	if (db_prepare(&s, st, sql) < 0)
		goto out;
	db_bind_text(s, 1, id);
	db_bind_text(s, 2, trace_id);
	db_bind_int64(s, 3, version);
	db_bind_text(s, 4, text);
	db_bind_text(s, 5, changelog);
	db_bind_text(s, 6, ts);
	if (db_step(s) != DB_DONE) {
		sql_fail(st, "cannot insert");
		goto out;
	}
	db_finalize(s);
	s = NULL;
	if (store_commit(st) < 0)
		goto out;
	*out_version = version;
	if (out_id)
		memcpy(out_id, id, sizeof id);
	rc = 0;
out:
	db_finalize(s);
	if (rc < 0)
		store_rollback(st);
	free(text);
	return rc;
}

int plans_list(jv *out, struct store *st, const char *trace_id)
{
	static const char sql[] =
		"SELECT id, trace_id, version, content, changelog, created_at FROM plan_versions "
		"WHERE trace_id = ?1 AND kind = 'plan' ORDER BY version";
	struct db_stmt *s = NULL;
	jv list = jv_array();
	int rc = -1, step;

	*out = jv_null();
	if (db_prepare(&s, st, sql) < 0)
		goto out;
	db_bind_text(s, 1, trace_id);
	while ((step = db_step(s)) == DB_ROW) {
		jv row = jv_object();
		row = json_set(row, "id", db_col_str(s, 0));
		row = json_set(row, "trace_id", db_col_str(s, 1));
		row = json_set(row, "version", jv_number((int)db_col_int64(s, 2)));
		row = json_set(row, "plan", db_col_json(s, 3));
		row = json_set(row, "changelog", db_col_str(s, 4));
		row = json_set(row, "created_at", db_col_str(s, 5));
		list = jv_array_append(list, row);
	}
	if (step != DB_DONE) {
		sql_fail(st, "cannot read");
		goto out;
	}
	*out = list;
	list = jv_null();
	rc = 0;
out:
	jv_free(list);
	db_finalize(s);
	return rc;
}

/* ---- changelog ----------------------------------------------------------- */

/* The task of tasks (borrowed) whose id is id, or jv_null(). */
static jv task_by_id(jv tasks, const char *id)
{
	if (jv_get_kind(tasks) != JV_KIND_ARRAY)
		return jv_null();
	jv_array_foreach(tasks, i, t) {
		const char *tid = json_get_str(t, "id");
		if (tid && strcmp(tid, id) == 0)
			return t;
		jv_free(t);
	}
	return jv_null();
}

/* Append to ids the ids of `from`'s tasks that are missing in (or, with
 * changed, differ from) `other`'s, comma-separated.  Borrows both. */
static void task_ids(struct buf *ids, jv from, jv other, bool changed)
{
	if (jv_get_kind(from) != JV_KIND_ARRAY)
		return;
	jv_array_foreach(from, i, t) {
		const char *id = json_get_str(t, "id");
		if (id) {
			jv o = task_by_id(other, id);
			bool hit = changed ? (jv_get_kind(o) == JV_KIND_OBJECT && !json_equal(o, t))
					   : jv_get_kind(o) == JV_KIND_NULL;
			if (hit)
				buf_addf(ids, "%s%s", ids->len ? ", " : "", id);
			jv_free(o);
		}
		jv_free(t);
	}
}

static void add_part(struct buf *b, const char *text)
{
	buf_addf(b, "%s%s", b->len ? "; " : "", text);
}

/* One "LABEL: ids" part for the tasks of `from` missing in / changed from `other`. */
static void tasks_part(struct buf *b, const char *label, jv from, jv other, bool changed)
{
	struct buf ids = BUF_INIT;

	task_ids(&ids, from, other, changed);
	if (ids.len)
		buf_addf(b, "%s%s: %s", b->len ? "; " : "", label, ids.buf);
	buf_release(&ids);
}

char *plans_changelog(jv old_plan, jv new_plan)
{
	struct buf b = BUF_INIT;

	if (jv_get_kind(old_plan) != JV_KIND_OBJECT)
		return xstrdup("initial plan");
	jv old_tasks = json_get(old_plan, "tasks"), new_tasks = json_get(new_plan, "tasks");
	tasks_part(&b, "tasks added", new_tasks, old_tasks, false);
	tasks_part(&b, "tasks removed", old_tasks, new_tasks, false);
	tasks_part(&b, "tasks changed", new_tasks, old_tasks, true);
	/* tasks in another order (same ids and content) */
	if (!b.len && !json_equal(old_tasks, new_tasks))
		add_part(&b, "tasks reordered");
	jv_free(old_tasks);
	jv_free(new_tasks);

	jv old_risk = json_get(old_plan, "risk"), new_risk = json_get(new_plan, "risk");
	const char *ol = json_get_str(old_risk, "level"), *nl = json_get_str(new_risk, "level");
	double os = json_get_num(old_risk, "score", -1), ns = json_get_num(new_risk, "score", -1);
	bool level_changed = (ol && nl) ? strcmp(ol, nl) != 0 : ol != nl;
	if (level_changed || os != ns) {
		buf_addf(&b, "%srisk %s -> %s", b.len ? "; " : "", ol ? ol : "none", nl ? nl : "none");
		if (os != ns && os >= 0 && ns >= 0)
			buf_addf(&b, " (%.2f -> %.2f)", os, ns);
	} else if (!json_equal(old_risk, new_risk)) {
		add_part(&b, "risk reasons changed");
	}
	jv_free(old_risk);
	jv_free(new_risk);

	static const char *const parts[] = { "summary", "architecture", "estimates" };
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
		jv o = json_get(old_plan, parts[i]), n = json_get(new_plan, parts[i]);
		if (!json_equal(o, n))
			buf_addf(&b, "%s%s changed", b.len ? "; " : "", parts[i]);
		jv_free(o);
		jv_free(n);
	}
	if (!b.len)
		buf_adds(&b, "no changes");
	return buf_detach(&b, NULL);
}
