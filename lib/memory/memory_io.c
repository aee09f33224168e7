/*
 * memory_io.c - export and import of memories as JSON lines, and batch
 * stores (memory.h).
 */
#include "memory/memory_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

int mem_import_check(struct memory *m, jv mem);
int mem_import_one(char id_out[ULID_LEN + 1], struct memory *m, jv mem, bool link);

#define LINK_MAX 2000   /* imports up to this size find relationships row by row;
			 * larger ones link exact copies only (link_copies) */

static int exists(bool *yes, struct memory *m, const char *id)
{
	int64_t seq;
	int rc = id ? mem_seq_of(&seq, m, id) : MEMORY_NOT_FOUND;

	*yes = rc == 0;
	return rc < 0 ? -1 : 0;
}

/* Edges listed in a memory's "relationships" (borrowed). */
static int import_edges(struct memory *m, const char *id, jv mem)
{
	jv rels = json_get(mem, "relationships");
	int rc = 0;

	if (jv_get_kind(rels) == JV_KIND_ARRAY) {
		jv_array_foreach(rels, i, r) {
			const char *other = json_get_str(r, "id");

			if (rc == 0 && other)
				rc = memory_relate(m, id, other, json_get_str(r, "relationship"),
						   json_get_num(r, "similarity", -1));
			jv_free(r);
			(void)i;
		}
	}
	jv_free(rels);
	return rc;
}

static int link_one(struct memory *m, const char *id)
{
	jv mem, related = jv_invalid();
	struct buf text = BUF_INIT;
	float *v = NULL;
	size_t dim;
	int rc = -1;

	if (memory_get(&mem, m, id) < 0)
		return -1;
	char *tags = json_dumps(json_get(mem, "tags"), false);
	const char *t;

	mem_embed_text(&text, json_get_str(mem, "content"), json_get_str(mem, "context"), tags);
	t = text.buf;
	if (mem_embed_many(&v, &dim, m, &t, &text.len, 1) < 0 ||
	    mem_find_related(&related, m, v, dim, json_get_str(mem, "content")) < 0)
		goto out;
	rc = 0;
	jv_array_foreach(related, i, r) {
		const char *other = json_get_str(r, "id");

		if (rc == 0 && strcmp(other, id) != 0) {
			rc = memory_relate(m, id, other, json_get_str(r, "kind"),
					   json_get_num(r, "similarity", -1));
			if (rc == 0 && json_get_bool(r, "contradicts", false))
				rc = memory_relate(m, id, other, "contradicts",
						   json_get_num(r, "similarity", -1));
		}
		jv_free(r);
		(void)i;
	}
out:
	free(tags);
	free(v);
	buf_release(&text);
	jv_free(related);
	jv_free(mem);
	return rc;
}

/*
 * Link each memory stored after seq `first` to the first active memory of
 * its type with the same content, context and tags (content_hash):
 * "similar" at 1, so consolidation merges the copy.  One query however
 * many rows came (an import too large to link by similarity row by row
 * still finds its exact duplicates).
 */
static int link_copies(struct memory *m, int64_t first)
{
	struct db_stmt *s = NULL;
	char (*a)[ULID_LEN + 1] = NULL, (*b)[ULID_LEN + 1] = NULL;
	char head[ULID_LEN + 1] = "", hash[40] = "", type[16] = "";
	size_t n = 0, cap = 0;
	int step, rc = -1;

	/* the copies sorted together (no index on content_hash: one sort, not
	 * a scan per new row) */
	if (mem_prepare(&s, m, "SELECT content_hash, type, seq, id FROM memories WHERE "
			"archived_at IS NULL AND content_hash IN (SELECT content_hash FROM memories "
			"WHERE seq > ?1) ORDER BY content_hash, type, seq") < 0)
		return -1;
	db_bind_int64(s, 1, first);
	while ((step = db_step(s)) == DB_ROW) {
		const char *h = db_col_text(s, 0), *t = db_col_text(s, 1), *id = db_col_text(s, 3);

		if (strcmp(h, hash) != 0 || strcmp(t, type) != 0) {
			snprintf(hash, sizeof hash, "%s", h);
			snprintf(type, sizeof type, "%s", t);
			snprintf(head, sizeof head, "%s", id);
			continue;
		}
		if (db_col_int64(s, 2) <= first)
			continue;
		if (n == cap) {
			cap = cap * 2 + 64;
			a = xrealloc(a, cap * sizeof *a);
			b = xrealloc(b, cap * sizeof *b);
		}
		snprintf(a[n], sizeof a[0], "%s", id);
		snprintf(b[n], sizeof b[0], "%s", head);
		n++;
	}
	db_finalize(s);
	if (step != DB_DONE) {
		mem_fail(m, "cannot read memories");
		goto out;
	}
	if (n && mem_begin(m) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (memory_relate(m, a[i], b[i], "similar", 1) < 0) {
			mem_rollback(m);
			goto out;
		}
	}
	if (n && mem_commit(m) < 0)
		goto out;
	rc = 0;
out:
	free(a);
	free(b);
	return rc;
}

static int mem_max_seq(int64_t *out, struct memory *m)
{
	struct db_stmt *s;
	int rc = 0;

	if (mem_prepare(&s, m, "SELECT coalesce(max(seq), 0) FROM memories") < 0)
		return -1;
	if (db_step(s) == DB_ROW)
		*out = db_col_int64(s, 0);
	else
		rc = mem_fail(m, "cannot read memories");
	db_finalize(s);
	return rc;
}

/* Index the rows after seq `first` for FTS5 in one statement (bulk load). */
static int fts_catch_up(struct memory *m, int64_t first)
{
	struct db_stmt *s;
	int rc = 0;

	if (mem_prepare(&s, m, "INSERT INTO memories_fts (rowid, content, context, tags) "
			"SELECT seq, content, context, tags FROM memories WHERE seq > ? ORDER BY seq") < 0)
		return -1;
	db_bind_int64(s, 1, first);
	if (db_step(s) != DB_DONE)
		rc = mem_fail(m, "cannot index memories for search");
	db_finalize(s);
	if (rc == 0)
		rc = store_exec(m->st, "UPDATE memory_meta SET fts_deferred = 0 WHERE k = 1");
	return rc;
}

/*
 * Store an array of memories (consumed) in one transaction, keeping given
 * ids and times; ids already present are skipped.  Relationships: the
 * "relationships" of each item, and (link) those found by similarity.
 */
int memory_store_batch(long *stored, long *skipped, struct memory *m, jv items, bool link)
{
	long n_stored = 0, n_skipped = 0;
	int n = jv_get_kind(items) == JV_KIND_ARRAY ? jv_array_length(jv_copy(items)) : 0;
	char (*ids)[ULID_LEN + 1] = xcalloc((size_t)n + 1, sizeof *ids);
	bool *fresh = xcalloc((size_t)n + 1, sizeof *fresh);
	int64_t first = 0;
	int rc = -1;

	if (mem_begin(m) < 0)
		goto out;
	if (mem_max_seq(&first, m) < 0)
		goto fail;
	/* (PostgreSQL: memories.tsv is a generated column, nothing to defer) */
	if (n > 16 && !m->pg &&
	    store_exec(m->st, "UPDATE memory_meta SET fts_deferred = 1 WHERE k = 1") < 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		jv it = jv_array_get(jv_copy(items), i);
		bool yes;

		if (exists(&yes, m, json_get_str(it, "id")) < 0) {
			jv_free(it);
			goto fail;
		}
		if (yes) {
			n_skipped++;
			jv_free(it);
			continue;
		}
		if (mem_import_one(ids[i], m, it, false) < 0) {
			forge_error_prefix("item %d", i + 1);
			goto fail;
		}
		fresh[i] = true;
		n_stored++;
	}
	for (int i = 0; i < n; i++) {
		jv it = jv_array_get(jv_copy(items), i);
		int erc = fresh[i] ? import_edges(m, ids[i], it) : 0;

		jv_free(it);
		if (erc < 0)
			goto fail;
	}
	if (n > 16 && !m->pg && fts_catch_up(m, first) < 0)
		goto fail;
	if (mem_commit(m) < 0)
		goto out;
	for (int i = 0; link && i < n; i++) {
		if (fresh[i] && link_one(m, ids[i]) < 0)
			goto out;
	}
	if (n_stored && link_copies(m, first) < 0)
		goto out;
	rc = 0;
	goto out;
fail:
	mem_rollback(m);
out:
	if (stored)
		*stored = rc == 0 ? n_stored : 0;
	if (skipped)
		*skipped = n_skipped;
	free(ids);
	free(fresh);
	jv_free(items);
	return rc;
}

/*
 * After a large import, the word index merged into one segment (FTS5's
 * 'optimize'): the rows came in one transaction, flushed as many segments,
 * and every later search walked all of them per term (forge memory search
 * at 100K imported memories: 31.4M -> 29.2M instructions).  The same
 * documents and lengths: BM25's scores, and so the ranks, do not change.
 * Best effort: the import is committed, an index left unmerged only costs
 * time (FTS5 merges it by itself as rows come).  Not on PostgreSQL (GIN).
 */
#define FTS_OPTIMIZE_MIN 1000

static void fts_optimize(struct memory *m)
{
	if (!m->pg)
		(void)store_exec(m->st, "INSERT INTO memories_fts (memories_fts) VALUES ('optimize')");
}

int memory_import(long *imported, long *skipped, struct memory *m, FILE *f, const char *name)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long lineno = 0;
	jv items = jv_array();
	int rc = -1;

	if (imported)
		*imported = 0;
	if (skipped)
		*skipped = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		size_t sp = strspn(line, " \t");

		if (line[sp] == 0)
			continue;
		if (!json_utf8_valid(line, (size_t)len)) {
			forge_error("%s: line %ld: invalid UTF-8", name, lineno);
			goto out;
		}
		jv v = json_parse(line, (size_t)len);

		if (!jv_is_valid(v)) {
			char *msg = json_invalid_msg(v);

			forge_error("%s: line %ld: not JSON: %s", name, lineno, msg);
			free(msg);
			goto out;
		}
		if (mem_import_check(m, jv_copy(v)) < 0) {
			jv_free(v);
			forge_error_prefix("%s: line %ld", name, lineno);
			goto out;
		}
		items = jv_array_append(items, v);
	}
	if (ferror(f)) {
		forge_error("%s: read error", name);
		goto out;
	}
	int n = jv_array_length(jv_copy(items));

	/* (an export's own "relationships" are only the edges among its
	 * memories: those to the memories already here are found here) */
	rc = memory_store_batch(imported, skipped, m, items, n <= LINK_MAX);
	items = jv_invalid();
	if (rc < 0)
		forge_error_prefix("%s", name);
	else if (imported && *imported >= FTS_OPTIMIZE_MIN)
		fts_optimize(m);
out:
	jv_free(items);
	free(line);
	return rc;
}

long memory_export(struct memory *m, FILE *f, bool include_archived)
{
	struct db_stmt *s = NULL;
	long n = 0;
	int step;

	mem_access_refresh(m);
	if (mem_prepare(&s, m, include_archived ? "SELECT " MEM_COLS " FROM memories ORDER BY seq" :
			"SELECT " MEM_COLS " FROM memories WHERE archived_at IS NULL ORDER BY seq") < 0)
		return -1;
	while ((step = db_step(s)) == DB_ROW) {
		jv o = mem_row_json(m, s, 0), rels, out = jv_array();

		if (memory_relations(&rels, m, json_get_str(o, "id")) < 0) {
			jv_free(o);
			jv_free(out);
			n = -1;
			break;
		}
		jv_array_foreach(rels, i, r) {
			const char *dir = json_get_str(r, "direction");

			if (dir && strcmp(dir, "out") == 0) {
				jv e = jv_object();

				e = json_set(e, "id", json_get(r, "other"));
				e = json_set(e, "relationship", json_get(r, "relationship"));
				e = json_set(e, "similarity", json_get(r, "similarity"));
				out = jv_array_append(out, e);
			}
			jv_free(r);
			(void)i;
		}
		jv_free(rels);
		o = json_set(o, "relationships", out);
		if (json_write_line(f, o, false) < 0) {
			int e = errno;
			n = forge_error("cannot write the export: %s", strerror(e));
			errno = e;   /* (EPIPE: the reader went away) */
			break;
		}
		n++;
	}
	if (n >= 0 && step != DB_DONE)
		n = mem_fail(m, "cannot export memories");
	db_finalize(s);
	return n;
}
