/*
 * memory_assoc.c - word associations learnt from the memories themselves
 * (memory.h, RECALL): for each word, the words that occur in the same
 * memories more often than chance (pointwise mutual information), kept in
 * the table memory_assoc and used by recall to expand a query worded
 * otherwise than its answer.
 *
 * Built from every active memory's words (content, context and tags, as
 * FTS5's porter tokenizer stems them, stopwords aside, each word once per
 * memory):
 *   df(a)      the memories holding a
 *   c(a, b)    the memories holding both
 *   pmi(a, b)  log(c(a, b) * N / (df(a) * df(b)))
 * A pair counts when c(a, b) >= ASSOC_MIN_PAIR (one memory saying both is
 * an accident of that memory, not an association) and pmi > 0; a word in
 * more than a tenth of the memories (and in more than ASSOC_COMMON_MIN) is
 * left out, it goes with everything.  Each word keeps its ASSOC_PER_WORD
 * best associates, weighted by pmi * c / (c + 1) (fewer shared memories,
 * less trust).  Learnt from the newest ASSOC_MAX_DOCS memories.  The table
 * is rebuilt by consolidation and by recall when the
 * number of active memories moved by more than an eighth since (or 16);
 * the stamp table memory_assoc_stamp records that number.
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "store/store.h"

#define ASSOC_MIN_PAIR 2
#define ASSOC_PER_WORD 8
#define ASSOC_COMMON_MIN 20
#define ASSOC_MAX_DOC_TERMS 64     /* the words of one memory taken, at most */
#define ASSOC_MIN_SUPPORT 2        /* query words an associate must come from */
#define ASSOC_MAX_DOCS 20000       /* the newest memories learnt from (the LIMIT below) */

/* ---- a vocabulary: stem -> id ----------------------------------------- */

struct word {
	char stem[MEM_TERM_LEN];
	char surf[MEM_TERM_LEN];   /* the first form seen (what MATCH is given) */
	long df;
	bool use;                  /* 2 <= df <= the common limit */
};

struct vocab {
	struct word *w;
	size_t n, cap;
	uint32_t *slot;            /* open addressing: id + 1, 0 = empty */
	size_t nslot;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static void vocab_grow(struct vocab *v)
{
	size_t ns = v->nslot ? v->nslot * 2 : 1024;
	uint32_t *slot = xcalloc(ns, sizeof *slot);

	for (size_t i = 0; i < v->n; i++) {
		size_t k = hash_bytes(v->w[i].stem, strlen(v->w[i].stem)) & (ns - 1);

		while (slot[k])
			k = (k + 1) & (ns - 1);
		slot[k] = (uint32_t)(i + 1);
	}
	free(v->slot);
	v->slot = slot;
	v->nslot = ns;
}

/* The id of stem, added when new. */
static uint32_t vocab_id(struct vocab *v, const char *surf, size_t ns, const char *stem, size_t nst)
{
	if ((v->n + 1) * 2 > v->nslot)
		vocab_grow(v);
	size_t k = hash_bytes(stem, nst) & (v->nslot - 1);

	for (; v->slot[k]; k = (k + 1) & (v->nslot - 1)) {
		struct word *w = &v->w[v->slot[k] - 1];

		if (strlen(w->stem) == nst && memcmp(w->stem, stem, nst) == 0)
			return v->slot[k] - 1;
	}
	if (v->n == v->cap) {
		v->cap = v->cap * 2 + 1024;
		v->w = xrealloc(v->w, v->cap * sizeof *v->w);
	}
	struct word *w = &v->w[v->n];

	memset(w, 0, sizeof *w);
	memcpy(w->stem, stem, nst);
	memcpy(w->surf, surf, ns);
	v->slot[k] = (uint32_t)(v->n + 1);
	return (uint32_t)v->n++;
}

/* ---- pair counts: (a, b) a < b -> count -------------------------------- */

struct pairs {
	uint64_t *key;             /* (a + 1) << 32 | (b + 1); 0 = empty */
	uint32_t *count;
	size_t n, cap;             /* cap a power of two */
};

static void pairs_grow(struct pairs *p)
{
	size_t cap = p->cap ? p->cap * 2 : 1 << 14;
	uint64_t *key = xcalloc(cap, sizeof *key);
	uint32_t *count = xcalloc(cap, sizeof *count);

	for (size_t i = 0; i < p->cap; i++) {
		if (!p->key[i])
			continue;
		size_t k = (p->key[i] * 0x9e3779b97f4a7c15ULL) >> 20 & (cap - 1);

		while (key[k])
			k = (k + 1) & (cap - 1);
		key[k] = p->key[i];
		count[k] = p->count[i];
	}
	free(p->key);
	free(p->count);
	p->key = key;
	p->count = count;
	p->cap = cap;
}

static void pairs_add(struct pairs *p, uint32_t a, uint32_t b)
{
	uint64_t key = (uint64_t)(a + 1) << 32 | (b + 1);

	if ((p->n + 1) * 2 > p->cap)
		pairs_grow(p);
	size_t k = (key * 0x9e3779b97f4a7c15ULL) >> 20 & (p->cap - 1);

	while (p->key[k] && p->key[k] != key)
		k = (k + 1) & (p->cap - 1);
	if (!p->key[k]) {
		p->key[k] = key;
		p->n++;
	}
	p->count[k]++;
}

/* ---- the words of every memory --------------------------------------- */

struct doc_words {
	struct vocab *v;
	uint32_t ids[ASSOC_MAX_DOC_TERMS];
	size_t n;
};

static bool plain_word(const char *surf, size_t ns)
{
	bool letter = false;

	for (size_t i = 0; i < ns; i++)
		letter = letter || (surf[i] >= 'a' && surf[i] <= 'z') || (unsigned char)surf[i] >= 0x80;
	return ns >= 2 && letter;
}

static void doc_word(const char *surf, size_t ns, const char *stem, size_t nst, void *payload)
{
	struct doc_words *d = payload;

	if (d->n == ASSOC_MAX_DOC_TERMS || !plain_word(surf, ns))
		return;
	uint32_t id = vocab_id(d->v, surf, ns, stem, nst);

	for (size_t i = 0; i < d->n; i++) {
		if (d->ids[i] == id)
			return;
	}
	d->ids[d->n++] = id;
}

static int id_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Every active memory's distinct word ids, sorted, one run per memory:
 * ids[start[i] .. start[i + 1]). */
struct corpus {
	uint32_t *ids;
	size_t nids, cap;
	size_t *start;
	size_t ndocs, dcap;
};

static int read_corpus(struct corpus *c, struct vocab *v, struct memory *m)
{
	struct db_stmt *s = NULL;
	struct buf text = BUF_INIT;
	int step, rc = 0;

	/* (a sample of a big store tells the same associations, in a fifth of
	 * the time and memory at 100K) */
	if (mem_prepare(&s, m, "SELECT content, context, tags FROM memories WHERE archived_at IS NULL "
			"ORDER BY seq DESC LIMIT 20000") < 0)
		return -1;
	while ((step = db_step(s)) == DB_ROW) {
		struct doc_words d = { .v = v };

		buf_reset(&text);
		for (int k = 0; k < 3; k++)
			buf_addf(&text, "%s\n", db_col_text(s, k));
		if (mem_stems(m, text.buf, text.len, false, doc_word, &d) < 0) {
			rc = -1;
			break;
		}
		qsort(d.ids, d.n, sizeof *d.ids, id_cmp);
		if (c->ndocs + 2 > c->dcap) {
			c->dcap = c->dcap * 2 + 256;
			c->start = xrealloc(c->start, c->dcap * sizeof *c->start);
		}
		if (c->nids + d.n > c->cap) {
			c->cap = (c->cap + d.n) * 2;
			c->ids = xrealloc(c->ids, c->cap * sizeof *c->ids);
		}
		c->start[c->ndocs++] = c->nids;
		memcpy(c->ids + c->nids, d.ids, d.n * sizeof *d.ids);
		c->nids += d.n;
		for (size_t i = 0; i < d.n; i++)
			v->w[d.ids[i]].df++;
	}
	if (rc == 0 && step != DB_DONE)
		rc = mem_fail(m, "cannot read memories for the word associations");
	if (c->start)
		c->start[c->ndocs] = c->nids;
	db_finalize(s);
	buf_release(&text);
	return rc;
}

/* ---- the best associates of each word -------------------------------- */

struct assoc {
	uint32_t a, b;
	double w;
};

static int assoc_cmp(const void *x, const void *y)
{
	const struct assoc *p = x, *q = y;

	if (p->a != q->a)
		return (p->a > q->a) - (p->a < q->a);
	if (p->w != q->w)
		return p->w < q->w ? 1 : -1;
	return (p->b > q->b) - (p->b < q->b);
}

/* Both directions of every pair worth keeping, into *out (malloc'd). */
static size_t score_pairs(struct assoc **out, const struct pairs *p, const struct vocab *v,
			  double ndocs)
{
	struct assoc *as = xcalloc(2 * p->n + 1, sizeof *as);
	size_t n = 0;

	for (size_t i = 0; i < p->cap; i++) {
		if (!p->key[i] || p->count[i] < ASSOC_MIN_PAIR)
			continue;
		uint32_t a = (uint32_t)(p->key[i] >> 32) - 1, b = (uint32_t)(p->key[i] & 0xffffffffu) - 1;
		double c = p->count[i];
		double pmi = log(c * ndocs / ((double)v->w[a].df * (double)v->w[b].df));

		if (pmi <= 0)
			continue;
		double w = pmi * c / (c + 1);

		as[n++] = (struct assoc){ a, b, w };
		as[n++] = (struct assoc){ b, a, w };
	}
	qsort(as, n, sizeof *as, assoc_cmp);
	*out = as;
	return n;
}

static int store_assoc(struct memory *m, const struct assoc *as, size_t n, const struct vocab *v)
{
	struct db_stmt *ins = NULL, *st = NULL;
	int rc = -1;

	/* (on PostgreSQL the tables come from schemas/pg/004-memory.sql; the
	 * lock makes a second process rebuilding at once wait for the first) */
	if (store_exec(m->st, m->pg ? "LOCK TABLE memory_assoc_stamp IN EXCLUSIVE MODE; "
		       "DELETE FROM memory_assoc; DELETE FROM memory_assoc_stamp" :
		       "CREATE TABLE IF NOT EXISTS memory_assoc (stem TEXT NOT NULL, "
		       "other TEXT NOT NULL, surf TEXT NOT NULL, weight REAL NOT NULL); "
		       "CREATE INDEX IF NOT EXISTS memory_assoc_stem ON memory_assoc (stem); "
		       "CREATE TABLE IF NOT EXISTS memory_assoc_stamp (memories INTEGER NOT NULL); "
		       "DELETE FROM memory_assoc; DELETE FROM memory_assoc_stamp") < 0) {
		mem_fail(m, "cannot make the word association table");
		return -1;
	}
	if (mem_prepare(&ins, m, "INSERT INTO memory_assoc (stem, other, surf, weight) VALUES (?, ?, ?, ?)") < 0 ||
	    mem_prepare(&st, m, "INSERT INTO memory_assoc_stamp (memories) SELECT count(*) FROM "
			"memories WHERE archived_at IS NULL") < 0)
		goto out;
	for (size_t i = 0, kept = 0; i < n; i++) {
		kept = i && as[i].a == as[i - 1].a ? kept + 1 : 0;
		if (kept >= ASSOC_PER_WORD)
			continue;
		db_reset(ins);
		db_bind_text(ins, 1, v->w[as[i].a].stem);
		db_bind_text(ins, 2, v->w[as[i].b].stem);
		db_bind_text(ins, 3, v->w[as[i].b].surf);
		db_bind_double(ins, 4, as[i].w);
		if (db_step(ins) != DB_DONE) {
			mem_fail(m, "cannot store the word associations");
			goto out;
		}
	}
	if (db_step(st) != DB_DONE) {
		mem_fail(m, "cannot store the word associations");
		goto out;
	}
	rc = 0;
out:
	db_finalize(ins);
	db_finalize(st);
	return rc;
}

int mem_assoc_build(struct memory *m)
{
	struct vocab v = { 0 };
	struct corpus c = { 0 };
	struct pairs p = { 0 };
	struct assoc *as = NULL;
	size_t n;
	int rc = -1;

	if (store_readonly(m->st))
		return 0;
	if (mem_begin(m) < 0)
		return -1;
	if (read_corpus(&c, &v, m) < 0)
		goto fail;
	long common = (long)c.ndocs / 10 > ASSOC_COMMON_MIN ? (long)c.ndocs / 10 : ASSOC_COMMON_MIN;

	for (size_t i = 0; i < v.n; i++)
		v.w[i].use = v.w[i].df >= ASSOC_MIN_PAIR && v.w[i].df <= common;
	for (size_t d = 0; d < c.ndocs; d++) {
		const uint32_t *ids = c.ids + c.start[d];
		size_t k = c.start[d + 1] - c.start[d];

		for (size_t i = 0; i < k; i++) {
			if (!v.w[ids[i]].use)
				continue;
			for (size_t j = i + 1; j < k; j++) {
				if (v.w[ids[j]].use)
					pairs_add(&p, ids[i], ids[j]);
			}
		}
	}
	n = score_pairs(&as, &p, &v, (double)c.ndocs);
	if (store_assoc(m, as, n, &v) < 0)
		goto fail;
	if (mem_commit(m) < 0)
		goto out;
	m->assoc_checked = m->assoc_ready = true;
	rc = 0;
	goto out;
fail:
	mem_rollback(m);
out:
	free(as);
	free(p.key);
	free(p.count);
	free(c.ids);
	free(c.start);
	free(v.w);
	free(v.slot);
	return rc;
}

int mem_assoc_sync(struct memory *m, size_t memories)
{
	struct db_stmt *s = NULL;
	sqlite3_stmt *lite = NULL;
	long built = -1;

	if (m->assoc_checked)
		return 0;
	m->assoc_checked = true;
	/* (no table yet on SQLite: a failed prepare, nothing said) */
	if (m->pg) {
		if (db_prepare(&s, m->st, "SELECT memories FROM memory_assoc_stamp") < 0)
			return -1;
		if (db_step(s) == DB_ROW)
			built = (long)db_col_int64(s, 0);
		db_finalize(s);
	} else if (sqlite3_prepare_v2(store_db(m->st), "SELECT memories FROM memory_assoc_stamp", -1,
				      &lite, NULL) == SQLITE_OK && sqlite3_step(lite) == SQLITE_ROW) {
		built = (long)sqlite3_column_int64(lite, 0);
	}
	sqlite3_finalize(lite);
	long diff = built - (long)memories, slack = built / 8 > 16 ? built / 8 : 16;

	m->assoc_ready = built >= 0;
	if (built >= 0 && diff <= slack && -diff <= slack)
		return 0;
	/* the caller's transaction is open: the stale table (or none) serves,
	 * the next handle rebuilds it */
	if (db_in_transaction(m->st))
		return 0;
	return mem_assoc_build(m);
}

/*
 * The words associated with at least ASSOC_MIN_SUPPORT of the query's
 * (stems[0..n), weights idf[]): each scores the sum over the query's words
 * of idf * weight; the query's own words left out; the best max, best
 * first.
 */
int mem_assoc_expand(struct mem_assoc **out, size_t *count, struct memory *m, const char *const *stems,
		     const double *idf, size_t n, size_t max)
{
	struct mem_assoc *a = NULL;
	size_t na = 0, cap = 0;
	struct db_stmt *s;

	*out = NULL;
	*count = 0;
	if (!m->assoc_ready)
		return 0;          /* no table (a read-only store never built one) */
	if (mem_cached(&s, m, MS_ASSOC, "SELECT other, surf, weight FROM memory_assoc WHERE stem = ?") < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (idf[i] <= 0)
			continue;
		db_reset(s);
		db_bind_text(s, 1, stems[i]);
		while (db_step(s) == DB_ROW) {
			const char *o = db_col_text(s, 0);
			const char *surf = db_col_text(s, 1);
			bool mine = false;
			size_t k;

			for (size_t j = 0; j < n && !mine; j++)
				mine = strcmp(stems[j], o) == 0;
			if (mine || strlen(o) >= MEM_TERM_LEN || strlen(surf) >= MEM_TERM_LEN)
				continue;
			for (k = 0; k < na && strcmp(a[k].stem, o); k++)
				;
			if (k == na) {
				if (na == cap) {
					cap = cap * 2 + 16;
					a = xrealloc(a, cap * sizeof *a);
				}
				memset(&a[na], 0, sizeof a[na]);
				snprintf(a[na].stem, sizeof a[na].stem, "%s", o);
				snprintf(a[na].surf, sizeof a[na].surf, "%s", surf);
				na++;
			}
			a[k].score += idf[i] * db_col_double(s, 2);
			a[k].support++;
		}
	}
	db_reset(s);
	/* one query word's associates are that word's context (its project,
	 * its stack); what two of them share is about the query */
	size_t kept = 0;

	for (size_t i = 0; i < na; i++) {
		if (a[i].support >= ASSOC_MIN_SUPPORT)
			a[kept++] = a[i];
	}
	na = kept;
	for (size_t i = 0; i < na; i++) {          /* best first (few: a selection) */
		size_t best = i;

		for (size_t k = i + 1; k < na; k++) {
			if (a[k].score > a[best].score)
				best = k;
		}
		struct mem_assoc t = a[i];

		a[i] = a[best];
		a[best] = t;
		if (i + 1 >= max)
			break;
	}
	*out = a;
	*count = na < max ? na : max;
	return 0;
}
