/*
 * memory_recall.c - recall (vector candidates + FTS5 candidates, scored
 * exactly) and the relationships of a new memory (memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

int mem_filter_stmt(sqlite3_stmt **out, struct memory *m, const struct memory_filter *f);

/* ---- negation, for "contradicts" ------------------------------------- */

static const char *const negations[] = {
	"not", "never", "no", "avoid", "don", "doesn", "didn", "isn", "shouldn", "mustn",
	"cannot", "without", "nor", "won", "wouldn", "aren", "disable", "disallow", "forbid", NULL
};

static void neg_word(const char *w, size_t n, void *payload)
{
	bool *neg = payload;

	for (int i = 0; negations[i] && !*neg; i++)
		*neg = strlen(negations[i]) == n && memcmp(negations[i], w, n) == 0;
}

bool mem_negated(const char *text)
{
	bool neg = false;

	mem_words(text, strlen(text), neg_word, &neg);
	return neg;
}

/* ---- FTS5 candidates ------------------------------------------------- */

#define MAX_TERMS 16
#define USE_TERMS 8
#define DF_BUDGET 1000

struct terms {
	char w[MAX_TERMS][64];
	long df[MAX_TERMS];
	size_t n;
};

static void add_term(struct terms *t, const char *w, size_t n)
{
	if (!n || n >= 64 || t->n >= MAX_TERMS || mem_stopword(w, n))
		return;
	for (size_t i = 0; i < t->n; i++) {
		if (strlen(t->w[i]) == n && memcmp(t->w[i], w, n) == 0)
			return;
	}
	memcpy(t->w[t->n], w, n);
	t->w[t->n][n] = 0;
	t->n++;
}

/* FTS5's unicode61 splits at '_' too. */
static void term_word(const char *w, size_t n, void *payload)
{
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i == n || w[i] == '_') {
			add_term(payload, w + start, i - start);
			start = i + 1;
		}
	}
}

/*
 * The MATCH expression for text: its words that are in the index, rarest
 * first, leaving out the most common ones (ranked FTS5 costs ~1.5 us per
 * matching row, so a very common word would cost more than the whole
 * vector scan).  Empty when no word is useful.
 */
static int fts_match(struct buf *out, struct memory *m, const char *text)
{
	struct terms t = { .n = 0 };
	sqlite3_stmt *s;
	long budget = 0;
	size_t used = 0;

	buf_reset(out);
	mem_words(text, strlen(text), term_word, &t);
	if (!t.n)
		return 0;
	/* Document frequencies, counted up to a cap by an unranked lookup
	 * (fts5vocab has no index on term in SQLite 3.40: it scans). */
	if (mem_cached(&s, m, MS_VOCAB, "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE "
		       "memories_fts MATCH ? LIMIT ?)") < 0)
		return -1;
	for (size_t i = 0; i < t.n; i++) {
		char q[70];

		snprintf(q, sizeof q, "\"%s\"", t.w[i]);
		sqlite3_reset(s);
		sqlite3_bind_text(s, 1, q, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(s, 2, DF_BUDGET + 1);
		t.df[i] = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	}
	sqlite3_reset(s);
	for (size_t i = 1; i < t.n; i++) {        /* insertion sort by df */
		for (size_t j = i; j > 0 && t.df[j] < t.df[j - 1]; j--) {
			char w[64];
			long d = t.df[j];

			memcpy(w, t.w[j], 64);
			memcpy(t.w[j], t.w[j - 1], 64);
			memcpy(t.w[j - 1], w, 64);
			t.df[j] = t.df[j - 1];
			t.df[j - 1] = d;
		}
	}
	for (size_t i = 0; i < t.n && used < USE_TERMS; i++) {
		if (!t.df[i])
			continue;
		if (used && budget + t.df[i] > DF_BUDGET)
			break;
		if (t.df[i] > DF_BUDGET)
			break;     /* too common to rank cheaply: the vectors cover it */
		budget += t.df[i];
		buf_addf(out, "%s\"%s\"", used ? " OR " : "", t.w[i]);
		used++;
	}
	return 0;
}

struct cand {
	int64_t seq;
	float cos;
	double bm25;
	bool has_cos;
};

static int cand_find(struct cand *c, size_t n, int64_t seq)
{
	for (size_t i = 0; i < n; i++) {
		if (c[i].seq == seq)
			return (int)i;
	}
	return -1;
}

static int fts_candidates(struct cand **c, size_t *n, size_t *cap, double *best,
			  struct memory *m, const char *text, size_t limit)
{
	struct buf match = BUF_INIT;
	sqlite3_stmt *s = NULL;
	int rc = 0, step;

	*best = 0;
	if (fts_match(&match, m, text) < 0) {
		rc = -1;
		goto out;
	}
	if (!match.len)
		goto out;
	if (mem_cached(&s, m, MS_FTS, "SELECT rowid, -bm25(memories_fts, 1.0, 0.5, 0.8) AS score "
		       "FROM memories_fts WHERE memories_fts MATCH ? ORDER BY score DESC LIMIT ?") < 0) {
		s = NULL;
		rc = -1;
		goto out;
	}
	sqlite3_bind_text(s, 1, match.buf, (int)match.len, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)limit);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t seq = sqlite3_column_int64(s, 0);
		double score = sqlite3_column_double(s, 1);
		int i = cand_find(*c, *n, seq);

		if (score > *best)
			*best = score;
		if (i >= 0) {
			(*c)[i].bm25 = score;
			continue;
		}
		if (*n == *cap) {
			*cap = *cap * 2 + 16;
			*c = xrealloc(*c, *cap * sizeof **c);
		}
		(*c)[(*n)++] = (struct cand){ .seq = seq, .bm25 = score };
	}
	if (step != SQLITE_DONE)
		rc = mem_fail(m, "cannot search memories for '%s'", match.buf);
out:
	if (s)
		sqlite3_reset(s);
	buf_release(&match);
	return rc;
}

/* ---- recall ---------------------------------------------------------- */

struct scored {
	int64_t seq;
	jv mem;
	double rel, sim, rec, conf, cos, lex;
};

static int scored_cmp(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	return x->rel < y->rel ? 1 : x->rel > y->rel ? -1 : 0;
}

static int mem_get_seq(jv *out, struct memory *m, int64_t seq)
{
	sqlite3_stmt *s;
	int rc = 0;

	*out = jv_null();
	if (mem_cached(&s, m, MS_GET_SEQ, "SELECT " MEM_COLS " FROM memories WHERE seq = ?") < 0)
		return -1;
	sqlite3_bind_int64(s, 1, seq);
	if (sqlite3_step(s) == SQLITE_ROW)
		*out = mem_row_json(s, 0);
	else
		rc = mem_fail(m, "cannot read memory %lld", (long long)seq);
	sqlite3_reset(s);
	return rc;
}

static int touch(struct memory *m, const struct scored *r, size_t n, int64_t now)
{
	sqlite3_stmt *s;
	int rc = 0;

	if (!n)
		return 0;
	if (mem_begin(m) < 0)
		return -1;
	if (mem_cached(&s, m, MS_TOUCH, "UPDATE memories SET access_count = access_count + 1, "
		       "last_accessed = max(last_accessed, ?) WHERE id = ?") < 0) {
		mem_rollback(m);
		return -1;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, now);
		store_bind_text(s, 2, json_get_str(r[i].mem, "id"));
		if (sqlite3_step(s) != SQLITE_DONE)
			rc = mem_fail(m, "cannot record an access");
	}
	sqlite3_reset(s);
	if (rc < 0) {
		mem_rollback(m);
		return -1;
	}
	return mem_commit(m);
}

static bool filtered(const struct memory_filter *f)
{
	return f->type != MEMORY_ANY || f->ntags || f->min_confidence > 0;
}

int memory_recall(jv *out, struct memory *m, const struct memory_query *q)
{
	size_t limit = q->filter.limit > 0 ? (size_t)q->filter.limit : 10;
	size_t want = limit * 10 < 100 ? 100 : limit * 10;
	struct cand *c = NULL;
	struct vhit *hits = NULL;
	struct scored *res = NULL;
	size_t nc = 0, cap = 0, nh = 0, nres = 0, dim = 0;
	float *qv = NULL;
	sqlite3_stmt *fs = NULL;
	double best = 0;
	int64_t now = memory_now(m);
	int rc = -1;

	*out = jv_array();
	if (!q->text)
		return forge_error("recall needs a query text");
	if (filtered(&q->filter))
		want *= 4;
	if (q->embedding) {
		dim = q->embedding_dim;
		qv = xcalloc(dim + 1, sizeof *qv);
		memcpy(qv, q->embedding, dim * sizeof *qv);
	} else if (memory_embed(&qv, &dim, m, q->text) < 0) {
		goto out;
	}
	if (vindex_sync(m, NULL) < 0 ||
	    vindex_search(&hits, &nh, m, qv, dim, q->filter.type, want) < 0)
		goto out;
	cap = nh + want + 16;
	c = xcalloc(cap, sizeof *c);
	for (size_t i = 0; i < nh; i++)
		c[nc++] = (struct cand){ .seq = hits[i].seq, .cos = hits[i].cos, .has_cos = true };
	if (fts_candidates(&c, &nc, &cap, &best, m, q->text, want) < 0)
		goto out;
	for (size_t i = 0; i < nc; i++) {
		if (!c[i].has_cos)
			c[i].has_cos = vindex_cosine(&c[i].cos, m, c[i].seq, qv, dim);
	}
	if (mem_filter_stmt(&fs, m, &q->filter) < 0)
		goto out;
	res = xcalloc(nc + 1, sizeof *res);
	for (size_t i = 0; i < nc; i++) {
		int step;

		sqlite3_reset(fs);
		sqlite3_bind_int64(fs, 3, c[i].seq);
		step = sqlite3_step(fs);
		if (step == SQLITE_DONE)
			continue;
		if (step != SQLITE_ROW) {
			mem_fail(m, "cannot read memories");
			goto out;
		}
		struct scored *r = &res[nres++];

		r->seq = c[i].seq;
		r->cos = c[i].has_cos && c[i].cos > 0 ? (c[i].cos > 1 ? 1 : c[i].cos) : 0;
		r->lex = best > 0 ? c[i].bm25 / best : 0;
		r->sim = (1 - m->lexw) * r->cos + m->lexw * r->lex;
		r->rec = memory_recency(sqlite3_column_int64(fs, 1), now);
		r->conf = sqlite3_column_double(fs, 0);
		r->rel = memory_relevance(r->sim, r->rec, r->conf);
		if (r->sim <= 0)
			nres--;      /* nothing in common with the query */
	}
	sqlite3_reset(fs);
	qsort(res, nres, sizeof *res, scored_cmp);
	if (nres > limit)
		nres = limit;
	for (size_t i = 0; i < nres; i++) {
		if (mem_get_seq(&res[i].mem, m, res[i].seq) < 0)
			goto out;
	}
	if (!q->no_touch && !store_readonly(m->st) && touch(m, res, nres, now) < 0)
		goto out;
	for (size_t i = 0; i < nres; i++) {
		jv o = jv_object();

		o = json_set(o, "memory", res[i].mem);
		res[i].mem = jv_invalid();
		o = json_set(o, "relevance", jv_number(round(res[i].rel * 1e6) / 1e6));
		o = json_set(o, "similarity", jv_number(round(res[i].sim * 1e6) / 1e6));
		o = json_set(o, "recency", jv_number(round(res[i].rec * 1e6) / 1e6));
		o = json_set(o, "confidence", jv_number(res[i].conf));
		o = json_set(o, "cosine", jv_number(round(res[i].cos * 1e6) / 1e6));
		o = json_set(o, "lexical", jv_number(round(res[i].lex * 1e6) / 1e6));
		*out = jv_array_append(*out, o);
	}
	nres = 0;
	rc = 0;
out:
	for (size_t i = 0; i < nres; i++)
		jv_free(res[i].mem);
	free(res);
	sqlite3_finalize(fs);
	free(c);
	free(hits);
	free(qv);
	return rc;
}

/* ---- relationships of a new memory ----------------------------------- */

#define RELATE_CANDIDATES 32

int mem_find_related(jv *out, struct memory *m, const float *vec, size_t dim, const char *content)
{
	struct vhit *hits = NULL;
	size_t nh = 0, k = 0;
	sqlite3_stmt *s = NULL;
	struct buf tb[RELATE_CANDIDATES];
	const char *texts[RELATE_CANDIDATES];
	size_t lens[RELATE_CANDIDATES];
	char ids[RELATE_CANDIDATES][ULID_LEN + 1];
	bool neg[RELATE_CANDIDATES];
	float *vs = NULL;
	size_t d = 0;
	int rc = -1;

	*out = jv_array();
	for (int i = 0; i < RELATE_CANDIDATES; i++)
		buf_init(&tb[i], 0);
	if (vindex_sync(m, NULL) < 0 ||
	    vindex_search(&hits, &nh, m, vec, dim, MEMORY_ANY, RELATE_CANDIDATES) < 0)
		goto out;
	if (mem_prepare(&s, m, "SELECT id, content, context, tags FROM memories WHERE seq = ? "
			"AND archived_at IS NULL") < 0)
		goto out;
	/* The int8 cosine is within ~1%: look again at everything near the threshold. */
	for (size_t i = 0; i < nh && hits[i].cos > MEMORY_RELATED_ABOVE - 0.03; i++) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, hits[i].seq);
		if (sqlite3_step(s) != SQLITE_ROW)
			continue;
		snprintf(ids[k], sizeof ids[k], "%s", (const char *)sqlite3_column_text(s, 0));
		mem_embed_text(&tb[k], (const char *)sqlite3_column_text(s, 1),
			       (const char *)sqlite3_column_text(s, 2),
			       (const char *)sqlite3_column_text(s, 3));
		neg[k] = mem_negated((const char *)sqlite3_column_text(s, 1));
		texts[k] = tb[k].buf;
		lens[k] = tb[k].len;
		k++;
	}
	if (k && mem_embed_many(&vs, &d, m, texts, lens, k) < 0)
		goto out;
	bool mine = mem_negated(content);

	for (size_t i = 0; i < k && d == dim; i++) {
		double cos = memory_cosine(vec, vs + i * d, d);

		if (cos <= MEMORY_RELATED_ABOVE)
			continue;
		jv r = jv_object();

		r = json_set(r, "id", jv_string(ids[i]));
		r = json_set(r, "similarity", jv_number(round(cos * 1e6) / 1e6));
		r = json_set(r, "kind", jv_string(cos > MEMORY_SIMILAR_ABOVE ? "similar" : "related"));
		r = json_set(r, "contradicts", jv_bool(neg[i] != mine));
		*out = jv_array_append(*out, r);
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	for (int i = 0; i < RELATE_CANDIDATES; i++)
		buf_release(&tb[i]);
	free(vs);
	free(hits);
	return rc;
}
