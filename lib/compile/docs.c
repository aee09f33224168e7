/* docs.c - the documents of forge compile, versioned in the store (SQLite or PostgreSQL, through
 * db.h) and kept in the project; see docs.h. */
#include "compile/docs.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/owner.h"
#include "core/ids.h"
#include "core/json.h"
#include "store/db.h"
#include "store/store.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const docs_kinds[] = { "intent", "delta", "flows", "contracts", "rules", "db_schema", "test_suite",
				   "implementation", "integration", "compile_review", NULL };

/* The newest version of (project, kind): its number (0 when none) and
 * whether its content is doc (borrowed). */
static int latest_version(int *out, bool *same, struct store *st, const char *project, const char *kind, jv doc)
{
	static const char sql[] = "SELECT version, content FROM compile_docs WHERE project = ?1 AND kind = ?2 "
				  "ORDER BY version DESC LIMIT 1";
	struct db_stmt *s = NULL;
	int rc = -1, step;

	*out = 0;
	*same = false;
	if (db_prepare(&s, st, sql) < 0)
		return -1;
	db_bind_text(s, 1, project);
	db_bind_text(s, 2, kind);
	step = db_step(s);
	if (step == DB_ROW) {
		jv old = db_col_json(s, 1);

		*out = (int)db_col_int64(s, 0);
		*same = jv_get_kind(old) != JV_KIND_NULL && json_equal(old, doc);
		jv_free(old);
		rc = 0;
	} else if (step == DB_DONE) {
		rc = 0;
	} else {
		store_fail(st, "compile documents: cannot read");
	}
	db_finalize(s);
	return rc;
}

/* Serialise the writers of (project, kind) until the transaction ends (on
 * PostgreSQL; SQLite's BEGIN IMMEDIATE already does): two stages at once
 * would otherwise both take the same next version. */
static int lock_kind(struct store *st, const char *project, const char *kind)
{
	struct buf key = BUF_INIT;
	int rc;

	buf_addf(&key, "compile_docs\n%s\n%s", project, kind);
	rc = store_lock(st, key.buf);
	buf_release(&key);
	return rc;
}

int docs_append(int *out_version, struct store *st, const char *project, const char *kind, const char *trace,
		jv doc)
{
	static const char sql[] =
		"INSERT INTO compile_docs (id, project, kind, version, trace_id, content, created_at) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
	struct db_stmt *s = NULL;
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1];
	char *text = NULL;
	int version = 0, rc = -1;
	bool same;

	*out_version = 0;
	if (jv_get_kind(doc) != JV_KIND_OBJECT)
		return forge_error("compile documents: the %s document is not an object", kind);
	if (store_begin(st) < 0)
		return -1;
	if (lock_kind(st, project, kind) < 0 || latest_version(&version, &same, st, project, kind, doc) < 0)
		goto out;
	if (same) {             /* nothing to write: end the transaction */
		store_rollback(st);
		*out_version = version;
		return 0;
	}
	version++;
	ulid_new(id);
	timestamp_now(ts);
	text = json_dumps(jv_copy(doc), false);
	if (db_prepare(&s, st, sql) < 0)
		goto out;
	db_bind_text(s, 1, id);
	db_bind_text(s, 2, project);
	db_bind_text(s, 3, kind);
	db_bind_int64(s, 4, version);
	db_bind_text(s, 5, trace);
	db_bind_text(s, 6, text);
	db_bind_text(s, 7, ts);
	if (db_step(s) != DB_DONE) {
		store_fail(st, "compile documents: cannot insert");
		goto out;
	}
	db_finalize(s);
	s = NULL;
	if (store_commit(st) < 0)
		goto out;
	*out_version = version;
	rc = 0;
out:
	db_finalize(s);
	if (rc < 0)
		store_rollback(st);
	free(text);
	return rc;
}

int docs_get(jv *out, struct store *st, const char *project, const char *kind, int version)
{
	static const char sql[] =
		"SELECT kind, version, trace_id, created_at, content FROM compile_docs "
		"WHERE project = ?1 AND kind = ?2 AND (CAST(?3 AS INTEGER) = 0 OR version = ?3) "
		"ORDER BY version DESC LIMIT 1";
	struct db_stmt *s = NULL;
	int rc = -1, step;

	*out = jv_null();
	if (db_prepare(&s, st, sql) < 0)
		return -1;
	db_bind_text(s, 1, project);
	db_bind_text(s, 2, kind);
	db_bind_int64(s, 3, version);
	step = db_step(s);
	if (step == DB_ROW) {
		jv row = json_set(jv_object(), "kind", db_col_str(s, 0));
		row = json_set(row, "version", jv_number((double)db_col_int64(s, 1)));
		row = json_set(row, "trace_id", db_col_str(s, 2));
		row = json_set(row, "created_at", db_col_str(s, 3));
		*out = json_set(row, "doc", db_col_json(s, 4));
		rc = 0;
	} else if (step == DB_DONE) {
		rc = 0;
	} else {
		store_fail(st, "compile documents: cannot read");
	}
	db_finalize(s);
	return rc;
}

int docs_list(jv *out, struct store *st, const char *project)
{
	/* the stages' order first (the position in docs_kinds), then by name */
	static const char sql[] =
		"SELECT kind, version, trace_id, created_at FROM compile_docs WHERE project = ?1 "
		"ORDER BY CASE kind WHEN 'intent' THEN 0 WHEN 'delta' THEN 1 WHEN 'flows' THEN 2 "
		"WHEN 'contracts' THEN 3 WHEN 'rules' THEN 4 WHEN 'db_schema' THEN 5 WHEN 'test_suite' THEN 6 "
		"WHEN 'implementation' THEN 7 WHEN 'integration' THEN 8 WHEN 'compile_review' THEN 9 ELSE 10 END, "
		"kind, version";
	struct db_stmt *s = NULL;
	jv list = jv_array();
	int step;

	*out = jv_null();
	if (db_prepare(&s, st, sql) < 0) {
		jv_free(list);
		return -1;
	}
	db_bind_text(s, 1, project);
	while ((step = db_step(s)) == DB_ROW) {
		jv row = json_set(jv_object(), "kind", db_col_str(s, 0));
		row = json_set(row, "version", jv_number((double)db_col_int64(s, 1)));
		row = json_set(row, "trace_id", db_col_str(s, 2));
		list = jv_array_append(list, json_set(row, "created_at", db_col_str(s, 3)));
	}
	db_finalize(s);
	if (step != DB_DONE) {
		jv_free(list);
		return store_fail(st, "compile documents: cannot read");
	}
	*out = list;
	return 0;
}

/* kind is a plain name (no '/', no dots): it becomes a file name. */
static int check_kind(const char *kind)
{
	if (!kind || !*kind || strspn(kind, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(kind))
		return forge_error("compile documents: '%s' is not a document kind", kind ? kind : "");
	return 0;
}

/* mkdir <root>/.forge and <root>/.forge/compile (dir) when absent. */
static int make_dir(const char *dir)
{
	char *parent = xstrdup(dir);
	char *slash = strrchr(parent, '/');
	int rc = 0;

	if (slash)
		*slash = '\0';
	for (const char *d = parent; d && rc == 0; d = d == parent ? dir : NULL) {
		if (mkdir(d, 0755) == 0)
			owner_follow(-1, d);        /* under sudo: core/owner.h */
		else if (errno != EEXIST)
			rc = forge_error("cannot make %s: %s", d, strerror(errno));
	}
	free(parent);
	return rc;
}

int docs_write_file(const char *root, const char *kind, jv doc)
{
	struct buf dir = BUF_INIT, path = BUF_INIT, tmp = BUF_INIT;
	char *text = NULL;
	FILE *f = NULL;
	int rc = -1;

	if (check_kind(kind) < 0)
		return -1;
	buf_addf(&dir, "%s/.forge/compile", root);
	buf_addf(&path, "%s/%s.json", dir.buf, kind);
	buf_addf(&tmp, "%s.tmp.%ld", path.buf, (long)getpid());
	if (make_dir(dir.buf) < 0)
		goto out;
	jv pretty = jv_dump_string(jv_copy(doc), JV_PRINT_INDENT_FLAGS(2));
	text = xstrdup(jv_string_value(pretty));
	jv_free(pretty);
	/* written whole, then renamed: a reader never sees half a document */
	f = fopen(tmp.buf, "w");
	if (f)
		owner_follow(fileno(f), tmp.buf);
	if (!f || fputs(text, f) == EOF || fputc('\n', f) == EOF) {
		forge_error("cannot write %s: %s", tmp.buf, strerror(errno));
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		forge_error("cannot write %s: %s", tmp.buf, strerror(errno));
		goto out;
	}
	f = NULL;
	if (rename(tmp.buf, path.buf) < 0) {
		forge_error("cannot write %s: %s", path.buf, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (f)
		fclose(f);
	if (rc < 0)
		unlink(tmp.buf);
	free(text);
	buf_release(&dir);
	buf_release(&path);
	buf_release(&tmp);
	return rc;
}

int docs_write_files(const char *root, jv state)
{
	int rc = 0;

	for (const char *const *k = docs_kinds; *k && rc == 0; k++) {
		jv doc = json_get(state, *k);

		if (jv_get_kind(doc) == JV_KIND_OBJECT)
			rc = docs_write_file(root, *k, doc);
		jv_free(doc);
	}
	return rc;
}

int docs_read_file(jv *out, const char *root, const char *kind)
{
	struct buf path = BUF_INIT;
	int rc = 0;

	*out = jv_null();
	if (check_kind(kind) < 0)
		return -1;
	buf_addf(&path, "%s/.forge/compile/%s.json", root, kind);
	if (access(path.buf, F_OK) == 0) {
		jv v = json_parse_file(path.buf);
		if (jv_get_kind(v) == JV_KIND_OBJECT) {
			*out = v;
		} else {
			char *msg = jv_is_valid(v) ? xstrdup("not a JSON object") : json_invalid_msg(jv_copy(v));
			rc = forge_error("%s: %s", path.buf, msg);
			free(msg);
			jv_free(v);
		}
	}
	buf_release(&path);
	return rc;
}
