/*
 * memory_crud.c - confidence adjustments, archive, delete, relationships
 * and listing of memories (memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

int memory_adjust(double *after, struct memory *m, const char *id, double delta,
		  const char *kind, const char *note)
{
	struct db_stmt *s = NULL;
	int rc = -1, step;
	bool txn = false;

	if (mem_begin(m) < 0)
		return -1;
	txn = true;
	if (mem_prepare(&s, m, "SELECT confidence FROM memories WHERE id = ?") < 0)
		goto out;
	db_bind_text(s, 1, id);
	step = db_step(s);
	if (step == DB_DONE) {
		rc = MEMORY_NOT_FOUND;
		goto out;
	}
	if (step != DB_ROW) {
		mem_fail(m, "cannot read memory '%s'", id);
		goto out;
	}
	double before = db_col_double(s, 0);
	double now_c = memory_clamp(before + delta);

	db_finalize(s);
	if (mem_prepare(&s, m, "UPDATE memories SET confidence = ?, updated_at = ? WHERE id = ?") < 0)
		goto out;
	db_bind_double(s, 1, now_c);
	db_bind_int64(s, 2, memory_now(m));
	db_bind_text(s, 3, id);
	if (db_step(s) != DB_DONE) {
		mem_fail(m, "cannot update memory '%s'", id);
		goto out;
	}
	if (mem_signal_log(m, id, kind ? kind : "adjusted", now_c - before, note) < 0)
		goto out;
	db_finalize(s);
	s = NULL;
	txn = false;
	if (mem_commit(m) < 0)
		goto out;
	if (after)
		*after = now_c;
	rc = 0;
out:
	db_finalize(s);
	if (txn)
		mem_rollback(m);
	return rc;
}

int memory_signal(double *after, struct memory *m, const char *id, enum memory_signal sig)
{
	switch (sig) {
	case MEMORY_SIGNAL_APPLIED:
		return memory_adjust(after, m, id, MEMORY_DELTA_APPLIED, "applied", NULL);
	case MEMORY_SIGNAL_CONFIRMED:
		return memory_adjust(after, m, id, MEMORY_DELTA_CONFIRMED, "confirmed", NULL);
	case MEMORY_SIGNAL_DISMISSED:
		return memory_adjust(after, m, id, MEMORY_DELTA_DISMISSED, "dismissed", NULL);
	}
	return forge_error("unknown memory signal %d", (int)sig);
}

/* Run one UPDATE/DELETE on id with an optional int64 and text bound first. */
static int exec_on_id(struct memory *m, const char *sql, const char *id, int64_t t,
		      const char *text, const char *what)
{
	struct db_stmt *s;
	int rc;

	if (mem_prepare(&s, m, sql) < 0)
		return -1;
	db_bind_int64(s, 1, t);
	db_bind_text(s, 2, text);
	db_bind_text(s, 3, id);
	if (db_step(s) != DB_DONE)
		rc = mem_fail(m, "cannot %s memory '%s'", what, id);
	else
		rc = db_changes(s) ? 0 : MEMORY_NOT_FOUND;
	db_finalize(s);
	return rc;
}

int memory_archive(struct memory *m, const char *id, const char *reason)
{
	int64_t seq;
	int rc = mem_seq_of(&seq, m, id);

	if (rc)
		return rc;
	rc = exec_on_id(m, "UPDATE memories SET archived_at = ?1, archived_reason = ?2 "
			"WHERE id = ?3 AND archived_at IS NULL", id, memory_now(m), reason, "archive");
	if (rc == 0)
		mem_signal_log(m, id, "archived", NAN, reason);
	return rc == MEMORY_NOT_FOUND ? 0 : rc;   /* already archived */
}

int memory_unarchive(struct memory *m, const char *id)
{
	return exec_on_id(m, "UPDATE memories SET archived_at = NULL, archived_reason = ?2, "
			  "last_accessed = ?1, decayed_through = NULL WHERE id = ?3", id,
			  memory_now(m), NULL, "restore");
}

int memory_delete(struct memory *m, const char *id)
{
	int rc;

	if (mem_begin(m) < 0)
		return -1;
	/* (?1 and ?2 are not named: bound, unused) */
	rc = exec_on_id(m, "DELETE FROM memory_relationships WHERE memory_a_id = ?3 OR "
			"memory_b_id = ?3", id, 0, NULL, "delete");
	if (rc >= 0)
		rc = exec_on_id(m, "DELETE FROM memories WHERE id = ?3", id, 0, NULL, "delete");
	if (rc == 0 || rc == MEMORY_NOT_FOUND) {
		if (mem_commit(m) < 0)
			return -1;
		return rc;
	}
	mem_rollback(m);
	return rc;
}

static const char *const kinds[] = { "related", "similar", "contradicts", "extends", "replaces", NULL };

int memory_relate(struct memory *m, const char *a, const char *b, const char *kind, double sim)
{
	struct db_stmt *s;
	char id[ULID_LEN + 1];
	bool ok = false;
	int rc = 0;

	for (int i = 0; kinds[i]; i++)
		ok = ok || (kind && strcmp(kind, kinds[i]) == 0);
	if (!ok)
		return forge_error("unknown relationship '%s': use related, similar, contradicts, "
				   "extends or replaces", kind ? kind : "");
	if (!a || !b || strcmp(a, b) == 0)
		return forge_error("a relationship needs two different memories");
	/* Only between memories that exist; a pair keeps its first edge of a kind. */
	if (mem_cached(&s, m, MS_RELATE, "INSERT INTO memory_relationships (id, memory_a_id, "
			"memory_b_id, relationship, similarity, created_at) SELECT ?1, ?2, ?3, ?4, "
			"CAST(?5 AS DOUBLE PRECISION), CAST(?6 AS BIGINT) "
			"WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?2) AND "
			"EXISTS (SELECT 1 FROM memories WHERE id = ?3) ON CONFLICT DO NOTHING") < 0)
		return -1;
	ulid_new(id);
	db_bind_text(s, 1, id);
	db_bind_text(s, 2, a);
	db_bind_text(s, 3, b);
	db_bind_text(s, 4, kind);
	if (sim >= 0)
		db_bind_double(s, 5, sim);
	db_bind_int64(s, 6, memory_now(m));
	if (db_step(s) != DB_DONE)
		rc = mem_fail(m, "cannot relate memories '%s' and '%s'", a, b);
	db_reset(s);
	return rc;
}

int memory_relations(jv *out, struct memory *m, const char *id)
{
	struct db_stmt *s;
	int step, rc = 0;

	*out = jv_array();
	if (mem_prepare(&s, m, "SELECT id, memory_b_id, relationship, similarity, 'out' FROM "
			"memory_relationships WHERE memory_a_id = ?1 UNION ALL SELECT id, memory_a_id, "
			"relationship, similarity, 'in' FROM memory_relationships WHERE memory_b_id = ?1 "
			"ORDER BY 4 DESC NULLS LAST") < 0)
		return -1;
	db_bind_text(s, 1, id);
	while ((step = db_step(s)) == DB_ROW) {
		jv e = jv_object();

		e = json_set(e, "id", jv_string(db_col_text(s, 0)));
		e = json_set(e, "other", jv_string(db_col_text(s, 1)));
		e = json_set(e, "relationship", jv_string(db_col_text(s, 2)));
		e = json_set(e, "similarity", db_col_null(s, 3) ? jv_null() :
			     jv_number(db_col_double(s, 3)));
		e = json_set(e, "direction", jv_string(db_col_text(s, 4)));
		*out = jv_array_append(*out, e);
	}
	if (step != DB_DONE)
		rc = mem_fail(m, "cannot read relationships of '%s'", id);
	db_finalize(s);
	return rc;
}

void memory_filter_init(struct memory_filter *f)
{
	memset(f, 0, sizeof *f);
	f->type = MEMORY_ANY;
}

void memory_query_init(struct memory_query *q, const char *text)
{
	memset(q, 0, sizeof *q);
	memory_filter_init(&q->filter);
	q->text = text;
}

/* Bind a filter's WHERE clause built by filter_sql: type, min confidence,
 * tags (from index i on). */
static void filter_sql(struct buf *sql, const struct memory_filter *f, bool pg)
{
	if (f->only_archived)
		buf_adds(sql, " AND archived_at IS NOT NULL");
	else if (!f->include_archived)
		buf_adds(sql, " AND archived_at IS NULL");
	if (f->type != MEMORY_ANY)
		buf_adds(sql, " AND type = ?1");
	if (f->min_confidence > 0)
		buf_adds(sql, " AND confidence >= ?2");
	for (size_t i = 0; i < f->ntags; i++)
		buf_addf(sql, pg ? " AND memories.tags::jsonb @> jsonb_build_array(CAST(?%zu AS TEXT))" :
			 " AND EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value = ?%zu)", i + 10);
}

void mem_filter_bind(struct db_stmt *s, const struct memory_filter *f);
void mem_filter_bind(struct db_stmt *s, const struct memory_filter *f)
{
	if (f->type != MEMORY_ANY)
		db_bind_text(s, 1, memory_type_name(f->type));
	if (f->min_confidence > 0)
		db_bind_double(s, 2, f->min_confidence);
	for (size_t i = 0; i < f->ntags; i++)
		db_bind_text(s, (int)(i + 10), f->tags[i]);
}

/* Shared with memory_recall.c: "SELECT confidence, last_accessed, id" of
 * the row with seq ?3 when it passes the filter (bound; mem_filter_bind binds
 * it again after a db_reset). */
int mem_filter_stmt(struct db_stmt **out, struct memory *m, const struct memory_filter *f);
int mem_filter_stmt(struct db_stmt **out, struct memory *m, const struct memory_filter *f)
{
	struct buf sql = BUF_INIT;
	int rc;

	buf_adds(&sql, "SELECT confidence, last_accessed, id FROM memories WHERE seq = ?3");
	filter_sql(&sql, f, m->pg);
	rc = mem_prepare(out, m, sql.buf);
	if (rc == 0)
		mem_filter_bind(*out, f);
	buf_release(&sql);
	return rc;
}

int memory_list(jv *out, struct memory *m, const struct memory_filter *f)
{
	struct buf sql = BUF_INIT;
	struct db_stmt *s = NULL;
	int rc = 0, step;

	*out = jv_array();
	mem_access_refresh(m);
	buf_adds(&sql, "SELECT " MEM_COLS " FROM memories WHERE true");
	filter_sql(&sql, f, m->pg);
	buf_adds(&sql, " ORDER BY seq DESC");
	if (f->limit > 0)
		buf_addf(&sql, " LIMIT %d", f->limit);
	if (mem_prepare(&s, m, sql.buf) < 0) {
		rc = -1;
		goto out;
	}
	mem_filter_bind(s, f);
	while ((step = db_step(s)) == DB_ROW)
		*out = jv_array_append(*out, mem_row_json(m, s, 0));
	if (step != DB_DONE)
		rc = mem_fail(m, "cannot list memories");
out:
	db_finalize(s);
	buf_release(&sql);
	return rc;
}
