/*
 * memory_recall.c - recall (vector candidates + FTS5 candidates, scored
 * exactly) and the relationships of a new memory (memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

int mem_filter_stmt(struct db_stmt **out, struct memory *m, const struct memory_filter *f);
void mem_filter_bind(struct db_stmt *s, const struct memory_filter *f);

/* ---- negation, for "contradicts" ------------------------------------- */

static const char *const negations[] = {
	"not", "never", "no", "avoid", "don", "doesn", "didn", "isn", "shouldn", "mustn",
	"cannot", "without", "nor", "won", "wouldn", "aren", "disable", "disallow", "forbid", NULL
};

#define SAID_WORDS 256   /* a lesson's words; a longer text is not judged */

/* What a text says, for mem_contradicts: whether it holds a negation word,
 * and its other words' hashes (each once). */
struct said {
	uint64_t h[SAID_WORDS];
	bool num[SAID_WORDS];    /* the word is a number (30, 300, 1.5's 1 and 5) */
	size_t n;
	bool neg, overflow;
};

static bool negation(const char *w, size_t n)
{
	for (int i = 0; negations[i]; i++)
		if (strlen(negations[i]) == n && memcmp(negations[i], w, n) == 0)
			return true;
	return false;
}

static void said_word(const char *w, size_t n, void *payload)
{
	struct said *sd = payload;
	uint64_t h = 14695981039346656037ULL;   /* FNV-1a */

	if (negation(w, n)) {
		sd->neg = true;
		return;
	}
	/* (stop words, and one letter: the t of don't; a digit is a number) */
	if ((n < 2 && !(w[0] >= '0' && w[0] <= '9')) || mem_stopword(w, n))
		return;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)w[i]) * 1099511628211ULL;
	for (size_t i = 0; i < sd->n; i++)
		if (sd->h[i] == h)
			return;
	if (sd->n == SAID_WORDS)
		sd->overflow = true;
	else {
		sd->num[sd->n] = w[0] >= '0' && w[0] <= '9';
		sd->h[sd->n++] = h;
	}
}

static void said_of(struct said *sd, const char *text)
{
	memset(sd, 0, sizeof *sd);
	mem_words(text, strlen(text), said_word, sd);
}

static bool said_has(const struct said *sd, uint64_t h)
{
	for (size_t i = 0; i < sd->n; i++)
		if (sd->h[i] == h)
			return true;
	return false;
}

/* Whether text b says what a (its words) says, negated: one of them holds
 * a negation word and the other none, and their other words differ by at
 * most one in five.  A negation word alone is no contradiction: "they need
 * no network access" contradicts nothing "they need a C compiler" says. */
static bool contradicts(const struct said *a, const char *b)
{
	struct said sb;
	size_t common = 0, diff, all;

	said_of(&sb, b);
	if (a->neg == sb.neg || a->overflow || sb.overflow)
		return false;
	for (size_t i = 0; i < sb.n; i++)
		common += said_has(a, sb.h[i]);
	diff = a->n + sb.n - 2 * common;
	all = a->n + sb.n - common;
	return all > 0 && diff * 5 <= all;
}

/* The words of a that b lacks: *only, and whether one of them is a number. */
static size_t said_only(bool *number, const struct said *a, const struct said *b)
{
	size_t only = 0;

	for (size_t i = 0; i < a->n; i++) {
		if (!said_has(b, a->h[i])) {
			only++;
			*number = *number || a->num[i];
		}
	}
	return only;
}

bool mem_same_fact(const char *a, const char *b)
{
	struct said sa, sb;
	bool number = false;
	size_t only_a, only_b;

	said_of(&sa, a);
	said_of(&sb, b);
	only_a = said_only(&number, &sa, &sb);
	only_b = said_only(&number, &sb, &sa);
	/* "wait 30 seconds" / "wait 300 seconds", "use tabs" / "do not use
	 * tabs", "indent with tabs" / "indent with spaces": another fact */
	return !number && sa.neg == sb.neg && (only_a == 0 || only_b == 0);
}

/* ---- terms ----------------------------------------------------------- */

#define TERM_LEN MEM_TERM_LEN
#define MAX_TERMS 16
#define USE_TERMS 16
#define DF_BUDGET 2000       /* rows the word list ranks (see fts_match) */
#define DF_TERM_MAX 2000
#define MIN_TERMS 3
#define PG_TERMS 32          /* terms of a list on PostgreSQL, at most (fts_sql_pg) */

struct term {
	char surf[TERM_LEN];     /* a form as written (what MATCH is given) */
	char stem[TERM_LEN];     /* the form FTS5 indexes */
	long df;                 /* documents with it, counted up to a cap + 1 */
	double w;                /* expansion: its weight */
	int tf;                  /* expansion: occurrences in the current document */
};

struct terms {
	struct term *t;
	size_t n, cap, max;
};

static void terms_release(struct terms *t)
{
	free(t->t);
	memset(t, 0, sizeof *t);
}

static struct term *term_find(const struct terms *t, const char *stem, size_t n)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strlen(t->t[i].stem) == n && memcmp(t->t[i].stem, stem, n) == 0)
			return &t->t[i];
	}
	return NULL;
}

static struct term *term_add(struct terms *t, const char *surf, size_t ns, const char *stem,
			     size_t nst)
{
	struct term *x = term_find(t, stem, nst);

	if (x || (t->max && t->n >= t->max))
		return x;
	if (t->n == t->cap) {
		t->cap = t->cap * 2 + 16;
		t->t = xrealloc(t->t, t->cap * sizeof *t->t);
	}
	x = &t->t[t->n++];
	memset(x, 0, sizeof *x);
	memcpy(x->surf, surf, ns);
	memcpy(x->stem, stem, nst);
	return x;
}

static void query_term(const char *surf, size_t ns, const char *stem, size_t nst, void *payload)
{
	term_add(payload, surf, ns, stem, nst);
}


/* Document frequencies, counted up to cap + 1: on SQLite by forge_df, one
 * query for all the terms whose FTS5 function walks each term's rows
 * (count_df_fts5; one "SELECT count(*) ... LIMIT" a term cost ~1M more
 * instructions at 100K memories; fts5vocab has no index on term in SQLite
 * 3.40: it scans).  On
 * PostgreSQL the same count through the GIN index of memories.tsv, the
 * term as written made a tsquery by the server (phraseto_tsquery: no
 * syntax of the user's reaches the tsquery parser; a stopword counts 0). */
static int rank_init(struct memory *m);
static int count_df_fts5(struct memory *m, struct term *t, size_t n, long cap);

static int count_df(struct memory *m, struct term *t, size_t n, long cap)
{
	struct db_stmt *s;

	if (!m->pg)
		return count_df_fts5(m, t, n, cap);
	/* (PostgreSQL: a word its configuration leaves out, a stopword, is
	 * counted as in more rows than the cap, as common words are: then it
	 * is no term of a list and tells nothing; -1 from the query) */
	if (mem_cached(&s, m, MS_VOCAB, "SELECT CASE WHEN numnode(t.q) = 0 THEN -1 ELSE "
		       "(SELECT count(*) FROM (SELECT 1 FROM memories WHERE tsv @@ t.q LIMIT ?2) x) END "
		       "FROM phraseto_tsquery('english', CAST(?1 AS TEXT)) AS t (q)") < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		db_reset(s);
		db_bind_text(s, 1, t[i].surf);
		db_bind_int64(s, 2, (int64_t)cap + 1);
		t[i].df = db_step(s) == DB_ROW ? db_col_int64(s, 0) : 0;
		if (t[i].df < 0)
			t[i].df = cap + 1;
	}
	db_reset(s);
	return 0;
}

static int df_cmp(const void *a, const void *b)
{
	const struct term *x = a, *y = b;

	return (x->df > y->df) - (x->df < y->df);
}

/*
 * The MATCH expression for terms (document frequencies known): the ones in
 * the index, rarest first, while the rows they match stay within `budget`
 * (ranked FTS5 costs ~1.5 us per matching row), but always the MIN_TERMS
 * rarest; a word in more than DF_TERM_MAX memories is left out (it tells
 * little, and the vectors cover it) -- unless `common` and no rarer word is
 * there: then the rarest of them alone (the vectors only re-rank what the
 * word lists find, so a query of common words found nothing at all; this
 * ranks that one term's rows, ~1.5 us each; not a stopword).  Empty when no term is
 * useful.  Sorts t.  *dfs: the terms' document frequencies, int64_t each in
 * MATCH's order (exact, each at most DF_TERM_MAX, below count_df's cap;
 * the common term's is the cap + 1: at least that many).  On PostgreSQL (pg) the same terms, a line each: "DF TERM\n" (what
 * fts_list_pg() reads).
 */
static void fts_match(struct buf *out, struct buf *dfs, struct terms *t, size_t use, long budget,
		      bool pg, bool common)
{
	long rows = 0;
	size_t used = 0;

	buf_reset(out);
	buf_reset(dfs);
	if (t->n)
		qsort(t->t, t->n, sizeof *t->t, df_cmp);
	for (size_t i = 0; i < t->n && used < use; i++) {
		if (!t->t[i].df)
			continue;
		if (t->t[i].df > DF_TERM_MAX && (used || !common))
			break;
		/* (the common words count only up to the cap: all alike; a
		 * stopword among them is the least telling) */
		if (t->t[i].df > DF_TERM_MAX && mem_stopword(t->t[i].surf, strlen(t->t[i].surf)))
			continue;
		if (used >= MIN_TERMS && rows + t->t[i].df > budget)
			break;
		int64_t df = t->t[i].df;

		rows += t->t[i].df;
		buf_add(dfs, &df, sizeof df);
		if (pg)
			buf_addf(out, "%ld %s\n", t->t[i].df, t->t[i].surf);
		else
			buf_addf(out, "%s\"%s\"", used ? " OR " : "", t->t[i].surf);
		used++;
	}
}

/* ---- candidates and their ranks ---------------------------------------- */

enum { L_LEX, L_VEC, L_CON, L_ASSOC, L_PRF, NLISTS };

struct cand {
	int64_t seq;
	double bm25;             /* in the lexical list; 0 = not in it */
	float cos;
	bool has_cos;
	bool pass;               /* passes the query's filter */
	int rank[NLISTS];        /* 1-based among the candidates that pass; 0 = absent */
	double conf, rec, fused, rel;
	double cover;            /* a result's coverage() */
	jv mem;
	/* which of the query's terms it holds (memory_hits), once read: the
	 * concept weight reads the top lexical ones, the results' coverage
	 * reads them again */
	bool hits_known;
	bool hit[MAX_TERMS];
};

struct cands {
	struct cand *c;
	size_t n, cap;
	struct db_stmt *filter;  /* "SELECT confidence, last_accessed, id" of a passing row */
	const struct memory_filter *f;   /* its bindings (db_reset clears them) */
	int count[NLISTS];       /* memories ranked in each list so far */
	int last_rank[NLISTS];   /* the rank and score of the last one: */
	double last_score[NLISTS];   /* equal scores share a rank */
};

/*
 * The candidate for seq, added (and checked against the filter) when new;
 * NULL after an error.
 */
static struct cand *cand_get(struct cands *cs, struct memory *m, int64_t seq, int64_t now)
{
	int step;

	for (size_t i = 0; i < cs->n; i++) {
		if (cs->c[i].seq == seq)
			return &cs->c[i];
	}
	if (cs->n == cs->cap) {
		cs->cap = cs->cap * 2 + 64;
		cs->c = xrealloc(cs->c, cs->cap * sizeof *cs->c);
	}
	struct cand *c = &cs->c[cs->n++];

	memset(c, 0, sizeof *c);
	c->seq = seq;
	c->mem = jv_invalid();
	/* (the statement is left reset, its bindings cleared, after each use) */
	mem_filter_bind(cs->filter, cs->f);
	db_bind_int64(cs->filter, 3, seq);
	step = db_step(cs->filter);
	if (step == DB_ROW) {
		int64_t last = db_col_int64(cs->filter, 1), pending_last;
		long pending;

		if (mem_access_pending(m, db_col_text(cs->filter, 2), &pending, &pending_last) &&
		    pending_last > last)
			last = pending_last;
		c->pass = true;
		c->conf = db_col_double(cs->filter, 0);
		c->rec = memory_recency(last, now);
	} else if (step != DB_DONE) {
		db_reset(cs->filter);
		mem_fail(m, "cannot read memories");
		return NULL;
	}
	db_reset(cs->filter);
	return c;
}

/* The next rank of list l (given best first) to c, when it passes and the
 * list is not deeper than MEMORY_RRF_DEPTH; the same rank as the one before
 * when the score is the same ("1, 1, 3"), so that equal matches are told
 * apart by confidence and recency only. */
static void cand_rank(struct cands *cs, struct cand *c, int l, double score)
{
	if (!c->pass || c->rank[l] || cs->count[l] >= MEMORY_RRF_DEPTH)
		return;
	cs->count[l]++;
	if (cs->count[l] == 1 || score != cs->last_score[l])
		cs->last_rank[l] = cs->count[l];
	cs->last_score[l] = score;
	c->rank[l] = cs->last_rank[l];
}

/*
 * The lexical list on PostgreSQL: the rows of memories.tsv matching any of
 * the terms (fts_match's lines), scored like BM25 from what is at hand:
 * the idf of each term matched (its document frequency counted by
 * count_df, n the rows), times BM25's length saturation with the length of
 * the row's tsvector against the mean over the matching rows (k1 1.2, b
 * 0.75), plus ts_rank_cd (proximity, repeats) as a small tie-breaker.
 * Each term is bound as text and made a tsquery by phraseto_tsquery: no
 * user text reaches the tsquery parser.
 */
static int fts_sql_pg(struct buf *sql, struct db_stmt **out, struct memory *m, const char *match,
		      size_t limit)
{
	const double n = (double)(vindex_rows(m) > 0 ? vindex_rows(m) : 1);
	struct buf any = BUF_INIT, sum = BUF_INIT;
	const char *p = match;
	int k = 0, rc;
	double idf[PG_TERMS];
	const char *term[PG_TERMS];
	size_t len[PG_TERMS];

	while (*p && k < (int)(sizeof idf / sizeof idf[0])) {
		char *end;
		double df = strtod(p, &end);
		const char *eol = strchr(end, '\n');

		if (!eol)
			break;
		double x = log((n - df + 0.5) / (df + 0.5));

		idf[k] = x > 1e-6 ? x : 1e-6;
		term[k] = end + 1;
		len[k] = (size_t)(eol - end - 1);
		buf_addf(&any, "%sq%d.q", k ? " || " : "", k);
		buf_addf(&sum, "%sCASE WHEN tsv @@ q%d.q THEN CAST(?%d AS DOUBLE PRECISION) ELSE 0 END",
			 k ? " + " : "", k, 2 * k + 2);
		k++;
		p = eol + 1;
	}
	buf_reset(sql);
	buf_addf(sql, "SELECT seq, (%s) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * length(tsv) / "
		 "greatest(1, avg(length(tsv)) OVER ()))) + 0.01 * ts_rank_cd(tsv, %s) AS score FROM memories",
		 sum.buf, any.buf);
	for (int i = 0; i < k; i++)
		buf_addf(sql, ", phraseto_tsquery('english', CAST(?%d AS TEXT)) AS q%d (q)", 2 * i + 1, i);
	buf_addf(sql, " WHERE tsv @@ (%s) ORDER BY score DESC, seq DESC LIMIT %zu", any.buf, limit);
	rc = mem_prepare(out, m, sql->buf);
	for (int i = 0; rc == 0 && i < k; i++) {
		db_bind_textn(*out, 2 * i + 1, term[i], len[i]);
		db_bind_double(*out, 2 * i + 2, idf[i]);
	}
	buf_release(&any);
	buf_release(&sum);
	return rc;
}

/*
 * forge_bm25(memories_fts, DFS): FTS5's bm25() (SQLite's fts5Bm25Function,
 * the same arithmetic in the same order: the same doubles) but for where
 * each phrase's document count comes from.  bm25() counts it on the first
 * row by walking every row of each phrase again (xQueryPhrase: 3.6M of a
 * search's 29M instructions at 100K memories); count_df has just counted
 * them, exactly (fts_match), and they come in DFS, int64_t each, phrase by
 * phrase.  A phrase DFS does not cover is counted as bm25() does.
 */
static int rank_count(const Fts5ExtensionApi *api, Fts5Context *fts, void *p)
{
	(void)api;
	(void)fts;
	(*(sqlite3_int64 *)p)++;
	return SQLITE_OK;
}

struct rank_data {
	int nphrase;
	double avgdl;
	double *idf, *freq;
	sqlite3_blob *docsize;	/* memories_fts_docsize.sz, moved from row to row */
};

static void rank_data_free(void *p)
{
	struct rank_data *r = p;

	sqlite3_blob_close(r->docsize);
	sqlite3_free(p);
}

/* An FTS5 varint (SQLite's: 7 bits a byte, high bit set but in the last
 * of 9) at *p of n bytes into *v; its length, 0 when it runs past n. */
static int docsize_varint(const unsigned char *p, int n, sqlite3_int64 *v)
{
	sqlite3_uint64 x = 0;

	for (int i = 0; i < n && i < 9; i++) {
		if (i == 8) {
			*v = (sqlite3_int64)((x << 8) | p[i]);
			return 9;
		}
		x = (x << 7) | (p[i] & 0x7f);
		if (!(p[i] & 0x80)) {
			*v = (sqlite3_int64)x;
			return i + 1;
		}
	}
	return 0;
}

/*
 * The tokens of the current row, all columns: what xColumnSize(fts, -1)
 * gives, read from the row of the docsize table FTS5 keeps (a varint per
 * column) through one blob handle moved from row to row.  xColumnSize runs
 * a statement per row for it (step, column, reset: 3.7K instructions a row,
 * 5.3M of a search at 100K memories).
 */
static int rank_doc_tokens(struct rank_data *p, const Fts5ExtensionApi *api, Fts5Context *fts,
			   sqlite3_context *ctx, int *ntok)
{
	sqlite3_int64 rowid = api->xRowid(fts), v;
	unsigned char sz[64];
	int n, rc, at = 0, cols = api->xColumnCount(fts);

	*ntok = 0;
	if (!p->docsize)
		rc = sqlite3_blob_open(sqlite3_context_db_handle(ctx), "main", "memories_fts_docsize", "sz",
				       rowid, 0, &p->docsize);
	else
		rc = sqlite3_blob_reopen(p->docsize, rowid);
	if (rc != SQLITE_OK)
		return rc;
	n = sqlite3_blob_bytes(p->docsize);
	if (n > (int)sizeof sz)
		n = (int)sizeof sz;
	if ((rc = sqlite3_blob_read(p->docsize, sz, n, 0)) != SQLITE_OK)
		return rc;
	for (int c = 0; c < cols; c++) {
		int len = docsize_varint(sz + at, n - at, &v);

		if (!len)
			return SQLITE_CORRUPT_VTAB;
		at += len;
		*ntok += (int)v;
	}
	return SQLITE_OK;
}

static int rank_data(struct rank_data **out, const Fts5ExtensionApi *api, Fts5Context *fts,
		     sqlite3_value *dfs)
{
	struct rank_data *p = api->xGetAuxdata(fts, 0);
	sqlite3_int64 nrow = 0, ntoken = 0;
	int n, ndf, rc;
	const void *blob;

	if (p) {
		*out = p;
		return SQLITE_OK;
	}
	n = api->xPhraseCount(fts);
	p = sqlite3_malloc64(sizeof *p + (size_t)n * 2 * sizeof(double));
	if (!p)
		return SQLITE_NOMEM;
	memset(p, 0, sizeof *p + (size_t)n * 2 * sizeof(double));
	p->nphrase = n;
	p->idf = (double *)&p[1];
	p->freq = &p->idf[n];
	rc = api->xRowCount(fts, &nrow);
	if (rc == SQLITE_OK)
		rc = api->xColumnTotalSize(fts, -1, &ntoken);
	if (rc == SQLITE_OK)
		p->avgdl = (double)ntoken / (double)nrow;
	blob = sqlite3_value_blob(dfs);
	ndf = sqlite3_value_bytes(dfs) / (int)sizeof(int64_t);
	for (int i = 0; rc == SQLITE_OK && i < n; i++) {
		sqlite3_int64 nhit = 0;
		double idf;

		if (blob && i < ndf)
			memcpy(&nhit, (const char *)blob + i * sizeof(int64_t), sizeof nhit);
		else
			rc = api->xQueryPhrase(fts, i, &nhit, rank_count);
		idf = log((nrow - nhit + 0.5) / (nhit + 0.5));
		p->idf[i] = idf <= 0.0 ? 1e-6 : idf;
	}
	if (rc == SQLITE_OK)
		rc = api->xSetAuxdata(fts, p, rank_data_free);
	else
		sqlite3_free(p);
	*out = rc == SQLITE_OK ? p : NULL;
	return rc;
}

static void rank_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
		    int nval, sqlite3_value **val)
{
	const double k1 = 1.2, b = 0.75;
	struct rank_data *p = NULL;
	double score = 0.0, d = 0.0;
	int rc, ninst = 0, ntok;

	rc = rank_data(&p, api, fts, nval > 0 ? val[0] : NULL);
	if (rc == SQLITE_OK) {
		memset(p->freq, 0, sizeof(double) * (size_t)p->nphrase);
		rc = api->xInstCount(fts, &ninst);
	}
	for (int i = 0; rc == SQLITE_OK && i < ninst; i++) {
		int ip, ic, io;

		rc = api->xInst(fts, i, &ip, &ic, &io);
		if (rc == SQLITE_OK)
			p->freq[ip] += 1.0;
	}
	if (rc == SQLITE_OK) {
		rc = rank_doc_tokens(p, api, fts, ctx, &ntok);
		d = (double)ntok;
	}
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	for (int i = 0; i < p->nphrase; i++)
		score += p->idf[i] * ((p->freq[i] * (k1 + 1.0)) / (p->freq[i] + k1 * (1 - b + b * d / p->avgdl)));
	sqlite3_result_double(ctx, -1.0 * score);
}

/* forge_df(memories_fts, CAP) on a row of '"t1" OR "t2" ...': each
 * phrase's rows counted up to CAP, int64_t each, in a blob. */
struct df_count {
	sqlite3_int64 n, cap;
};

static int df_count_cb(const Fts5ExtensionApi *api, Fts5Context *fts, void *p)
{
	struct df_count *c = p;

	(void)api;
	(void)fts;
	return ++c->n >= c->cap ? SQLITE_DONE : SQLITE_OK;
}

static void df_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
		  int nval, sqlite3_value **val)
{
	int n = api->xPhraseCount(fts), rc = SQLITE_OK;
	sqlite3_int64 *out = sqlite3_malloc64((size_t)(n ? n : 1) * sizeof *out);

	if (!out) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	for (int i = 0; rc == SQLITE_OK && i < n; i++) {
		struct df_count c = { 0, nval > 0 ? sqlite3_value_int64(val[0]) : 1 };

		rc = api->xQueryPhrase(fts, i, &c, df_count_cb);
		out[i] = c.n;
	}
	if (rc != SQLITE_OK) {
		sqlite3_free(out);
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	sqlite3_result_blob(ctx, out, (int)((size_t)n * sizeof *out), sqlite3_free);
}

static int count_df_fts5(struct memory *m, struct term *t, size_t n, long cap)
{
	struct db_stmt *s;
	struct buf match = BUF_INIT;
	int step;

	for (size_t i = 0; i < n; i++) {
		t[i].df = 0;
		buf_addf(&match, "%s\"%s\"", i ? " OR " : "", t[i].surf);
	}
	if (!n) {
		buf_release(&match);
		return 0;
	}
	if (rank_init(m) < 0 || mem_cached(&s, m, MS_VOCAB, "SELECT forge_df(memories_fts, ?2) FROM memories_fts "
					  "WHERE memories_fts MATCH ?1 LIMIT 1") < 0) {
		buf_release(&match);
		return -1;
	}
	db_bind_text(s, 1, match.buf);
	db_bind_int64(s, 2, (int64_t)cap + 1);
	step = db_step(s);
	if (step == DB_ROW) {
		size_t len = 0;
		const void *b = db_col_blob(s, 0, &len);

		len /= sizeof(int64_t);

		for (size_t i = 0; b && i < n && i < len; i++)
			memcpy(&t[i].df, (const char *)b + i * sizeof(int64_t), sizeof(int64_t));
	}
	db_reset(s);
	buf_release(&match);
	if (step != DB_ROW && step != DB_DONE)
		return mem_fail(m, "cannot count the memories with the query's words");
	return 0;
}

/* forge_bm25 on the store's connection, once per handle. */
static int rank_init(struct memory *m)
{
	fts5_api *api = NULL;
	sqlite3_stmt *s = NULL;
	sqlite3 *db = store_db(m->st);

	if (m->rank_ready)
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &s, NULL) != SQLITE_OK)
		return mem_fail(m, "cannot reach FTS5");
	sqlite3_bind_pointer(s, 1, (void *)&api, "fts5_api_ptr", NULL);
	sqlite3_step(s);
	sqlite3_finalize(s);
	if (!api || api->xCreateFunction(api, "forge_bm25", NULL, rank_fn, NULL) != SQLITE_OK ||
	    api->xCreateFunction(api, "forge_df", NULL, df_fn, NULL) != SQLITE_OK)
		return forge_error("cannot add forge_bm25 and forge_df to FTS5");
	m->rank_ready = true;
	return 0;
}

/* The ranked FTS5 list for match (its terms' document frequencies dfs, see
 * fts_match) into list l; *best the top BM25 score. */
static int fts_list(struct cands *cs, double *best, struct memory *m, const char *match,
		    const struct buf *dfs, int l, size_t limit, int64_t now)
{
	struct db_stmt *s, *own = NULL;
	struct buf sql = BUF_INIT;
	int rc = 0, step;

	*best = 0;
	if (!*match)
		return 0;
	if (m->pg) {
		if (fts_sql_pg(&sql, &own, m, match, limit) < 0) {
			buf_release(&sql);
			return -1;
		}
		s = own;
	} else if (rank_init(m) < 0 || mem_cached(&s, m, MS_FTS, "SELECT rowid, -forge_bm25(memories_fts, ?3) "
		       "AS score FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY score DESC LIMIT ?2") < 0) {
		return -1;
	} else {
		db_bind_text(s, 1, match);
		db_bind_int64(s, 2, (int64_t)limit);
		db_bind_blob(s, 3, dfs->buf ? dfs->buf : "", dfs->len);
	}
	while ((step = db_step(s)) == DB_ROW) {
		double score = db_col_double(s, 1);
		struct cand *c = cand_get(cs, m, db_col_int64(s, 0), now);

		if (!c) {
			rc = -1;
			break;
		}
		if (score > *best)
			*best = score;
		if (l == L_LEX)
			c->bm25 = score;
		cand_rank(cs, c, l, score);
	}
	if (rc == 0 && step != DB_DONE)
		rc = mem_fail(m, "cannot search memories for '%s'", match);
	db_reset(s);
	db_finalize(own);
	buf_release(&sql);
	return rc;
}

double memory_rrf(const int *ranks, const double *weights, size_t n)
{
	double f = 0;

	for (size_t i = 0; i < n; i++) {
		if (ranks[i] > 0)
			f += weights[i] / (MEMORY_RRF_K + ranks[i]);
	}
	return f;
}

double memory_rrf_band(double min_weight)
{
	return min_weight / ((double)(MEMORY_RRF_K + MEMORY_RRF_DEPTH) *
			     (MEMORY_RRF_K + MEMORY_RRF_DEPTH + 1));
}

double memory_relevance(double fused, double band, double recency, double confidence)
{
	double c = confidence < 0 ? 0 : confidence > 1 ? 1 : confidence;
	double r = recency < 0 ? 0 : recency > 1 ? 1 : recency;

	return fused + band * (MEMORY_BOOST_CONFIDENCE * c + MEMORY_BOOST_RECENCY * r);
}

static int fused_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->rel != y->rel)
		return x->rel < y->rel ? 1 : -1;
	return (x->seq < y->seq) - (x->seq > y->seq);     /* newer first */
}

static void fuse(struct cands *cs, const double *w, double band)
{
	for (size_t i = 0; i < cs->n; i++) {
		struct cand *c = &cs->c[i];

		c->fused = memory_rrf(c->rank, w, NLISTS);
		c->rel = c->fused > 0 ? memory_relevance(c->fused, band, c->rec, c->conf) : 0;
	}
	if (cs->n)
		qsort(cs->c, cs->n, sizeof *cs->c, fused_cmp);
}

/* ---- the vector list ------------------------------------------------- */

static int cos_cmp(const void *a, const void *b)
{
	const struct cand *x = *(const struct cand *const *)a, *y = *(const struct cand *const *)b;

	if (x->cos != y->cos)
		return x->cos < y->cos ? 1 : -1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
 * The vector list: the candidates, by their cosine to the query.  With the
 * local embedding, only those the word lists found, whatever their cosine:
 * a scan of every vector finds nothing the words miss (its features are
 * the same words and their pieces) and costs a pass over the whole file per
 * search (27 MB at 100K memories); it re-orders what the words found by
 * how much of it is about the query.  With an API's vectors, which know
 * the language, the `deep` best of all vectors too (cosine above
 * m->vec_floor): a memory worded otherwise than the query.
 */
static int vector_list(struct cands *cs, struct memory *m, const float *qv, size_t dim,
		       int type, size_t deep, int64_t now)
{
	struct vhit *hits = NULL;
	struct cand **by;
	size_t nh = 0, n = 0;

	if (m->embed_provider) {
		if (!vindex_pg_search(&hits, &nh, m, qv, dim, type, deep) &&
		    vindex_search(&hits, &nh, m, qv, dim, type, deep) < 0)
			return -1;
		for (size_t i = 0; i < nh && hits[i].cos > m->vec_floor; i++) {
			if (!cand_get(cs, m, hits[i].seq, now)) {
				free(hits);
				return -1;
			}
		}
		free(hits);
	}
	by = xcalloc(cs->n + 1, sizeof *by);
	for (size_t i = 0; i < cs->n; i++) {
		struct cand *c = &cs->c[i];

		c->has_cos = vindex_cosine(&c->cos, m, c->seq, qv, dim);
		if (c->has_cos && c->pass && (!m->embed_provider || c->cos > m->vec_floor))
			by[n++] = c;
	}
	qsort(by, n, sizeof *by, cos_cmp);
	for (size_t i = 0; i < n; i++)
		cand_rank(cs, by[i], L_VEC, by[i]->cos);
	free(by);
	return 0;
}

/* ---- concepts (the thesaurus) ------------------------------------------ */

#define CONCEPT_TERMS 24

/*
 * The concept list into list L_CON: FTS5 over the other terms of the
 * thesaurus groups the query holds (not the query's own words: the word
 * list has them), in BM25 order.  Nothing when the query holds no concept.
 */
static int concept_list(struct cands *cs, struct memory *m, const char *text, size_t deep,
			int64_t now)
{
	struct mem_concept *con = NULL;
	struct terms ct = { 0 };
	struct buf match = BUF_INIT, dfs = BUF_INIT;
	size_t ncon = 0;
	double best;
	int rc = -1;

	if (mem_concepts_expand(&con, &ncon, m, text, CONCEPT_TERMS) < 0)
		goto out;
	for (size_t i = 0; i < ncon; i++) {
		if (strlen(con[i].term) < TERM_LEN && strlen(con[i].stems) < TERM_LEN)
			term_add(&ct, con[i].term, strlen(con[i].term), con[i].stems,
				 strlen(con[i].stems));
	}
	if (!ct.n) {
		rc = 0;
		goto out;
	}
	if (count_df(m, ct.t, ct.n, DF_TERM_MAX) < 0)
		goto out;
	fts_match(&match, &dfs, &ct, CONCEPT_TERMS, DF_BUDGET, m->pg, false);
	if (fts_list(cs, &best, m, match.buf, &dfs, L_CON, deep, now) < 0)
		goto out;
	rc = 0;
out:
	mem_concepts_free(con, ncon);
	terms_release(&ct);
	buf_release(&match);
	buf_release(&dfs);
	return rc;
}

/*
 * How much of the query the best word matches explain: the greatest share,
 * over the first COVER_DOCS memories of the word list, of the query's
 * information (the sum of its words' idf, stopwords aside) that one
 * memory holds.  Near 1
 * when a memory says what the query says; low for a query worded otherwise
 * than its answer, whose words are spread over memories about other things.
 * 0 when the word list is empty.
 */
#define COVER_DOCS 3

struct cover {
	const struct terms *qt;
	bool hit[MAX_TERMS];
};

static void cover_term(const char *surf, size_t ns, const char *stem, size_t nst, void *payload)
{
	struct cover *c = payload;
	const struct term *t = term_find(c->qt, stem, nst);

	(void)surf;
	(void)ns;
	if (t)
		c->hit[t - c->qt->t] = true;
}

/* The information in a word of the query: BM25's idf (a word no memory
 * holds the most: nothing explains it), 0 for a stopword. */
static double word_idf(const struct term *t, double n)
{
	double df = (double)t->df, x;

	if (mem_stopword(t->surf, strlen(t->surf)) || n <= 0)
		return 0;
	x = log((n - df + 0.5) / (df + 0.5));
	return x > 0 ? x : 0;
}

/* Which of the query's terms (cv->qt, in one order for the whole recall)
 * the candidate c holds in its content, context and tags, but for their
 * stock phrasing (mem_unstock): cv->hit; read once a candidate. */
static int memory_hits(struct cover *cv, struct memory *m, struct buf *text, struct cand *c)
{
	struct db_stmt *s;
	int rc;

	if (c->hits_known) {
		memcpy(cv->hit, c->hit, sizeof cv->hit);
		return 0;
	}
	if (mem_cached(&s, m, MS_TEXT, "SELECT content, context, tags FROM memories WHERE seq = ?") < 0)
		return -1;
	db_reset(s);
	db_bind_int64(s, 1, c->seq);
	if (db_step(s) != DB_ROW) {
		db_reset(s);
		return mem_fail(m, "cannot read memory %lld", (long long)c->seq);
	}
	buf_reset(text);
	for (int k = 0; k < 3; k++) {
		const char *col = db_col_text(s, k);

		buf_adds(text, col ? col : "(null)");   /* (as "%s" printed it; NOT NULL columns) */
		buf_addch(text, '\n');
	}
	db_reset(s);
	/* (a word of Forge's own phrasing is no sign a memory is about the query) */
	mem_unstock(text->buf);
	rc = mem_stems(m, text->buf, text->len, true, cover_term, cv);
	if (rc == 0) {
		memcpy(c->hit, cv->hit, sizeof c->hit);
		c->hits_known = true;
	}
	return rc;
}

static int literal_coverage(double *out, struct memory *m, struct cands *cs,
			    const struct terms *qt, size_t ndocs)
{
	struct buf text = BUF_INIT;
	double total = 0, n = (double)ndocs;
	int rc = -1;

	*out = 0;
	for (size_t i = 0; i < qt->n; i++)
		total += word_idf(&qt->t[i], n);
	if (total <= 0)
		return 0;
	for (size_t i = 0; i < cs->n; i++) {
		struct cand *c = &cs->c[i];
		struct cover cv = { .qt = qt };
		double got = 0;

		if (!c->pass || !c->rank[L_LEX] || c->rank[L_LEX] > COVER_DOCS)
			continue;
		if (memory_hits(&cv, m, &text, c) < 0)
			goto out;
		for (size_t k = 0; k < qt->n; k++)
			got += cv.hit[k] ? word_idf(&qt->t[k], n) : 0;
		if (got / total > *out)
			*out = got / total;
	}
	rc = 0;
out:
	buf_release(&text);
	return rc;
}

/* The information in a word of the query for coverage(): a smoothed idf,
 * which weighs a word every memory holds not much below a word none holds
 * in a small store (in a store of one memory, the one that answers holds
 * every word it shares with the query); 0 for a stopword. */
static double smooth_idf(const struct term *t, double n)
{
	if (mem_stopword(t->surf, strlen(t->surf)))
		return 0;
	return log(1 + (n + 1) / ((double)t->df + 1));
}

/* The share of the query's information (smooth_idf) the candidate c
 * holds, 0..1: what it says of the query, whatever else is stored (a
 * share of the best hit's BM25 made the best hit similar, however
 * unrelated). */
static int coverage(double *out, struct memory *m, struct cand *c, const struct terms *qt, double n)
{
	struct buf text = BUF_INIT;
	struct cover cv = { .qt = qt };
	double total = 0, got = 0;
	int rc;

	*out = 0;
	rc = memory_hits(&cv, m, &text, c);
	for (size_t k = 0; rc == 0 && k < qt->n; k++) {
		total += smooth_idf(&qt->t[k], n);
		got += cv.hit[k] ? smooth_idf(&qt->t[k], n) : 0;
	}
	if (rc == 0 && total > 0)
		*out = got / total;
	buf_release(&text);
	return rc;
}

/* The share of the concept list's weight for a query whose best word
 * matches explain cov of it: all of it up to MEMORY_CONCEPT_COVER_LOW, none
 * from MEMORY_CONCEPT_COVER_HIGH, linear in between. */
static double concept_share(double cov)
{
	const double lo = MEMORY_CONCEPT_COVER_LOW, hi = MEMORY_CONCEPT_COVER_HIGH;

	if (cov <= lo)
		return 1;
	if (cov >= hi)
		return 0;
	return (hi - cov) / (hi - lo);
}

/* ---- associations (learnt from the memories) ---------------------------- */

#define ASSOC_TERMS 6

/*
 * The association list into L_ASSOC: FTS5 over the words the memories
 * associate with the query's (mem_assoc_expand, each query word weighed by
 * its idf), in BM25 order.  Nothing when no word has associates.
 */
static int assoc_list(struct cands *cs, struct memory *m, const struct terms *qt, size_t deep,
		      int64_t now)
{
	const char *stems[MAX_TERMS];
	double idf[MAX_TERMS];
	struct mem_assoc *as = NULL;
	struct terms at = { 0 };
	struct buf match = BUF_INIT, dfs = BUF_INIT;
	size_t na = 0;
	double best;
	int rc = -1;

	for (size_t i = 0; i < qt->n; i++) {
		stems[i] = qt->t[i].stem;
		idf[i] = word_idf(&qt->t[i], (double)vindex_rows(m));
	}
	if (mem_assoc_expand(&as, &na, m, stems, idf, qt->n, ASSOC_TERMS) < 0)
		goto out;
	for (size_t i = 0; i < na; i++)
		term_add(&at, as[i].surf, strlen(as[i].surf), as[i].stem, strlen(as[i].stem));
	if (!at.n) {
		rc = 0;
		goto out;
	}
	if (count_df(m, at.t, at.n, DF_TERM_MAX) < 0)
		goto out;
	fts_match(&match, &dfs, &at, ASSOC_TERMS, DF_BUDGET, m->pg, false);
	if (fts_list(cs, &best, m, match.buf, &dfs, L_ASSOC, deep, now) < 0)
		goto out;
	rc = 0;
out:
	free(as);
	terms_release(&at);
	buf_release(&match);
	buf_release(&dfs);
	return rc;
}

/* ---- pseudo-relevance feedback ----------------------------------------- */

#define PRF_DOCS 3       /* the first-pass memories whose words are taken */
#define PRF_TERMS 8      /* the words the feedback list searches, at most */
#define PRF_POOL 96      /* the words weighed, at most */

struct prf {
	struct terms *pool;      /* the feedback docs' words: w the docs' weights summed */
	const struct terms *qt;  /* the query's (already searched) */
	struct terms seen;       /* the current document's (each word counted once) */
	double w;                /* the current document's weight */
};

static void prf_term(const char *surf, size_t ns, const char *stem, size_t nst, void *payload)
{
	struct prf *p = payload;
	struct term *x;

	/* (a short stem or a number says little; a word too long for a term is left) */
	if (ns >= TERM_LEN || nst >= TERM_LEN || nst < 3 || (stem[0] >= '0' && stem[0] <= '9') ||
	    term_find(p->qt, stem, nst) || term_find(&p->seen, stem, nst))
		return;
	term_add(&p->seen, surf, ns, stem, nst);
	x = term_add(p->pool, surf, ns, stem, nst);
	if (x) {
		x->w += p->w;
		x->tf++;
	}
}

static int prf_weight_cmp(const void *a, const void *b)
{
	const struct term *x = a, *y = b;

	if (x->w != y->w)
		return x->w < y->w ? 1 : -1;
	return strcmp(x->stem, y->stem);
}

/*
 * The feedback list into L_PRF: the memories the first pass ranks best
 * (by the lists so far, weights w) are read, and their words that the
 * query lacks are searched, in BM25 order -- a word shared by several of
 * them and rare in the store first (weight: the sum of the documents'
 * 1 / rank, times idf, for a word in at least two of them or, one
 * document alone, at least two memories in all).  A query worded otherwise than its answer
 * often finds a memory about the same thing among its first few; that
 * memory's own words then find the answer.  General: it learns nothing
 * and knows no vocabulary.  Nothing when the first pass found nothing.
 */
static int prf_list(struct cands *cs, struct memory *m, const struct terms *qt, const double *w,
		    size_t deep, int64_t now)
{
	struct cand *top[PRF_DOCS] = { 0 };
	double score[PRF_DOCS] = { 0 };
	struct terms pool = { .max = PRF_POOL }, sel = { 0 };
	struct prf p = { .pool = &pool, .qt = qt };
	struct buf text = BUF_INIT, match = BUF_INIT, dfs = BUF_INIT;
	double n = (double)vindex_rows(m), best;
	size_t ndoc = 0, kept = 0;
	int rc = -1;

	for (size_t i = 0; i < cs->n; i++) {
		struct cand *c = &cs->c[i];
		double f = c->pass ? memory_rrf(c->rank, w, NLISTS) : 0;

		for (size_t k = 0; f > 0 && k < PRF_DOCS; k++) {
			if (f > score[k] || (f == score[k] && top[k] && c->seq > top[k]->seq)) {
				memmove(&top[k + 1], &top[k], (PRF_DOCS - k - 1) * sizeof *top);
				memmove(&score[k + 1], &score[k], (PRF_DOCS - k - 1) * sizeof *score);
				top[k] = c;
				score[k] = f;
				break;
			}
		}
	}
	for (size_t k = 0; k < PRF_DOCS && top[k]; k++) {
		struct db_stmt *s;

		if (mem_cached(&s, m, MS_TEXT, "SELECT content, context, tags FROM memories WHERE seq = ?") < 0)
			goto out;
		db_reset(s);
		db_bind_int64(s, 1, top[k]->seq);
		if (db_step(s) != DB_ROW) {
			db_reset(s);
			rc = mem_fail(m, "cannot read memory %lld", (long long)top[k]->seq);
			goto out;
		}
		buf_reset(&text);
		for (int col = 0; col < 3; col++) {
			const char *t = db_col_text(s, col);

			buf_adds(&text, t ? t : "");
			buf_addch(&text, '\n');
		}
		db_reset(s);
		/* (Forge's own phrasing is no sign of what a memory is about) */
		mem_unstock(text.buf);
		p.w = 1.0 / (double)(k + 1);
		p.seen.n = 0;
		if (mem_stems(m, text.buf, text.len, false, prf_term, &p) < 0)
			goto out;
		ndoc++;
	}
	/* (a word of one document found in no other memory finds nothing new:
	 * with several documents, a word of one of them alone is weighed 0
	 * whatever its rows, so only the others' rows are counted -- counting
	 * every word of the pool walked ~45K rows at 100K memories) */
	for (size_t i = 0; i < pool.n; i++) {
		if (pool.t[i].tf < 2 && ndoc > 1)
			pool.t[i].w = 0;
		else if (kept++ != i) {
			struct term x = pool.t[kept - 1];

			pool.t[kept - 1] = pool.t[i];
			pool.t[i] = x;
		}
	}
	if (kept && count_df(m, pool.t, kept, DF_TERM_MAX) < 0)
		goto out;
	for (size_t i = 0; i < pool.n; i++) {
		struct term *t = &pool.t[i];

		if (i >= kept || t->df < 2)
			t->w = 0;
		else
			t->w *= word_idf(t, n);
	}
	if (pool.n)	/* (an empty pool has no array: qsort's NULL is undefined) */
		qsort(pool.t, pool.n, sizeof *pool.t, prf_weight_cmp);
	for (size_t i = 0; i < pool.n && i < PRF_TERMS && pool.t[i].w > 0; i++) {
		struct term *x = term_add(&sel, pool.t[i].surf, strlen(pool.t[i].surf), pool.t[i].stem,
					  strlen(pool.t[i].stem));

		if (x)
			x->df = pool.t[i].df;
	}
	rc = 0;
	if (!sel.n)
		goto out;
	fts_match(&match, &dfs, &sel, PRF_TERMS, DF_BUDGET, m->pg, false);
	rc = fts_list(cs, &best, m, match.buf, &dfs, L_PRF, deep, now);
out:
	terms_release(&pool);
	terms_release(&p.seen);
	terms_release(&sel);
	buf_release(&text);
	buf_release(&match);
	buf_release(&dfs);
	return rc;
}

/* ---- recall ---------------------------------------------------------- */

static int mem_get_seq(jv *out, struct memory *m, int64_t seq)
{
	struct db_stmt *s;
	int rc = 0;

	*out = jv_null();
	if (mem_cached(&s, m, MS_GET_SEQ, "SELECT " MEM_COLS " FROM memories WHERE seq = ?") < 0)
		return -1;
	db_bind_int64(s, 1, seq);
	if (db_step(s) == DB_ROW)
		*out = mem_row_json(m, s, 0);
	else
		rc = mem_fail(m, "cannot read memory %lld", (long long)seq);
	db_reset(s);
	return rc;
}

/* Count an access to each of the n memories r[] (memory_access.c: beside
 * the database when it can, else in their rows). */
static int touch(struct memory *m, const struct cand *r, size_t n, int64_t now)
{
	const char *ids[64];
	struct db_stmt *s;
	int rc = 0;

	if (!n)
		return 0;
	if (n <= sizeof ids / sizeof *ids) {
		for (size_t i = 0; i < n; i++)
			ids[i] = json_get_str(r[i].mem, "id");
		rc = mem_access_record(m, ids, n, now);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
	}
	if (mem_begin(m) < 0)
		return -1;
	if (mem_cached(&s, m, MS_TOUCH, m->pg ? "UPDATE memories SET access_count = access_count + 1, "
		       "last_accessed = greatest(last_accessed, CAST(?1 AS BIGINT)) WHERE id = ?2" :
		       "UPDATE memories SET access_count = access_count + 1, "
		       "last_accessed = max(last_accessed, ?) WHERE id = ?") < 0) {
		mem_rollback(m);
		return -1;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		db_reset(s);
		db_bind_int64(s, 1, now);
		db_bind_text(s, 2, json_get_str(r[i].mem, "id"));
		if (db_step(s) != DB_DONE)
			rc = mem_fail(m, "cannot record an access");
	}
	db_reset(s);
	if (rc < 0) {
		mem_rollback(m);
		return -1;
	}
	return mem_commit(m);
}

static jv rank_json(int r)
{
	return r > 0 ? jv_number(r) : jv_null();
}

static double round6(double x)
{
	return round(x * 1e6) / 1e6;
}

int memory_recall(jv *out, struct memory *m, const struct memory_query *q)
{
	size_t limit = q->filter.limit > 0 ? (size_t)q->filter.limit : 10;
	size_t want = MEMORY_RRF_DEPTH > limit ? MEMORY_RRF_DEPTH : limit;
	/* with a filter, look deeper: what fails it takes no rank */
	size_t deep = q->filter.type != MEMORY_ANY || q->filter.ntags ||
		      q->filter.min_confidence > 0 ? want * 4 : want;
	struct cands cs = { 0 };
	struct terms qt = { .max = MAX_TERMS };
	struct buf match = BUF_INIT, dfs = BUF_INIT;
	size_t dim = 0, nres = 0;
	float *qv = NULL;
	double best = 0;
	/* the lists' weights: lexical, vector, concepts */
	double w[NLISTS] = { m->lexw, 1 - m->lexw, m->lexw * MEMORY_CONCEPT_WEIGHT,
			     m->lexw * MEMORY_ASSOC_WEIGHT, m->lexw * MEMORY_PRF_WEIGHT };
	double wmin = 1, wsum = 0;
	int64_t now = memory_now(m);
	bool reading = false;
	int rc = -1;

	*out = jv_array();
	if (!q->text)
		return forge_error("recall needs a query text");
	/* a database that does not exist (store_open_readonly's stand-in):
	 * nothing to find, and no thesaurus to build where nothing may be
	 * written */
	if (store_absent(m->st))
		return 0;
	mem_access_refresh(m);
	if (q->embedding) {
		dim = q->embedding_dim;
		qv = xcalloc(dim + 1, sizeof *qv);
		memcpy(qv, q->embedding, dim * sizeof *qv);
	} else if (memory_embed(&qv, &dim, m, q->text) < 0) {
		goto out;
	}
	if (vindex_sync(m, NULL) < 0)
		goto out;
	/* (the thesaurus may need writing: before the read transaction) */
	if (!q->no_expand && w[L_CON] > 0 && mem_concepts_sync(m) < 0)
		goto out;
	if (m->concepts_missing)
		w[L_CON] = 0;
	if (!q->no_expand && w[L_ASSOC] > 0 && mem_assoc_sync(m, vindex_rows(m)) < 0)
		goto out;
	/* One read transaction for the many small reads below (a statement
	 * alone takes and drops SQLite's locks each time); not when the caller
	 * has one open. */
	if (!db_in_transaction(m->st)) {
		if (store_exec(m->st, "BEGIN") < 0)
			goto out;
		reading = true;
	}
	cs.f = &q->filter;
	if (mem_filter_stmt(&cs.filter, m, &q->filter) < 0)
		goto out;
	/* the lexical list */
	/* The query keeps its stopwords: BM25 weighs them by their rarity,
	 * and the common ones are left out by fts_match(). */
	if (mem_stems(m, q->text, strlen(q->text), true, query_term, &qt) < 0 ||
	    count_df(m, qt.t, qt.n, DF_TERM_MAX) < 0)
		goto out;
	fts_match(&match, &dfs, &qt, USE_TERMS, DF_BUDGET, m->pg, true);
	if (fts_list(&cs, &best, m, match.buf, &dfs, L_LEX, deep, now) < 0)
		goto out;
	/* the concept list: the other terms of the query's concepts, weighed
	 * by how little of the query the best word matches explain */
	if (!q->no_expand && w[L_CON] > 0) {
		double cov;

		if (literal_coverage(&cov, m, &cs, &qt, vindex_rows(m)) < 0)
			goto out;
		w[L_CON] *= concept_share(cov);
		w[L_ASSOC] *= concept_share(cov);
		if (w[L_CON] > 0 && concept_list(&cs, m, q->text, deep, now) < 0)
			goto out;
		if (w[L_ASSOC] > 0 && assoc_list(&cs, m, &qt, deep, now) < 0)
			goto out;
		/* (feedback, like the expansions, only for a query its own
		 * words explain badly: a lexical query's first hits are its
		 * answers already, their other words would only drift) */
		w[L_PRF] *= concept_share(cov);
		if (w[L_PRF] > 0 && prf_list(&cs, m, &qt, w, deep, now) < 0)
			goto out;
	} else {
		w[L_PRF] = 0;
	}
	if (w[L_VEC] > 0 && vector_list(&cs, m, qv, dim, q->filter.type, deep, now) < 0)
		goto out;
	for (int l = 0; l < NLISTS; l++) {
		wsum += w[l];
		if (w[l] > 0 && w[l] < wmin)
			wmin = w[l];
	}
	fuse(&cs, w, memory_rrf_band(wmin));
	for (size_t i = 0; i < cs.n && nres < limit; i++) {
		struct cand *c = &cs.c[i];

		if (!c->pass || c->fused <= 0)
			break;
		if (!c->has_cos)
			c->has_cos = vindex_cosine(&c->cos, m, c->seq, qv, dim);
		/* (its text read inside the read transaction, as every read of
		 * the search: a statement alone takes and drops SQLite's locks) */
		if (mem_get_seq(&c->mem, m, c->seq) < 0 ||
		    coverage(&c->cover, m, c, &qt, (double)vindex_rows(m)) < 0)
			goto out;
		nres++;
	}
	db_finalize(cs.filter);
	cs.filter = NULL;
	if (reading) {
		reading = false;
		if (store_exec(m->st, "COMMIT") < 0)
			goto out;
	}
	/* (an access that cannot be counted -- a role that may only read, a
	 * database locked past its timeout -- does not fail the search: they
	 * are counts of use, not data) */
	if (!q->no_touch && !store_readonly(m->st))
		(void)touch(m, cs.c, nres, now);
	double top = wsum / (MEMORY_RRF_K + 1) + memory_relevance(0, memory_rrf_band(wmin), 1, 1);

	for (size_t i = 0; i < nres; i++) {
		struct cand *c = &cs.c[i];
		double cos = c->has_cos && c->cos > 0 ? (c->cos > 1 ? 1 : c->cos) : 0;
		double lex = best > 0 ? c->bm25 / best : 0, cover = c->cover;
		jv o, ranks;

		o = jv_object();
		ranks = jv_object();

		ranks = json_set(ranks, "lexical", rank_json(c->rank[L_LEX]));
		ranks = json_set(ranks, "vector", rank_json(c->rank[L_VEC]));
		ranks = json_set(ranks, "concepts", rank_json(c->rank[L_CON]));
		ranks = json_set(ranks, "associations", rank_json(c->rank[L_ASSOC]));
		ranks = json_set(ranks, "feedback", rank_json(c->rank[L_PRF]));
		o = json_set(o, "memory", c->mem);
		c->mem = jv_invalid();
		o = json_set(o, "relevance", jv_number(round6(c->rel / top)));
		o = json_set(o, "similarity", jv_number(round6((1 - m->lexw) * cos + m->lexw * cover)));
		o = json_set(o, "recency", jv_number(round6(c->rec)));
		o = json_set(o, "confidence", jv_number(c->conf));
		o = json_set(o, "cosine", jv_number(round6(cos)));
		o = json_set(o, "lexical", jv_number(round6(lex)));
		o = json_set(o, "coverage", jv_number(round6(cover)));
		o = json_set(o, "ranks", ranks);
		*out = jv_array_append(*out, o);
	}
	rc = 0;
out:
	for (size_t i = 0; i < cs.n; i++)
		jv_free(cs.c[i].mem);
	free(cs.c);
	db_finalize(cs.filter);
	if (reading)
		store_rollback(m->st);
	terms_release(&qt);
	buf_release(&match);
	buf_release(&dfs);
	free(qv);
	if (rc < 0) {
		jv_free(*out);
		*out = jv_null();
	}
	return rc;
}

/* ---- relationships of a new memory ----------------------------------- */

#define RELATE_CANDIDATES 32

int mem_find_related(jv *out, struct memory *m, const float *vec, size_t dim, const char *content)
{
	struct vhit *hits = NULL;
	size_t nh = 0, k = 0;
	struct db_stmt *s = NULL;
	struct buf tb[RELATE_CANDIDATES];
	const char *texts[RELATE_CANDIDATES];
	size_t lens[RELATE_CANDIDATES];
	char ids[RELATE_CANDIDATES][ULID_LEN + 1];
	bool contra[RELATE_CANDIDATES];
	struct said mine;
	float *vs = NULL;
	size_t d = 0;
	int rc = -1;

	*out = jv_array();
	said_of(&mine, content);
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
		db_reset(s);
		db_bind_int64(s, 1, hits[i].seq);
		if (db_step(s) != DB_ROW)
			continue;
		snprintf(ids[k], sizeof ids[k], "%s", db_col_text(s, 0));
		mem_embed_text(&tb[k], db_col_text(s, 1),
			       db_col_text(s, 2),
			       db_col_text(s, 3));
		contra[k] = contradicts(&mine, db_col_text(s, 1));
		texts[k] = tb[k].buf;
		lens[k] = tb[k].len;
		k++;
	}
	if (k && mem_embed_many(&vs, &d, m, texts, lens, k) < 0)
		goto out;
	for (size_t i = 0; i < k && d == dim; i++) {
		double cos = memory_cosine(vec, vs + i * d, d);

		if (cos <= MEMORY_RELATED_ABOVE)
			continue;
		jv r = jv_object();

		r = json_set(r, "id", jv_string(ids[i]));
		r = json_set(r, "similarity", jv_number(round(cos * 1e6) / 1e6));
		r = json_set(r, "kind", jv_string(cos > MEMORY_SIMILAR_ABOVE ? "similar" : "related"));
		r = json_set(r, "contradicts", jv_bool(contra[i]));
		*out = jv_array_append(*out, r);
	}
	rc = 0;
out:
	db_finalize(s);
	for (int i = 0; i < RELATE_CANDIDATES; i++)
		buf_release(&tb[i]);
	free(vs);
	free(hits);
	return rc;
}
