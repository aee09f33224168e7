/*
 * memory_embed.c - embeddings of memories: the weight-free local embedding
 * (feature hashing) and API embeddings (llm_embed) cached by text hash.
 *
 * The local embedding hashes three kinds of features with FNV-1a into `dim`
 * signed buckets (the sign from a high bit of the hash, so collisions
 * cancel out on average instead of piling up):
 *   words (not stopwords)            weight 1.0
 *   pairs of consecutive words       weight 0.5
 *   character 3-grams of "^word$"    weight 0.3 (typos, identifiers, stems)
 * then L2-normalises the vector.  No model, no training, deterministic.
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "llm/llm.h"
#include "store/store.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static inline uint64_t fnv_byte(uint64_t h, unsigned char c)
{
	return (h ^ c) * FNV_PRIME;
}

static inline uint64_t fnv_bytes(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = fnv_byte(h, (unsigned char)s[i]);
	return h;
}

static const char *const stopwords[] = {
	"a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be",
	"been", "before", "but", "by", "can", "could", "did", "do", "does", "for", "from",
	"had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it",
	"its", "just", "me", "more", "my", "of", "on", "or", "our", "out", "over", "she", "so",
	"some", "than", "that", "the", "their", "them", "then", "there", "these", "they",
	"this", "those", "to", "up", "us", "was", "we", "were", "what", "when", "where",
	"which", "while", "who", "why", "will", "with", "would", "you", "your", NULL
};

bool mem_stopword(const char *w, size_t n)
{
	if (n > 7)
		return false;
	for (int i = 0; stopwords[i]; i++) {
		if (stopwords[i][0] == w[0] && strncmp(stopwords[i], w, n) == 0 && !stopwords[i][n])
			return true;
	}
	return false;
}

static inline bool word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c >= 0x80;
}

/* ---- the stock words of Forge's own memories ----------------------------- */

/* The fixed phrasing of the episode and lesson texts (memory_episode.c:
 * keep the two in step) and their stock tags ('#': one or more digits).
 * Every lesson says "Fixed in attempt 2", "Outcome: fixed": a task sharing
 * only such a word with one ("fix a typo") is not about it. */
static const char *const stock[] = {
	"Lesson for implement", "from the run \"", "sent implement attempt # back",
	"Fixed in attempt #", "Then the review still said no", "Then the tests still said no",
	"Then the review passed", "Then the tests passed", "Outcome: not fixed", "Outcome: fixed",
	"; the run ", "implement phase:", "a review finding", "a test failure", "Run of \"",
	"completed after # bounce", " after # bounce", "; completed", "# tool calls", "# tool call",
	"Duration: #s, Cost: $#.#", " -> succeeded", " -> failed:", " phase for \"", "forge run:",
	"\"lesson\"", "\"fixed\"", "\"unresolved\"", "\"success\"", "\"failure\"", "\"run\"",
	"\"implement\"", "\"review\"", "\"test\"", "\"plan\"", NULL
};

/* The length of the stock phrase p at s, 0 when it is not there. */
static size_t stock_at(const char *s, const char *p)
{
	const char *t = s;

	for (; *p; p++) {
		if (*p == '#') {
			if (*t < '0' || *t > '9')
				return 0;
			while (*t >= '0' && *t <= '9')
				t++;
		} else if (*t++ != *p) {
			return 0;
		}
	}
	return (size_t)(t - s);
}

/* The stock phrases a byte can start, in stock[]'s order (the first that
 * matches is the one blanked, as before), ended by -1: a phrase starts at
 * its first byte, one that starts with '#' at any digit. */
#define NSTOCK (sizeof stock / sizeof stock[0])    /* the phrases and the NULL */
_Static_assert(NSTOCK < 127, "stock_by holds a phrase's index in a signed char");
static signed char stock_by[256][NSTOCK];

static void stock_index(void)
{
	unsigned char fill[256] = { 0 };

	memset(stock_by, -1, sizeof stock_by);
	for (int i = 0; stock[i]; i++) {
		unsigned char c = (unsigned char)stock[i][0];

		if (c != '#')
			stock_by[c][fill[c]++] = (signed char)i;
		else
			for (c = '0'; c <= '9'; c++)
				stock_by[c][fill[c]++] = (signed char)i;
	}
}

void mem_unstock(char *text)
{
	/* Each byte is looked up in its own short list of phrases rather than
	 * tried against every phrase: most bytes (a space, a common letter)
	 * start a few phrases or none, and the walk over all 35 at each of
	 * them was ~45% of the coverage step's instructions (recall unstocks
	 * the text of each memory it measures). */
	static bool ready;

	if (!ready) {
		stock_index();
		ready = true;
	}
	for (char *s = text; *s; s++) {
		const signed char *cand = stock_by[(unsigned char)*s];

		for (int k = 0; cand[k] >= 0; k++) {
			size_t n = stock_at(s, stock[cand[k]]);

			if (n) {
				memset(s, ' ', n);
				s += n - 1;
				break;
			}
		}
	}
}

void mem_words(const char *text, size_t len,
	       void (*fn)(const char *w, size_t n, void *payload), void *payload)
{
	char word[64];
	size_t i = 0;

	while (i < len) {
		while (i < len && !word_byte((unsigned char)text[i]))
			i++;
		size_t n = 0;

		while (i < len && word_byte((unsigned char)text[i])) {
			unsigned char c = (unsigned char)text[i++];

			if (n < sizeof word)
				word[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
		}
		if (n)
			fn(word, n, payload);
	}
}

struct fh {
	float *v;
	size_t dim;
	uint64_t prev;          /* hash of the previous word; 0 = none */
};

static inline void fh_add(struct fh *f, uint64_t h, float w)
{
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	f->v[(h >> 1) % f->dim] += (h >> 63) ? -w : w;
}

static void fh_word(const char *w, size_t n, void *payload)
{
	struct fh *f = payload;

	if (mem_stopword(w, n)) {
		f->prev = 0;
		return;
	}
	uint64_t wh = fnv_bytes(fnv_byte(FNV_OFFSET, 'w'), w, n);

	fh_add(f, wh, 1.0f);
	if (f->prev)
		fh_add(f, fnv_byte(f->prev * 31 + wh, 'b'), 0.5f);
	f->prev = wh;
	if (n < 3)
		return;
	/* character 3-grams of ^word$ */
	char g[3];
	for (size_t i = 0; i + 3 <= n + 2; i++) {
		for (size_t k = 0; k < 3; k++) {
			size_t p = i + k;

			g[k] = p == 0 ? '^' : p == n + 1 ? '$' : w[p - 1];
		}
		fh_add(f, fnv_bytes(fnv_byte(FNV_OFFSET, 'c'), g, 3), 0.3f);
	}
}

void memory_embed_local(float *out, size_t dim, const char *text, size_t len)
{
	struct fh f = { .v = out, .dim = dim };
	double norm = 0;

	memset(out, 0, dim * sizeof *out);
	mem_words(text, len, fh_word, &f);
	for (size_t i = 0; i < dim; i++)
		norm += (double)out[i] * out[i];
	if (norm > 0) {
		float inv = (float)(1 / sqrt(norm));

		for (size_t i = 0; i < dim; i++)
			out[i] *= inv;
	}
}

float memory_cosine(const float *a, const float *b, size_t dim)
{
	float s = 0;

	for (size_t i = 0; i < dim; i++)
		s += a[i] * b[i];
	return s;
}

static void normalise(float *v, size_t dim)
{
	double norm = 0;

	for (size_t i = 0; i < dim; i++)
		norm += (double)v[i] * v[i];
	if (norm > 0) {
		float inv = (float)(1 / sqrt(norm));

		for (size_t i = 0; i < dim; i++)
			v[i] *= inv;
	}
}

/* ---- API embeddings with the cache ------------------------------------ */

static int cache_get(float *out, size_t *dim, struct memory *m, struct db_stmt *s, const char *hash)
{
	int step, rc = 0;

	db_reset(s);
	db_bind_text(s, 1, m->embedder_id);
	db_bind_text(s, 2, hash);
	step = db_step(s);
	if (step == DB_ROW) {
		size_t d = (size_t)(int)db_col_int64(s, 0), bytes;
		const void *vec = db_col_blob(s, 1, &bytes);

		if (bytes != d * sizeof(float) || (*dim && d != *dim))
			return forge_error("cached embedding of size %zu, expected %zu: delete the "
					   "memory_embeddings rows of '%s'", d, *dim, m->embedder_id);
		*dim = d;
		if (out)
			memcpy(out, vec, bytes);
		rc = 1;
	} else if (step != DB_DONE) {
		rc = mem_fail(m, "cannot read the embedding cache");
	}
	db_reset(s);
	return rc;
}

static int cache_put(struct memory *m, const char *hash, const float *v, size_t dim)
{
	struct db_stmt *s;
	int rc = 0;

	if (store_readonly(m->st))
		return 0;	/* a command that only reads: the cache stays as it is */
	if (mem_prepare(&s, m, "INSERT INTO memory_embeddings (model, hash, dim, vec, created_at) "
			"VALUES (?, ?, ?, ?, ?) ON CONFLICT (model, hash) DO NOTHING") < 0)
		return -1;
	db_bind_text(s, 1, m->embedder_id);
	db_bind_text(s, 2, hash);
	db_bind_int64(s, 3, (int)dim);
	db_bind_blob(s, 4, v, dim * sizeof *v);
	db_bind_int64(s, 5, memory_now(m));
	if (db_step(s) != DB_DONE)
		rc = mem_fail(m, "cannot write the embedding cache");
	db_finalize(s);
	return rc;
}

#define API_BATCH 64

static int embed_api(float **out, size_t *dim, struct memory *m, const char *const *texts,
		     const size_t *lens, size_t n)
{
	struct llm_embed_options eo = {
		.provider = m->embed_provider,
		.base_url = m->embed_base_url,
		.model = m->embed_model,
		.max_retries = -1,
	};
	char (*hash)[33] = xcalloc(n ? n : 1, sizeof *hash);
	size_t *missing = xcalloc(n ? n : 1, sizeof *missing), nmiss = 0;
	float *res = NULL, *tmp = NULL;
	struct db_stmt *s = NULL;
	size_t d = 0;
	int rc = -1;

	if (mem_prepare(&s, m, "SELECT dim, vec FROM memory_embeddings WHERE model = ? AND hash = ?") < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		mem_hash_hex(hash[i], texts[i], lens[i]);
		int got = cache_get(NULL, &d, m, s, hash[i]);

		if (got < 0)
			goto out;
		if (!got)
			missing[nmiss++] = i;
	}
	for (size_t b = 0; b < nmiss; b += API_BATCH) {
		size_t k = nmiss - b < API_BATCH ? nmiss - b : API_BATCH, got_dim = 0;
		const char *batch[API_BATCH];
		char *copies[API_BATCH];

		for (size_t j = 0; j < k; j++) {
			copies[j] = xstrndup(texts[missing[b + j]], lens[missing[b + j]]);
			batch[j] = copies[j];
		}
		int erc = llm_embed(&tmp, &got_dim, &eo, batch, k);

		for (size_t j = 0; j < k; j++)
			free(copies[j]);
		if (erc < 0) {
			forge_error_prefix("embedding with '%s'", m->embedder_id);
			goto out;
		}
		if (d && got_dim != d) {
			forge_error("the embedding API returned %zu dimensions, the cache holds %zu",
				    got_dim, d);
			goto out;
		}
		d = got_dim;
		for (size_t j = 0; j < k; j++) {
			normalise(tmp + j * d, d);
			if (cache_put(m, hash[missing[b + j]], tmp + j * d, d) < 0)
				goto out;
		}
		free(tmp);
		tmp = NULL;
	}
	if (!d && n) {
		forge_error("no embedding dimension known for '%s'", m->embedder_id);
		goto out;
	}
	res = xcalloc(n * d + 1, sizeof *res);
	for (size_t i = 0; i < n; i++) {
		size_t dd = d;

		if (cache_get(res + i * d, &dd, m, s, hash[i]) != 1) {
			forge_error("embedding of text %zu missing from the cache", i);
			goto out;
		}
	}
	*out = res;
	*dim = d;
	res = NULL;
	rc = 0;
out:
	db_finalize(s);
	free(res);
	free(tmp);
	free(hash);
	free(missing);
	return rc;
}

int mem_embed_many(float **out, size_t *dim, struct memory *m, const char *const *texts,
		   const size_t *lens, size_t n)
{
	*out = NULL;
	*dim = 0;
	if (m->embed_provider)
		return embed_api(out, dim, m, texts, lens, n);
	size_t d = (size_t)m->dim;
	float *v = xcalloc(n * d + 1, sizeof *v);

	for (size_t i = 0; i < n; i++)
		memory_embed_local(v + i * d, d, texts[i], lens[i]);
	*out = v;
	*dim = d;
	return 0;
}

int memory_embed(float **out, size_t *dim, struct memory *m, const char *text)
{
	size_t len = strlen(text);

	return mem_embed_many(out, dim, m, &text, &len, 1);
}
