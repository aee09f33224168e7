/*
 * bench-memory - the memory benchmarks of `make bench` (scripts/bench-memory.sh).
 *
 *   bench-memory load DB N        a synthetic set of N memories, bulk-loaded
 *                                 (near-duplicate pairs and episode clusters
 *                                 linked), then the vector file built
 *   bench-memory recall DB Q      Q recalls of generated queries: p50/p95 ms
 *   bench-memory consolidate DB   one consolidation (no LLM): seconds + report
 *   bench-memory embed N          local embedding throughput
 *   bench-memory cold DB FILE R   each line of FILE as a query, R rounds: a
 *                                 fresh store and memory handle per query (as a
 *                                 `forge memory search` process has), --peek;
 *                                 the median CPU time (this thread's) of open +
 *                                 recall + close, and of recall alone
 *
 * The data is deterministic (a fixed PRNG): words drawn from a Zipf-like
 * distribution over a 20,000-word pseudo vocabulary, 20-60 words each.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "memory/memory.h"
#include "store/store.h"

#define VOCAB 20000

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double unif(void)
{
	return (double)(next() >> 11) / 9007199254740992.0;
}

static char vocab[VOCAB][16];
static double zipf_cdf[VOCAB];

static void make_vocab(void)
{
	static const char *syl[] = { "ka", "ro", "mi", "te", "lu", "san", "dor", "vel", "qui", "pa",
				     "zen", "tor", "ex", "ni", "bo", "cha", "fi", "gra", "hu", "jo" };
	double sum = 0;

	for (int i = 0; i < VOCAB; i++) {
		int n = 2 + (int)(next() % 3);
		size_t len = 0;

		for (int k = 0; k < n; k++) {
			const char *s = syl[next() % 20];
			size_t l = strlen(s);

			memcpy(vocab[i] + len, s, l);
			len += l;
		}
		vocab[i][len] = 0;
		sum += 1.0 / pow(i + 1, 1.07);
		zipf_cdf[i] = sum;
	}
	for (int i = 0; i < VOCAB; i++)
		zipf_cdf[i] /= sum;
}

static const char *word(void)
{
	double u = unif();
	int lo = 0, hi = VOCAB - 1;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (zipf_cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return vocab[lo];
}

static void sentence(struct buf *b, int words)
{
	buf_reset(b);
	for (int i = 0; i < words; i++)
		buf_addf(b, "%s%s", i ? " " : "", word());
}

static int open_all(struct store **st, struct memory **m, const char *db)
{
	if (store_open(st, db) < 0 || memory_open(m, *st, NULL) < 0) {
		fprintf(stderr, "bench-memory: %s\n", forge_last_error());
		return -1;
	}
	return 0;
}

static const char *types[] = { "episodic", "semantic", "procedural" };

static int cmd_load(const char *db, long n)
{
	struct store *st;
	struct memory *m;
	struct buf text = BUF_INIT, ctx = BUF_INIT;
	int64_t now = now_ms(), t0 = monotonic_ms();
	char prev_id[ULID_LEN + 1] = "", prev_text[4096] = "";
	long batch = 20000;

	if (open_all(&st, &m, db) < 0)
		return 1;
	for (long base = 0; base < n; base += batch) {
		jv items = jv_array();

		for (long i = base; i < n && i < base + batch; i++) {
			char id[ULID_LEN + 1];
			jv o = jv_object(), rels = jv_array();
			const char *type = types[next() % 3];

			ulid_new(id);
			if (i % 50 == 1 && *prev_id) {
				/* a near-duplicate of the previous memory */
				buf_reset(&text);
				buf_addf(&text, "%s %s", prev_text, word());
				jv r = jv_object();

				r = json_set(r, "id", jv_string(prev_id));
				r = json_set(r, "relationship", jv_string("similar"));
				r = json_set(r, "similarity", jv_number(0.95));
				rels = jv_array_append(rels, r);
				type = "semantic";
			} else {
				sentence(&text, 20 + (int)(next() % 40));
			}
			sentence(&ctx, 4 + (int)(next() % 6));
			int64_t created = now - (int64_t)(unif() * 200 * MEMORY_DAY_MS);
			int64_t last = created + (int64_t)(unif() * (double)(now - created));

			o = json_set(o, "id", jv_string(id));
			o = json_set(o, "type", jv_string(type));
			o = json_set(o, "content", jv_string(text.buf));
			o = json_set(o, "context", jv_string(ctx.buf));
			o = json_set(o, "tags", JV_ARRAY(jv_string(word()), jv_string(types[next() % 3])));
			o = json_set(o, "confidence", jv_number(round((0.15 + unif() * 0.8) * 100) / 100));
			o = json_set(o, "source", jv_string("bench"));
			o = json_set(o, "created_at", jv_number((double)created));
			o = json_set(o, "last_accessed", jv_number((double)last));
			o = json_set(o, "relationships", rels);
			items = jv_array_append(items, o);
			snprintf(prev_id, sizeof prev_id, "%s", id);
			snprintf(prev_text, sizeof prev_text, "%.4000s", text.buf);
		}
		if (memory_store_batch(NULL, NULL, m, items, false) < 0) {
			fprintf(stderr, "bench-memory: %s\n", forge_last_error());
			return 1;
		}
	}
	double load_s = (double)(monotonic_ms() - t0) / 1000;

	t0 = monotonic_ms();
	if (store_exec(st, "INSERT INTO memories_fts (memories_fts) VALUES ('optimize')") < 0 ||
	    memory_index_sync(NULL, m) < 0) {
		fprintf(stderr, "bench-memory: %s\n", forge_last_error());
		return 1;
	}
	printf("load %ld memories: %.1f s (%.0f rows/s); fts optimize + vector file: %.1f s\n", n,
	       load_s, (double)n / load_s, (double)(monotonic_ms() - t0) / 1000);
	buf_release(&text);
	buf_release(&ctx);
	memory_free(m);
	store_free(st);
	return 0;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cmd_recall(const char *db, long q)
{
	struct store *st;
	struct memory *m;
	struct buf text = BUF_INIT;
	double *t = xcalloc((size_t)q, sizeof *t);
	long results = 0;

	if (open_all(&st, &m, db) < 0)
		return 1;
	int64_t s0 = monotonic_ms();

	if (memory_index_sync(NULL, m) < 0) {
		fprintf(stderr, "bench-memory: %s\n", forge_last_error());
		return 1;
	}
	double open_ms = (double)(monotonic_ms() - s0);

	for (long i = 0; i < q; i++) {
		struct memory_query mq;
		struct timespec a, b;
		jv out;

		sentence(&text, 4 + (int)(next() % 8));
		memory_query_init(&mq, text.buf);
		mq.no_touch = i % 2 == 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (memory_recall(&out, m, &mq) < 0) {
			fprintf(stderr, "bench-memory: %s\n", forge_last_error());
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		results += jv_array_length(out);
	}
	qsort(t, (size_t)q, sizeof *t, dbl_cmp);
	printf("recall: p50 %.2f ms  p95 %.2f ms  (%ld queries, %.1f results each; map/sync %.0f ms)\n",
	       t[q / 2], t[(q * 95) / 100], q, (double)results / (double)q, open_ms);
	free(t);
	buf_release(&text);
	memory_free(m);
	store_free(st);
	return 0;
}

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmd_cold(const char *db, const char *file, long rounds)
{
	FILE *f = fopen(file, "r");
	char line[2048];
	size_t n = 0, cap = 0;
	double *all = NULL, *rec = NULL;

	if (!f) {
		fprintf(stderr, "bench-memory: cannot read '%s'\n", file);
		return 1;
	}
	for (long r = 0; r < rounds; r++) {
		rewind(f);
		while (fgets(line, sizeof line, f)) {
			struct store *st;
			struct memory *m;
			struct memory_query mq;
			jv out;

			line[strcspn(line, "\n")] = 0;
			if (!*line)
				continue;
			if (n == cap) {
				cap = cap * 2 + 64;
				all = xrealloc(all, cap * sizeof *all);
				rec = xrealloc(rec, cap * sizeof *rec);
			}
			double t0 = cpu_ms();

			if (open_all(&st, &m, db) < 0)
				return 1;
			memory_query_init(&mq, line);
			mq.no_touch = true;
			double t1 = cpu_ms();

			if (memory_recall(&out, m, &mq) < 0) {
				fprintf(stderr, "bench-memory: %s\n", forge_last_error());
				return 1;
			}
			rec[n] = cpu_ms() - t1;
			jv_free(out);
			memory_free(m);
			store_free(st);
			all[n++] = cpu_ms() - t0;
		}
	}
	fclose(f);
	if (!n)
		return 1;
	qsort(all, n, sizeof *all, dbl_cmp);
	qsort(rec, n, sizeof *rec, dbl_cmp);
	printf("cold recall: CPU ms p50 %.2f p95 %.2f (open + recall + close), recall p50 %.2f p95 %.2f "
	       "(%zu searches)\n", all[n / 2], all[(n * 95) / 100], rec[n / 2], rec[(n * 95) / 100], n);
	free(all);
	free(rec);
	return 0;
}

static int cmd_consolidate(const char *db)
{
	struct store *st;
	struct memory *m;
	jv report;

	if (open_all(&st, &m, db) < 0)
		return 1;
	int64_t t0 = monotonic_ms();

	if (memory_consolidate(&report, m, NULL) < 0) {
		fprintf(stderr, "bench-memory: %s\n", forge_last_error());
		return 1;
	}
	double s = (double)(monotonic_ms() - t0) / 1000;
	char *r = json_dumps(report, true);

	printf("consolidate: %.2f s  %s\n", s, r);
	free(r);
	memory_free(m);
	store_free(st);
	return 0;
}

static int cmd_embed(long n)
{
	struct buf text = BUF_INIT;
	float v[256];
	size_t bytes = 0;
	struct buf *texts = xcalloc(1000, sizeof *texts);

	for (int i = 0; i < 1000; i++) {
		buf_init(&texts[i], 0);
		sentence(&texts[i], 40 + (int)(next() % 30));
	}
	int64_t t0 = monotonic_ms();

	for (long i = 0; i < n; i++) {
		memory_embed_local(v, 256, texts[i % 1000].buf, texts[i % 1000].len);
		bytes += texts[i % 1000].len;
	}
	double s = (double)(monotonic_ms() - t0) / 1000;

	printf("embed (local, 256 dims): %.0f texts/s, %.1f MB/s, %.2f us per %zu-byte text\n",
	       (double)n / s, (double)bytes / s / 1e6, s * 1e6 / (double)n, bytes / (size_t)n);
	for (int i = 0; i < 1000; i++)
		buf_release(&texts[i]);
	free(texts);
	buf_release(&text);
	return 0;
}

int main(int argc, char **argv)
{
	long n = 0;

	make_vocab();
	if (argc >= 3 && strcmp(argv[1], "embed") == 0 && forge_parse_long(&n, argv[2], 1, 1L << 40) == 0)
		return cmd_embed(n);
	if (argc >= 4 && strcmp(argv[1], "load") == 0 && forge_parse_long(&n, argv[3], 1, 1L << 40) == 0)
		return cmd_load(argv[2], n);
	if (argc >= 4 && strcmp(argv[1], "recall") == 0 && forge_parse_long(&n, argv[3], 1, 1L << 30) == 0)
		return cmd_recall(argv[2], n);
	if (argc >= 5 && strcmp(argv[1], "cold") == 0 && forge_parse_long(&n, argv[4], 1, 1000) == 0)
		return cmd_cold(argv[2], argv[3], n);
	if (argc >= 3 && strcmp(argv[1], "consolidate") == 0)
		return cmd_consolidate(argv[2]);
	fprintf(stderr, "usage: bench-memory load DB N | recall DB Q | consolidate DB | embed N | "
		"cold DB FILE ROUNDS\n");
	return 2;
}
