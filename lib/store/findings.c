/*
 * findings.c - review and test findings on either backend; see findings.h.
 */
#include "store/findings.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "store/db.h"
#include "store/store.h"

#define FINDING_COLS "id, run_id, trace_id, phase, layer, severity, category, rule, message, " \
	"file, line, confidence, fixable, fix, fingerprint, created_at, dismissed, dismissed_by, " \
	"dismissed_reason, dismissed_at"

enum { COL_LINE = 10, COL_CONFIDENCE = 11, COL_FIXABLE = 12, COL_DISMISSED = 16, NCOLS = 20 };

/* The current row (FINDING_COLS) as JSON. */
static jv finding_json(struct db_stmt *s)
{
	static const char *const names[NCOLS] = {
		"id", "run_id", "trace_id", "phase", "layer", "severity", "category", "rule", "message",
		"file", "line", "confidence", "fixable", "fix", "fingerprint", "created_at", "dismissed",
		"dismissed_by", "dismissed_reason", "dismissed_at"
	};
	jv o = jv_object();

	for (int i = 0; i < NCOLS; i++) {
		jv v;

		if (i == COL_FIXABLE || i == COL_DISMISSED)
			v = db_col_null(s, i) ? jv_null() : jv_bool(db_col_int64(s, i) != 0);
		else if (i == COL_LINE || i == COL_CONFIDENCE)
			v = db_col_num(s, i);
		else
			v = db_col_str(s, i);
		o = json_set(o, names[i], v);
	}
	return o;
}

/*
 * The fingerprint of a finding without one: two FNV-1a hashes of
 * "rule\nfile\nmessage" as 32 hex digits, the value lib/memory's
 * mem_hash_hex() gave when findings lived there, so rows stored before
 * still match.
 */
static uint64_t fnv1a(const char *s, size_t len, uint64_t h)
{
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void fingerprint_of(char out[33], jv f)
{
	struct buf b = BUF_INIT;
	const char *rule = json_get_str(f, "rule"), *file = json_get_str(f, "file");

	buf_addf(&b, "%s\n%s\n%s", rule ? rule : "", file ? file : "", json_get_str(f, "message"));
	uint64_t a = fnv1a(b.buf, b.len, 0xcbf29ce484222325ULL);
	uint64_t c = fnv1a(b.buf, b.len, 0x84222325cbf29ce4ULL ^ b.len);

	snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)c);
	buf_release(&b);
}

/* The id of the row of trace that has fingerprint fp (the insert of a
 * finding found again skipped it). */
static int existing_id(char id[ULID_LEN + 1], struct store *st, const char *trace, const char *fp)
{
	struct db_stmt *s;
	int step, rc = -1;

	if (db_prepare(&s, st, "SELECT id FROM findings WHERE trace_id = ?1 AND fingerprint = ?2 "
		       "ORDER BY created_at, id LIMIT 1") < 0)
		return -1;
	db_bind_text(s, 1, trace);
	db_bind_text(s, 2, fp);
	step = db_step(s);
	if (step == DB_ROW) {
		snprintf(id, ULID_LEN + 1, "%s", db_col_text(s, 0));
		rc = 0;
	} else if (step == DB_DONE) {
		forge_error("database '%s': finding '%s' was not stored: its id is taken", store_path(st), id);
	} else {
		store_fail(st, "cannot read findings");
	}
	db_finalize(s);
	return rc;
}

/*
 * One row per (trace, fingerprint): a review bounce that finds the same
 * issue again adds nothing.  One statement, so concurrent SQLite writers
 * agree; on PostgreSQL (READ COMMITTED) two writers may both see no row,
 * and the unique index on (trace_id, fingerprint) turns the second insert
 * into nothing (ON CONFLICT DO NOTHING).  The SELECT's non-text values are
 * cast: PostgreSQL types a SELECT list's parameters as text.
 */
static const char put_sql[] =
	"INSERT INTO findings (id, run_id, trace_id, phase, layer, severity, category, rule, message, "
	"file, line, confidence, fixable, fix, fingerprint, created_at) "
	"SELECT ?1, ?2, ?3, coalesce(?4, 'review'), ?5, ?6, ?7, ?8, ?9, ?10, CAST(?11 AS BIGINT), "
	"CAST(?12 AS DOUBLE PRECISION), CAST(?13 AS INTEGER), ?14, ?15, ?16 "
	"WHERE CAST(?3 AS TEXT) IS NULL OR NOT EXISTS (SELECT 1 FROM findings "
	"WHERE trace_id = ?3 AND fingerprint = ?15) ON CONFLICT DO NOTHING";

static void bind_opt_str(struct db_stmt *s, int i, jv f, const char *key)
{
	db_bind_text(s, i, json_get_str(f, key));
}

/* Bind f's columns to put_sql; borrows f. */
static void bind_finding(struct db_stmt *s, jv f, const char *id, const char *trace, const char *fp,
			 const char *ts)
{
	static const char *const text_keys[] = { "run_id", NULL, "phase", "layer", "severity", "category",
						 "rule", "message", "file" };

	db_bind_text(s, 1, id);
	for (int i = 0; i < 9; i++)
		if (text_keys[i])
			bind_opt_str(s, i + 2, f, text_keys[i]);
	db_bind_text(s, 3, trace);
	if (json_has(f, "line") && json_get_num(f, "line", -1) >= 0)
		db_bind_int64(s, 11, (int64_t)json_get_num(f, "line", 0));
	if (json_has(f, "confidence") && json_get_num(f, "confidence", -1) >= 0)
		db_bind_double(s, 12, json_get_num(f, "confidence", 0));
	db_bind_int64(s, 13, json_get_bool(f, "fixable", false));
	bind_opt_str(s, 14, f, "fix");
	db_bind_text(s, 15, fp);
	db_bind_text(s, 16, ts);
}

int findings_put(char id_out[ULID_LEN + 1], struct store *st, jv f)
{
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1], fp[33];
	const char *trace, *fingerprint;
	struct db_stmt *s = NULL;
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
	fingerprint_of(fp, f);
	trace = json_get_str(f, "trace_id") ? json_get_str(f, "trace_id") : json_get_str(f, "run_id");
	/* the producer's fingerprint (forge-review hashes the line's content) wins */
	fingerprint = json_get_str(f, "fingerprint") ? json_get_str(f, "fingerprint") : fp;
	if (db_prepare(&s, st, put_sql) < 0)
		goto out;
	bind_finding(s, f, id, trace, fingerprint, ts);
	if (db_step(s) != DB_DONE) {
		store_fail(st, "cannot store a finding");
		goto out;
	}
	if (db_changes(s) == 0 && existing_id(id, st, trace, fingerprint) < 0)
		goto out;
	if (id_out)
		memcpy(id_out, id, sizeof id);
	rc = 0;
out:
	db_finalize(s);
	jv_free(f);
	return rc;
}

int findings_get(jv *out, struct store *st, const char *id)
{
	struct db_stmt *s;
	int step, rc = 0;

	*out = jv_null();
	if (db_prepare(&s, st, "SELECT " FINDING_COLS " FROM findings WHERE id = ?1") < 0)
		return -1;
	db_bind_text(s, 1, id);
	step = db_step(s);
	if (step == DB_ROW)
		*out = finding_json(s);
	else if (step != DB_DONE)
		rc = store_fail(st, "cannot read findings");
	db_finalize(s);
	return rc;
}

int findings_list(jv *out, struct store *st, const char *trace_id, bool include_dismissed, int limit)
{
	struct db_stmt *s;
	int step, rc = 0;

	*out = jv_array();
	if (db_prepare(&s, st, "SELECT " FINDING_COLS " FROM findings WHERE "
		       "(CAST(?1 AS TEXT) IS NULL OR trace_id = ?1 OR run_id = ?1) AND "
		       "(CAST(?2 AS INTEGER) = 1 OR dismissed = 0) "
		       "ORDER BY created_at DESC, id DESC LIMIT ?3") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	db_bind_int64(s, 2, include_dismissed);
	db_bind_int64(s, 3, limit > 0 ? limit : DB_LIMIT_ALL);
	while ((step = db_step(s)) == DB_ROW)
		*out = jv_array_append(*out, finding_json(s));
	if (step != DB_DONE)
		rc = store_fail(st, "cannot read findings");
	db_finalize(s);
	return rc;
}

int findings_list_dismissed(jv *out, struct store *st, int limit)
{
	struct db_stmt *s;
	int step, rc = 0;

	*out = jv_array();
	if (db_prepare(&s, st, "SELECT " FINDING_COLS " FROM findings WHERE dismissed = 1 "
		       "ORDER BY dismissed_at DESC, id DESC LIMIT ?1") < 0)
		return -1;
	db_bind_int64(s, 1, limit > 0 ? limit : DB_LIMIT_ALL);
	while ((step = db_step(s)) == DB_ROW)
		*out = jv_array_append(*out, finding_json(s));
	if (step != DB_DONE)
		rc = store_fail(st, "cannot read findings");
	db_finalize(s);
	return rc;
}

/* Whether finding id exists: 1 yes, 0 no, -1 error. */
static int finding_exists(struct store *st, const char *id)
{
	struct db_stmt *s;
	int step;

	if (db_prepare(&s, st, "SELECT 1 FROM findings WHERE id = ?1") < 0)
		return -1;
	db_bind_text(s, 1, id);
	step = db_step(s);
	if (step < 0)
		store_fail(st, "cannot read findings");
	db_finalize(s);
	return step < 0 ? -1 : step == DB_ROW;
}

int findings_dismiss(struct store *st, const char *id, const char *by, const char *reason, const char *at)
{
	struct db_stmt *s;
	long changed;
	int exists;

	/* only a row not dismissed yet: the first dismissal is the one kept */
	if (db_prepare(&s, st, "UPDATE findings SET dismissed = 1, dismissed_by = ?1, "
		       "dismissed_reason = ?2, dismissed_at = ?3 WHERE id = ?4 AND dismissed = 0") < 0)
		return -1;
	db_bind_text(s, 1, by);
	db_bind_text(s, 2, reason);
	db_bind_text(s, 3, at);
	db_bind_text(s, 4, id);
	if (db_step(s) != DB_DONE) {
		db_finalize(s);
		return store_fail(st, "cannot dismiss finding '%s'", id);
	}
	changed = db_changes(s);
	db_finalize(s);
	if (changed > 0)
		return 0;
	exists = finding_exists(st, id);
	if (exists < 0)
		return -1;
	return exists ? FINDINGS_ALREADY_DISMISSED : FINDINGS_NOT_FOUND;
}
