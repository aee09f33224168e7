/*
 * traces.c - finding a run by what a person typed (a unique prefix of its
 * trace id) and reading single events of a run (store.h).
 */
#include "store/store.h"
#include "store/db.h"
#include "core/buf.h"

#include "core/forge.h"
#include "core/json.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The most candidates named in an "ambiguous" message. */
#define MAX_NAMED 8

/* The trace ids (runs, and traces with events) that start with prefix, at
 * most limit of them, sorted; borrows prefix (letters, digits, '.', '_',
 * ':' and '-' only, so it is a GLOB pattern with no special character).  SQLite's GLOB
 * of a prefix uses the index; PostgreSQL has starts_with(). */
static int matching(jv *out, struct store *st, const char *prefix, int limit)
{
	static const char lite[] =
		"SELECT id FROM runs WHERE id GLOB ?1 || '*'"
		" UNION SELECT trace_id FROM event_log WHERE trace_id GLOB ?1 || '*'"
		" ORDER BY 1 LIMIT ?2";
	static const char pg[] =
		"SELECT id FROM runs WHERE starts_with(id, ?1)"
		" UNION SELECT trace_id FROM event_log WHERE starts_with(trace_id, ?1)"
		" ORDER BY 1 LIMIT ?2";
	struct db_stmt *s;
	int step;

	*out = jv_array();
	if (db_prepare(&s, st, store_backend(st) == DB_POSTGRES ? pg : lite) < 0)
		return -1;
	db_bind_text(s, 1, prefix);
	db_bind_int64(s, 2, limit);
	while ((step = db_step(s)) == DB_ROW)
		*out = jv_array_append(*out, db_col_str(s, 0));
	if (step != DB_DONE)
		store_fail(st, "cannot look up run '%s'", prefix);
	db_finalize(s);
	return step == DB_DONE ? 0 : -1;
}

/* What a trace id may hold (state.schema.json: at most 128 letters,
 * digits, '.', '_', ':' and '-'; a hand-written "JIRA-12.1" too). */
static bool prefix_valid(const char *p)
{
	if (!*p || strlen(p) > 128)
		return false;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._:-", *p))
			return false;
	return true;
}

/* The matches of prefix as typed, else (ULIDs are upper case) of its upper
 * case form. */
static int lookup(jv *out, struct store *st, const char *prefix)
{
	char *upper;
	int rc = matching(out, st, prefix, MAX_NAMED + 1);

	if (rc < 0 || jv_array_length(jv_copy(*out)) > 0)
		return rc;
	upper = xstrdup(prefix);
	for (char *p = upper; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	if (strcmp(upper, prefix) != 0) {
		jv_free(*out);
		rc = matching(out, st, upper, MAX_NAMED + 1);
	}
	free(upper);
	return rc;
}

/* Whether prefix is a whole run id: 1, 0, -1 on a database error. */
static int run_named(struct store *st, const char *id)
{
	struct db_stmt *s;
	int step;

	if (db_prepare(&s, st, "SELECT 1 FROM runs WHERE id = ?1") < 0)
		return -1;
	db_bind_text(s, 1, id);
	step = db_step(s);
	if (step != DB_ROW && step != DB_DONE)
		store_fail(st, "cannot look up run '%s'", id);
	db_finalize(s);
	return step == DB_ROW ? 1 : step == DB_DONE ? 0 : -1;
}

int store_resolve_trace(char **out, struct store *st, const char *prefix)
{
	jv found;
	int n, rc;

	*out = NULL;
	if (!prefix_valid(prefix)) {
		forge_error("no run matches '%s' (a trace id has letters, digits, '.', '_', ':' and '-')", prefix);
		return STORE_TRACE_NONE;
	}
	/* A whole run id is the answer whatever else it starts (below), and
	 * found by the key: the lookup's union read every event of the
	 * trace (0.6M instructions in a resume of a whole run) */
	if ((rc = run_named(st, prefix)) != 0) {
		if (rc > 0)
			*out = xstrdup(prefix);
		return rc > 0 ? 0 : -1;
	}
	if (lookup(&found, st, prefix) < 0) {
		jv_free(found);
		return -1;
	}
	n = jv_array_length(jv_copy(found));
	jv_array_foreach(found, i, id) {
		if (!*out && strcmp(jv_string_value(id), prefix) == 0)
			*out = xstrdup(prefix);   /* a whole id, also the start of others */
		jv_free(id);
	}
	if (*out || n == 1) {
		if (!*out) {
			jv id = jv_array_get(jv_copy(found), 0);
			*out = xstrdup(jv_string_value(id));
			jv_free(id);
		}
		rc = 0;
	} else if (n == 0) {
		forge_error("no run matches '%s'", prefix);
		rc = STORE_TRACE_NONE;
	} else {
		struct buf names = BUF_INIT;
		jv_array_foreach(found, i, id) {
			if (i < MAX_NAMED)
				buf_addf(&names, "\n  %s", jv_string_value(id));
			jv_free(id);
		}
		forge_error("'%s' matches %s%d runs; give more of the trace id:%s%s", prefix,
			    n > MAX_NAMED ? "more than " : "", n > MAX_NAMED ? MAX_NAMED : n, names.buf,
			    n > MAX_NAMED ? "\n  …" : "");
		buf_release(&names);
		rc = STORE_TRACE_AMBIGUOUS;
	}
	jv_free(found);
	return rc;
}

int store_event_last(jv *out, struct store *st, const char *trace_id, const char *type)
{
	struct db_stmt *s;
	int step;

	*out = jv_null();
	if (db_prepare(&s, st, "SELECT record FROM event_log WHERE trace_id = ?1 AND type = ?2"
		       " ORDER BY seq DESC LIMIT 1") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, type);
	step = db_step(s);
	if (step == DB_ROW)
		*out = db_col_json(s, 0);
	else if (step != DB_DONE)
		store_fail(st, "cannot read the events of trace '%s'", trace_id);
	db_finalize(s);
	return step == DB_ROW || step == DB_DONE ? 0 : -1;
}
