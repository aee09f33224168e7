/*
 * memory_concepts.c - words as FTS5 indexes them (porter stems), and the
 * concept thesaurus recall expands a query with (memory.h, RECALL):
 * share/forge/concepts.tsv (compiled in) and the file memory.thesaurus
 * names, kept stemmed in the table memory_concepts, rebuilt when either
 * source changes (the table "memory_concepts_stamp" records which).
 *
 * Format of a thesaurus: one group of equivalent or closely related terms a
 * line, the terms separated by tabs or '|'; blank lines and lines starting
 * with '#' are skipped.  A term is a word or a phrase; it matches a query
 * that holds its words' stems consecutively (stopwords included, so that
 * "out of memory" is not just "memory").
 */
#include "memory/memory_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/resource.h"
#include "store/store.h"

/* ---- words as FTS5 indexes them ------------------------------------- */

/*
 * FTS5's own porter tokenizer, so that recall compares words exactly as the
 * index stores them ("caching" and "cached" are one term).  Made on first use
 * from the connection's fts5_api.
 */
static int stem_init(struct memory *m)
{
	static const char *const args[] = { "unicode61", "remove_diacritics", "2" };
	fts5_api *api = NULL;
	sqlite3_stmt *s = NULL;
	sqlite3 *db;
	void *ud = NULL;

	if (m->stem)
		return 0;
	/* on PostgreSQL, FTS5 of a connection to no file (stemming is a text
	 * function here, not storage) */
	if (m->pg && !m->stem_db && sqlite3_open(":memory:", &m->stem_db) != SQLITE_OK)
		return forge_error("cannot reach FTS5 (an in-memory SQLite database)");
	db = m->pg ? m->stem_db : store_db(m->st);
	if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &s, NULL) != SQLITE_OK)
		return mem_fail(m, "cannot reach FTS5");
	sqlite3_bind_pointer(s, 1, (void *)&api, "fts5_api_ptr", NULL);
	sqlite3_step(s);
	sqlite3_finalize(s);
	if (!api || api->xFindTokenizer(api, "porter", &ud, &m->stem_api) != SQLITE_OK ||
	    m->stem_api.xCreate(ud, (const char **)args, 3, &m->stem) != SQLITE_OK) {
		m->stem = NULL;
		return forge_error("cannot make FTS5's porter tokenizer");
	}
	return 0;
}

struct stem_ctx {
	const char *text;
	bool keep_stop;
	mem_stem_fn *fn;
	void *payload;
};

static int stem_token(void *p, int flags, const char *tok, int ntok, int start, int end)
{
	struct stem_ctx *c = p;
	char surf[MEM_TERM_LEN];
	size_t ns = (size_t)(end - start);

	(void)flags;
	if (ntok <= 0 || ntok >= MEM_TERM_LEN || ns == 0 || ns >= MEM_TERM_LEN)
		return SQLITE_OK;
	for (size_t i = 0; i < ns; i++) {
		unsigned char ch = (unsigned char)c->text[start + (int)i];

		surf[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
	}
	surf[ns] = 0;
	if (!c->keep_stop && mem_stopword(surf, ns))
		return SQLITE_OK;
	c->fn(surf, ns, tok, (size_t)ntok, c->payload);
	return SQLITE_OK;
}

int mem_stems(struct memory *m, const char *text, size_t len, bool keep_stop, mem_stem_fn *fn,
	      void *payload)
{
	struct stem_ctx c = { text, keep_stop, fn, payload };

	if (stem_init(m) < 0)
		return -1;
	if (len > INT32_MAX)
		len = INT32_MAX;
	if (m->stem_api.xTokenize(m->stem, &c, FTS5_TOKENIZE_DOCUMENT, text, (int)len,
				  stem_token) != SQLITE_OK)
		return forge_error("cannot split a text into words");
	return 0;
}

/* ---- the table ------------------------------------------------------- */

#define STEMS_MAX (MEM_TERM_LEN - 1)   /* a term's stems, space-separated, at most */
#define QUERY_STEMS 64         /* a query's first words looked up */
#define GROUPS_MAX 12          /* groups one query brings in */

/* Append a stem to a space-separated list (payload: struct buf). */
static void add_stem(const char *surf, size_t ns, const char *stem, size_t nst, void *payload)
{
	struct buf *b = payload;

	(void)surf;
	(void)ns;
	if (b->len)
		buf_add(b, " ", 1);
	buf_add(b, stem, nst);
}

/* Store the groups of text (a thesaurus; name for messages) from group *grp on. */
static int load_text(struct memory *m, struct db_stmt *ins, const char *text, size_t len,
		     long *grp, const char *name)
{
	struct buf term = BUF_INIT, stems = BUF_INIT;
	const char *p = text, *end = text + len;
	int rc = 0;

	while (p < end && rc == 0) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q;

		if (!eol)
			eol = end;
		for (q = p; q < eol && (*q == ' ' || *q == '\t'); q++)
			;
		if (q == eol || *q == '#' || *q == '\r') {
			p = eol + 1;
			continue;
		}
		(*grp)++;
		while (q < eol && rc == 0) {
			const char *t = q;

			while (q < eol && *q != '\t' && *q != '|')
				q++;
			buf_reset(&term);
			for (const char *c = t; c < q; c++) {
				/* quotes would end an FTS5 phrase; blanks become one */
				char ch = *c == '"' || *c == '\r' || *c == '\t' ? ' ' : *c;

				if (ch != ' ' || (term.len && term.buf[term.len - 1] != ' '))
					buf_add(&term, &ch, 1);
			}
			while (term.len && term.buf[term.len - 1] == ' ')
				term.buf[--term.len] = 0;
			if (q < eol)
				q++;
			buf_reset(&stems);
			if (!term.len || mem_stems(m, term.buf, term.len, true, add_stem, &stems) < 0)
				continue;
			if (!stems.len || stems.len > STEMS_MAX || term.len >= MEM_TERM_LEN)
				continue;
			size_t first = strcspn(stems.buf, " ");

			db_reset(ins);
			db_bind_textn(ins, 1, stems.buf, first);
			db_bind_textn(ins, 2, stems.buf, stems.len);
			db_bind_int64(ins, 3, *grp);
			db_bind_textn(ins, 4, term.buf, term.len);
			if (db_step(ins) != DB_DONE)
				rc = mem_fail(m, "cannot store the thesaurus %s", name);
		}
		p = eol + 1;
	}
	db_reset(ins);
	buf_release(&term);
	buf_release(&stems);
	return rc;
}

/* The contents of the user's thesaurus into *text; *text empty without one. */
static int read_user(struct buf *text, const char *path)
{
	FILE *f;
	char chunk[8192];
	size_t n;

	buf_reset(text);
	if (!path)
		return 0;
	f = fopen(path, "r");
	if (!f)
		return forge_error("memory.thesaurus: cannot read '%s': %s", path, strerror(errno));
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_add(text, chunk, n);
	if (ferror(f)) {
		fclose(f);
		return forge_error("memory.thesaurus: cannot read '%s': %s", path, strerror(errno));
	}
	fclose(f);
	return 0;
}

/* Make the tables in schema (main or temp; on PostgreSQL those of
 * schemas/pg/004-memory.sql, locked against another process rebuilding
 * them at once), empty. */
static int make_tables(struct memory *m, const char *schema)
{
	struct buf sql = BUF_INIT;
	int rc = 0;

	if (m->pg)
		buf_adds(&sql, "LOCK TABLE memory_concepts_stamp IN EXCLUSIVE MODE; "
			 "DELETE FROM memory_concepts; DELETE FROM memory_concepts_stamp");
	else
		buf_addf(&sql, "CREATE TABLE IF NOT EXISTS %s.memory_concepts (first TEXT NOT NULL, "
			 "stems TEXT NOT NULL, grp INTEGER NOT NULL, term TEXT NOT NULL); "
			 "CREATE INDEX IF NOT EXISTS %s.memory_concepts_first ON memory_concepts (first); "
			 "CREATE INDEX IF NOT EXISTS %s.memory_concepts_grp ON memory_concepts (grp); "
			 "CREATE TABLE IF NOT EXISTS %s.memory_concepts_stamp (stamp TEXT NOT NULL); "
			 "DELETE FROM %s.memory_concepts; DELETE FROM %s.memory_concepts_stamp",
			 schema, schema, schema, schema, schema, schema);
	if (store_exec(m->st, sql.buf) < 0)
		rc = mem_fail(m, "cannot make the thesaurus table");
	buf_release(&sql);
	return rc;
}

/* Whether <schema>.memory_concepts_stamp holds stamp: 0 (*current set),
 * -1.  On SQLite a missing table is no error (nothing said): the statement
 * is SQLite's own, as a failed db_prepare() would name the failure. */
static int read_stamp(struct memory *m, const char *schema, const char *stamp, bool *current)
{
	struct buf sql = BUF_INIT;
	int rc = 0;

	if (m->pg) {
		struct db_stmt *s = NULL;

		if (db_prepare(&s, m->st, "SELECT stamp FROM memory_concepts_stamp") < 0)
			return -1;
		int step = db_step(s);

		if (step == DB_ROW && db_col_text(s, 0))
			*current = strcmp(db_col_text(s, 0), stamp) == 0;
		rc = step < 0 ? mem_fail(m, "cannot read the thesaurus stamp") : 0;
		db_finalize(s);
		return rc;
	}
	sqlite3_stmt *s = NULL;

	buf_addf(&sql, "SELECT stamp FROM %s.memory_concepts_stamp", schema);
	if (sqlite3_prepare_v2(store_db(m->st), sql.buf, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		*current = strcmp((const char *)sqlite3_column_text(s, 0), stamp) == 0;
	sqlite3_finalize(s);
	buf_release(&sql);
	return rc;
}

int mem_concepts_sync(struct memory *m)
{
	const struct resource *r = resource_find(MEM_CONCEPTS_RESOURCE);
	const char *schema = "main";
	struct buf user = BUF_INIT, stamp = BUF_INIT, sql = BUF_INIT;
	struct db_stmt *s = NULL, *ins = NULL;
	char h1[33], h2[33];
	long grp = 0;
	bool current = false;
	int rc = -1;

	if (m->concepts_synced)
		return 0;
	if (read_user(&user, m->thesaurus) < 0)
		goto out;
	mem_stamp_hex(h1, r ? r->data : "", r ? r->len : 0);
	mem_stamp_hex(h2, user.buf ? user.buf : "", user.len);
	buf_addf(&stamp, "c2 %s %s %s", h1, h2, m->thesaurus ? m->thesaurus : "-");
	/* a read-only store uses the database's table when it is current,
	 * else one of its own in temp */
	for (int k = 0; k < 2 && !current; k++) {
		if (k && !store_readonly(m->st))
			break;
		schema = k ? "temp" : "main";
		if (read_stamp(m, schema, stamp.buf, &current) < 0)
			goto out;
		if (m->pg)
			break;     /* (no temp tables: one connection's, not the pool's) */
	}
	m->concepts_schema = schema;
	if (current) {
		rc = 0;
		goto out;
	}
	/* PostgreSQL, read-only (a role that may only read): the shared table
	 * is not this process's to build, and there is no temp table to build
	 * instead; recall goes without the concept list */
	if (m->pg && store_readonly(m->st)) {
		m->concepts_missing = true;
		rc = 0;
		goto out;
	}
	/* (temp needs no write lock on the database: a read-only store can) */
	if ((strcmp(schema, "temp") ? mem_begin(m) : store_exec(m->st, "BEGIN")) < 0)
		goto out;
	if (make_tables(m, schema) < 0)
		goto fail;
	buf_reset(&sql);
	buf_addf(&sql, "INSERT INTO %s%smemory_concepts (first, stems, grp, term) VALUES (?, ?, ?, ?)",
		 m->pg ? "" : schema, m->pg ? "" : ".");
	if (mem_prepare(&ins, m, sql.buf) < 0)
		goto fail;
	if (r && load_text(m, ins, r->data, r->len, &grp, "built in") < 0)
		goto fail;
	if (user.len && load_text(m, ins, user.buf, user.len, &grp, m->thesaurus) < 0)
		goto fail;
	buf_reset(&sql);
	buf_addf(&sql, "INSERT INTO %s%smemory_concepts_stamp (stamp) VALUES (?)", m->pg ? "" : schema,
		 m->pg ? "" : ".");
	if (mem_prepare(&s, m, sql.buf) < 0)
		goto fail;
	db_bind_text(s, 1, stamp.buf);
	if (db_step(s) != DB_DONE) {
		mem_fail(m, "cannot store the thesaurus stamp");
		goto fail;
	}
	if (mem_commit(m) < 0)
		goto out;
	rc = 0;
	goto out;
fail:
	mem_rollback(m);
out:
	if (rc == 0)
		m->concepts_synced = true;
	db_finalize(s);
	db_finalize(ins);
	buf_release(&user);
	buf_release(&stamp);
	buf_release(&sql);
	return rc;
}

/* ---- expansion ------------------------------------------------------- */

struct qstems {
	char stem[QUERY_STEMS][MEM_TERM_LEN];
	size_t n;
};

static void query_stem(const char *surf, size_t ns, const char *stem, size_t nst, void *payload)
{
	struct qstems *q = payload;

	(void)surf;
	(void)ns;
	if (q->n < QUERY_STEMS) {
		memcpy(q->stem[q->n], stem, nst);
		q->stem[q->n][nst] = 0;
		q->n++;
	}
}

/* Whether the space-separated stems are the query's from word i on. */
static bool stems_at(const struct qstems *q, size_t i, const char *stems)
{
	const char *p = stems;

	for (; i < q->n; i++) {
		size_t n = strcspn(p, " ");

		if (strlen(q->stem[i]) != n || memcmp(q->stem[i], p, n) != 0)
			return false;
		p += n;
		if (!*p)
			return true;
		p++;
	}
	return false;
}

/* Whether every stem of stems is a word of the query. */
static bool stems_in_query(const struct qstems *q, const char *stems)
{
	for (const char *p = stems; *p;) {
		size_t n = strcspn(p, " ");
		bool found = false;

		for (size_t i = 0; i < q->n && !found; i++)
			found = strlen(q->stem[i]) == n && memcmp(q->stem[i], p, n) == 0;
		if (!found)
			return false;
		p += n;
		if (*p)
			p++;
	}
	return true;
}

void mem_concepts_free(struct mem_concept *c, size_t n)
{
	for (size_t i = 0; i < n && c; i++) {
		free(c[i].term);
		free(c[i].stems);
	}
	free(c);
}

int mem_concepts_expand(struct mem_concept **out, size_t *count, struct memory *m,
			const char *text, size_t max)
{
	const char *schema;
	struct qstems *q = xcalloc(1, sizeof *q);
	struct mem_concept *c = NULL;
	size_t take[GROUPS_MAX] = { 0 };
	long groups[GROUPS_MAX];
	size_t ng = 0, n = 0;
	struct db_stmt *s;
	struct buf sql = BUF_INIT;
	int rc = -1;

	*out = NULL;
	*count = 0;
	if (mem_concepts_sync(m) < 0 || mem_stems(m, text, strlen(text), true, query_stem, q) < 0)
		goto out;
	schema = m->concepts_schema;
	buf_addf(&sql, "SELECT grp, stems FROM %s%smemory_concepts WHERE first = ? ORDER BY grp",
		 m->pg ? "" : schema, m->pg ? "" : ".");
	if (mem_cached(&s, m, MS_CONCEPT_FIRST, sql.buf) < 0)
		goto out;
	/* the groups of the terms the query holds, in the order of its words */
	for (size_t i = 0; i < q->n && ng < GROUPS_MAX; i++) {
		db_reset(s);
		db_bind_text(s, 1, q->stem[i]);
		while (db_step(s) == DB_ROW && ng < GROUPS_MAX) {
			long g = (long)db_col_int64(s, 0);
			bool seen = false;

			if (!stems_at(q, i, db_col_text(s, 1)))
				continue;
			for (size_t k = 0; k < ng && !seen; k++)
				seen = groups[k] == g;
			if (!seen)
				groups[ng++] = g;
		}
	}
	db_reset(s);
	buf_reset(&sql);
	/* (in the order the thesaurus lists them: rowid, or the identity) */
	buf_addf(&sql, "SELECT term, stems FROM %s%smemory_concepts WHERE grp = ? ORDER BY %s",
		 m->pg ? "" : schema, m->pg ? "" : ".", m->pg ? "id" : "rowid");
	if (ng && mem_cached(&s, m, MS_CONCEPT_GROUP, sql.buf) < 0)
		goto out;
	/* their other terms, round-robin over the groups so that each has its
	 * first (most usual) terms in */
	c = xcalloc(max ? max : 1, sizeof *c);
	bool more = ng > 0;

	while (more && n < max) {
		more = false;
		for (size_t k = 0; k < ng && n < max; k++) {
			size_t row = 0;
			int step;

			db_reset(s);
			db_bind_int64(s, 1, groups[k]);
			while ((step = db_step(s)) == DB_ROW) {
				const char *t = db_col_text(s, 0);
				const char *st = db_col_text(s, 1);
				bool dup = stems_in_query(q, st);

				if (row++ < take[k])
					continue;
				take[k] = row;
				for (size_t j = 0; j < n && !dup; j++)
					dup = strcmp(c[j].stems, st) == 0;
				if (dup)
					continue;
				c[n].term = xstrdup(t);
				c[n].stems = xstrdup(st);
				c[n].grp = groups[k];
				n++;
				more = true;
				break;
			}
			if (step != DB_ROW && step != DB_DONE) {
				db_reset(s);
				rc = mem_fail(m, "cannot read the thesaurus");
				goto out;
			}
		}
	}
	if (ng)
		db_reset(s);
	*out = c;
	*count = n;
	c = NULL;
	rc = 0;
out:
	mem_concepts_free(c, n);
	buf_release(&sql);
	free(q);
	return rc;
}
