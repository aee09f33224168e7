/*
 * memory_index.c - the vector file "<db>.vectors": int8 vectors of the
 * memories, scanned at memory speed (memory.h, THE VECTOR FILE).
 *
 * Layout: a 64-byte header, then one row per memory in seq order:
 *   int64 seq | float scale | uint8 type | 3 bytes pad | int8 v[vdim]
 * (vdim = dim rounded up to 16).  A vector is v * scale (scale =
 * max|x| / 127 of the normalised float vector).  The header records which
 * database (db_id), which embedder, the vector generation and the greatest
 * seq the rows cover.
 *
 * Writers hold flock(LOCK_EX) on "<path>.lock".  New rows are appended in
 * place (rows first, then the header that counts them); everything else
 * rebuilds into "<path>.tmp.PID" renamed over the file, so a process that
 * mapped the old file keeps a consistent (older) view.  Every row is
 * derived from SQLite, so a lost race only means another sync later.
 */
#include "memory/memory_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/forge.h"
#include "core/owner.h"
#include "core/json.h"

#define VMAGIC "FGVECS01"
#define HDR 64
#define ROWHDR 16

struct vhdr {
	char magic[8];
	uint32_t dim, vdim;
	uint64_t embedder, db;
	int64_t gen, max_seq;
	uint64_t count;
	uint64_t reserved;
};
_Static_assert(sizeof(struct vhdr) == HDR, "vector file header is 64 bytes");

struct vindex {
	struct vhdr h;
	uint8_t *data;          /* the rows (count * stride bytes) */
	void *map;              /* mmap'd file (file mode) */
	size_t map_len;
	uint8_t *heap;          /* in-process mode: header + rows */
	size_t heap_cap;
	int fd1;                /* the mapped file's descriptor + 1; 0 = none */
	uint8_t *copy;          /* a small mapped file's rows, read at once (copy_rows) */
	bool copy_tried;        /* copy_rows ran (once a map) */
	size_t reads;           /* reads of the mapped file's rows (vindex_file_reads) */
	bool populated;         /* the map made resident for a scan (vindex_search) */
	int64_t first, last;    /* the seqs of the first and last rows */
};

struct stamp {
	uint64_t db;
	int64_t gen, max_seq;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static size_t stride_of(const struct vhdr *h)
{
	return ROWHDR + h->vdim;
}

static void unmap(struct vindex *v)
{
	if (v->map)
		munmap(v->map, v->map_len);
	if (v->fd1)
		close(v->fd1 - 1);
	v->fd1 = 0;
	v->populated = false;
	v->map = NULL;
	v->map_len = 0;
	free(v->copy);
	v->copy = NULL;
	v->copy_tried = false;
	v->reads = 0;
	v->data = v->heap ? v->heap + HDR : NULL;
}

void vindex_free(struct vindex *v)
{
	if (!v)
		return;
	unmap(v);
	free(v->heap);
	free(v);
}

static int read_stamp(struct stamp *st, struct memory *m)
{
	struct db_stmt *s;
	int rc = 0;

	if (mem_cached(&s, m, MS_STAMP, "SELECT db_id, vec_gen, (SELECT coalesce(max(seq), 0) "
		       "FROM memories) FROM memory_meta WHERE k = 1") < 0)
		return -1;
	if (db_step(s) == DB_ROW) {
		st->db = hash_str(db_col_text(s, 0));
		st->gen = db_col_int64(s, 1);
		st->max_seq = db_col_int64(s, 2);
	} else {
		rc = mem_fail(m, "cannot read the memory stamp");
	}
	db_reset(s);
	return rc;
}

static bool same_base(const struct vhdr *h, const struct stamp *st, uint64_t embedder)
{
	return memcmp(h->magic, VMAGIC, 8) == 0 && h->db == st->db && h->gen == st->gen &&
	       h->embedder == embedder;
}

static void quantize(uint8_t *row, int64_t seq, int type, const float *x, size_t dim, size_t vdim)
{
	float maxabs = 0, scale;
	int8_t *q = (int8_t *)(row + ROWHDR);

	memset(row, 0, ROWHDR + vdim);
	memcpy(row, &seq, sizeof seq);
	row[12] = (uint8_t)type;
	for (size_t i = 0; i < dim; i++)
		maxabs = fabsf(x[i]) > maxabs ? fabsf(x[i]) : maxabs;
	scale = maxabs > 0 ? maxabs / 127.0f : 0;
	memcpy(row + 8, &scale, sizeof scale);
	for (size_t i = 0; i < dim && scale > 0; i++)
		q[i] = (int8_t)lrintf(x[i] / scale);
}

static int type_code(const char *t)
{
	enum memory_type e;

	return t && memory_type_parse(&e, t) == 0 ? (int)e : 255;
}

/*
 * Rows with after < seq <= upto (archived ones left out when `active`) as
 * quantized rows appended to *rows; *dim set from the embedder (an API's
 * dimension when still 0).
 */
#define CHUNK 512
static int load_rows(struct buf *rows, size_t *nrows, uint32_t *dim, struct memory *m,
		     int64_t after, int64_t upto, bool active)
{
	struct db_stmt *s;
	const char *texts[CHUNK];
	size_t lens[CHUNK], n = 0;
	int64_t seqs[CHUNK];
	int types[CHUNK], step, rc = 0;
	struct buf tb[CHUNK];

	if (mem_prepare(&s, m, active ?
			"SELECT seq, type, content, context, tags FROM memories WHERE seq > ? AND "
			"seq <= ? AND archived_at IS NULL ORDER BY seq" :
			"SELECT seq, type, content, context, tags FROM memories WHERE seq > ? AND "
			"seq <= ? ORDER BY seq") < 0)
		return -1;
	for (int i = 0; i < CHUNK; i++)
		buf_init(&tb[i], 0);
	db_bind_int64(s, 1, after);
	db_bind_int64(s, 2, upto);
	do {
		step = db_step(s);
		if (step == DB_ROW) {
			seqs[n] = db_col_int64(s, 0);
			types[n] = type_code(db_col_text(s, 1));
			mem_embed_text(&tb[n], db_col_text(s, 2),
				       db_col_text(s, 3),
				       db_col_text(s, 4));
			texts[n] = tb[n].buf;
			lens[n] = tb[n].len;
			n++;
		} else if (step != DB_DONE) {
			rc = mem_fail(m, "cannot read memories for the vector file");
			break;
		}
		if (n == CHUNK || (step == DB_DONE && n)) {
			float *v;
			size_t d;

			if (mem_embed_many(&v, &d, m, texts, lens, n) < 0) {
				rc = -1;
				break;
			}
			if (*dim && d != *dim) {
				free(v);
				rc = forge_error("embedding size changed from %u to %zu", *dim, d);
				break;
			}
			*dim = (uint32_t)d;
			size_t vdim = (d + 15) & ~(size_t)15, st = ROWHDR + vdim;
			uint8_t row[ROWHDR + 4096];

			for (size_t i = 0; i < n; i++) {
				if (st > sizeof row) {
					rc = forge_error("embedding size %zu is too large", d);
					break;
				}
				quantize(row, seqs[i], types[i], v + i * d, d, vdim);
				buf_add(rows, row, st);
			}
			free(v);
			*nrows += n;
			n = 0;
		}
	} while (step == DB_ROW && rc == 0);
	db_finalize(s);
	for (int i = 0; i < CHUNK; i++)
		buf_release(&tb[i]);
	return rc;
}

/* ---- file mode ------------------------------------------------------- */

/* 0, -1 with a message, or 1 when the lock cannot be had for want of
 * permission (a directory or a file this user may not write). */
static int lock_file(int *fd, const char *path)
{
	struct buf p = BUF_INIT;

	buf_addf(&p, "%s.lock", path);
	*fd = open(p.buf, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (*fd < 0) {
		int e = errno;
		owner_error(e, p.buf, true, "cannot open '%s'", p.buf);
		buf_release(&p);
		return e == EACCES || e == EPERM || e == EROFS ? 1 : -1;
	}
	owner_follow(*fd, p.buf);
	buf_release(&p);
	while (flock(*fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(*fd);
			return forge_error("cannot lock '%s.lock': %s", path, strerror(errno));
		}
	}
	return 0;
}

/* A scan of a mapped file up to this size (vindex_search) makes the whole
 * map resident first, in one call rather than a page fault a page. */
#define VINDEX_POPULATE_MAX (512u << 10)

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* Map the file at path; false (no error) when it is missing or not ours. */
static int map_file(struct vindex *v, const char *path)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	unmap(v);
	memset(&v->h, 0, sizeof v->h);
	if (fd < 0)
		return errno == ENOENT ? 0 : forge_error("cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &sb) < 0 || (size_t)sb.st_size < HDR) {
		close(fd);
		return 0;
	}
	/* The map is not populated, whatever the file's size: recall reads the
	 * rows of its few candidates with a pread each (read_row), the map only
	 * when a row is not where it should be.  A 100K file is 27 MB of page
	 * tables to fill and tear down; and each page of a small file mapped
	 * whole and read (600 memories: 160 KB, 40 pages) cost a page fault and
	 * then ~18 us more to unmap at exit on a paravirtualised machine (the
	 * munmap of the 125 KB file of 460 memories, 0.6 ms), where the ~130
	 * preads of a search cost ~0.3 ms. */
	void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED) {
		close(fd);
		return forge_error("cannot map '%s': %s", path, strerror(errno));
	}
	struct vhdr h;

	memcpy(&h, p, HDR);
	if (memcmp(h.magic, VMAGIC, 8) != 0 || h.vdim % 16 ||
	    HDR + h.count * (ROWHDR + (uint64_t)h.vdim) > (uint64_t)sb.st_size) {
		munmap(p, (size_t)sb.st_size);
		close(fd);
		return 0;
	}
	v->h = h;
	v->map = p;
	v->map_len = (size_t)sb.st_size;
	v->data = (uint8_t *)p + HDR;
	v->fd1 = fd + 1;                /* kept: a row is read with pread (see read_row) */
	if (h.count) {
		memcpy(&v->first, v->data, sizeof v->first);
		memcpy(&v->last, v->data + (h.count - 1) * stride_of(&h), sizeof v->last);
	}
	return 1;
}

static int write_all(int fd, const void *p, size_t n, off_t off, const char *path)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = pwrite(fd, b, n, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return forge_error("cannot write '%s': %s", path, w < 0 ? strerror(errno) : "short write");
		b += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

static int file_rebuild(struct memory *m, const struct stamp *st, uint64_t emb)
{
	struct buf rows = BUF_INIT, tmp = BUF_INIT;
	struct vhdr h = { .embedder = emb, .db = st->db, .gen = st->gen, .max_seq = st->max_seq };
	size_t n = 0;
	int fd = -1, rc = -1;

	memcpy(h.magic, VMAGIC, 8);
	h.dim = m->embed_provider ? 0 : (uint32_t)m->dim;
	if (load_rows(&rows, &n, &h.dim, m, 0, st->max_seq, true) < 0)
		goto out;
	h.vdim = (h.dim + 15) & ~15u;
	h.count = n;
	buf_addf(&tmp, "%s.tmp.%ld", m->vec_path, (long)getpid());
	fd = open(tmp.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		forge_error("cannot create '%s': %s", tmp.buf, strerror(errno));
		goto out;
	}
	owner_follow(fd, tmp.buf);
	if (write_all(fd, &h, HDR, 0, tmp.buf) < 0 || write_all(fd, rows.buf, rows.len, HDR, tmp.buf) < 0)
		goto out;
	if (close(fd) < 0) {
		fd = -1;
		forge_error("cannot write '%s': %s", tmp.buf, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp.buf, m->vec_path) < 0) {
		forge_error("cannot rename '%s': %s", tmp.buf, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0 && tmp.len)
		unlink(tmp.buf);
	buf_release(&rows);
	buf_release(&tmp);
	return rc;
}

static int file_append(struct memory *m, const struct vhdr *cur, const struct stamp *st)
{
	struct buf rows = BUF_INIT;
	struct vhdr h = *cur;
	uint32_t dim = h.dim;
	size_t n = 0;
	int fd = -1, rc = -1;

	if (load_rows(&rows, &n, &dim, m, h.max_seq, st->max_seq, false) < 0)
		goto out;
	if (n && dim != h.dim) {
		rc = 1;          /* the size is new (first API vectors): rebuild */
		goto out;
	}
	fd = open(m->vec_path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		forge_error("cannot open '%s': %s", m->vec_path, strerror(errno));
		goto out;
	}
	off_t end = (off_t)(HDR + h.count * stride_of(&h));

	if (write_all(fd, rows.buf, rows.len, end, m->vec_path) < 0)
		goto out;
	h.count += n;
	h.max_seq = st->max_seq;
	if (write_all(fd, &h, HDR, 0, m->vec_path) < 0)
		goto out;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	buf_release(&rows);
	return rc;
}

static int sync_heap(struct memory *m, const struct stamp *st, uint64_t emb, bool *rebuilt);

static int sync_file(struct memory *m, const struct stamp *st, uint64_t emb, bool *rebuilt)
{
	struct vindex *v = m->idx;
	bool rebuild = true;
	int lock, rc, mapped;

	rc = lock_file(&lock, m->vec_path);
	if (rc > 0) {
		/* another user's database (README: a read answers there): the
		 * vectors in this process's memory, as for a read-only store */
		free(m->vec_path);
		m->vec_path = NULL;
		return sync_heap(m, st, emb, rebuilt);
	}
	if (rc < 0)
		return -1;
	rc = -1;
	mapped = map_file(v, m->vec_path);
	if (mapped < 0)
		goto out;
	if (mapped && same_base(&v->h, st, emb) && v->h.max_seq == st->max_seq) {
		rc = 0;      /* another process brought it up to date */
		goto out;
	}
	if (mapped && same_base(&v->h, st, emb) && v->h.max_seq < st->max_seq) {
		struct vhdr h = v->h;
		int r;

		unmap(v);
		r = file_append(m, &h, st);
		if (r < 0)
			goto out;
		rebuild = r == 1;
	}
	if (rebuild) {
		unmap(v);
		*rebuilt = true;
		if (file_rebuild(m, st, emb) < 0)
			goto out;
	}
	rc = map_file(v, m->vec_path) == 1 ? 0 : forge_error("vector file '%s' is unreadable after "
							      "writing it", m->vec_path);
out:
	close(lock);     /* releases the lock */
	return rc;
}

/* ---- in-process mode ------------------------------------------------- */

static int sync_heap(struct memory *m, const struct stamp *st, uint64_t emb, bool *rebuilt)
{
	struct vindex *v = m->idx;
	struct buf rows = BUF_INIT;
	size_t n = 0;
	int rc = -1;
	bool append = v->heap && same_base(&v->h, st, emb) && v->h.max_seq < st->max_seq;
	uint32_t dim = append ? v->h.dim : m->embed_provider ? 0 : (uint32_t)m->dim;

	if (load_rows(&rows, &n, &dim, m, append ? v->h.max_seq : 0, st->max_seq, !append) < 0)
		goto out;
	if (append && n && dim != v->h.dim) {
		buf_release(&rows);
		v->h.gen = -1;
		rc = sync_heap(m, st, emb, rebuilt);
		goto out;
	}
	if (!append) {
		*rebuilt = true;
		memset(&v->h, 0, sizeof v->h);
		memcpy(v->h.magic, VMAGIC, 8);
		v->h.embedder = emb;
		v->h.db = st->db;
		v->h.gen = st->gen;
		v->h.dim = dim;
		v->h.vdim = (dim + 15) & ~15u;
	}
	size_t need = HDR + (v->h.count + n) * stride_of(&v->h);

	if (need > v->heap_cap) {
		v->heap_cap = need * 3 / 2 + 4096;
		v->heap = xrealloc(v->heap, v->heap_cap);
	}
	memcpy(v->heap + HDR + v->h.count * stride_of(&v->h), rows.buf, rows.len);
	v->h.count += n;
	v->h.max_seq = st->max_seq;
	memcpy(v->heap, &v->h, HDR);
	v->data = v->heap + HDR;
	rc = 0;
out:
	buf_release(&rows);
	return rc;
}

int vindex_sync(struct memory *m, bool *rebuilt)
{
	struct stamp st;
	bool dummy;
	uint64_t emb = hash_str(m->embedder_id);

	if (!rebuilt)
		rebuilt = &dummy;
	*rebuilt = false;
	if (!m->idx)
		m->idx = xcalloc(1, sizeof *m->idx);
	if (read_stamp(&st, m) < 0)
		return -1;
	if ((m->idx->map || m->idx->heap) && same_base(&m->idx->h, &st, emb) &&
	    m->idx->h.max_seq == st.max_seq)
		return 0;
	return m->vec_path ? sync_file(m, &st, emb, rebuilt) : sync_heap(m, &st, emb, rebuilt);
}

int memory_index_sync(bool *rebuilt, struct memory *m)
{
	return vindex_sync(m, rebuilt);
}

/* ---- search ---------------------------------------------------------- */

static void quantize_query(int8_t *q, float *scale, const float *x, size_t dim, size_t vdim)
{
	float maxabs = 0;

	memset(q, 0, vdim);
	for (size_t i = 0; i < dim; i++)
		maxabs = fabsf(x[i]) > maxabs ? fabsf(x[i]) : maxabs;
	*scale = maxabs > 0 ? maxabs / 127.0f : 0;
	for (size_t i = 0; i < dim && *scale > 0; i++)
		q[i] = (int8_t)lrintf(x[i] / *scale);
}

/* The dot product of two int8 vectors of n (a multiple of 16) elements. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define DOT_ATTR __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("O3")))
#elif defined(__GNUC__) && !defined(__clang__)
#define DOT_ATTR __attribute__((optimize("O3")))
#else
#define DOT_ATTR
#endif
DOT_ATTR static int32_t dot_i8(const int8_t *restrict a, const int8_t *restrict b, size_t n)
{
	int32_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += (int32_t)a[i] * (int32_t)b[i];
	return s;
}

struct topn {
	struct vhit *h;
	size_t n, cap;
};

static void top_push(struct topn *t, float cos, int64_t seq)
{
	size_t i;

	if (t->n < t->cap) {
		i = t->n++;
	} else if (cos > t->h[0].cos) {
		/* replace the smallest, sift down */
		i = 0;
		for (;;) {
			size_t l = 2 * i + 1, r = l + 1, s = i;
			float cv = cos;

			if (l < t->n && t->h[l].cos < cv)
				s = l, cv = t->h[l].cos;
			if (r < t->n && t->h[r].cos < cv)
				s = r;
			if (s == i)
				break;
			t->h[i] = t->h[s];
			i = s;
		}
		t->h[i] = (struct vhit){ seq, cos };
		return;
	} else {
		return;
	}
	while (i > 0 && t->h[(i - 1) / 2].cos > cos) {
		t->h[i] = t->h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	t->h[i] = (struct vhit){ seq, cos };
}

static int hit_cmp(const void *a, const void *b)
{
	const struct vhit *x = a, *y = b;

	return x->cos < y->cos ? 1 : x->cos > y->cos ? -1 : (x->seq > y->seq) - (x->seq < y->seq);
}

int vindex_search(struct vhit **out, size_t *count, struct memory *m, const float *q,
		  size_t dim, int type, size_t n)
{
	struct vindex *v = m->idx;
	struct topn t = { .cap = n ? n : 1 };

	*out = NULL;
	*count = 0;
	if (!v || !v->data || v->h.count == 0 || v->h.dim != dim)
		return 0;
	size_t vdim = v->h.vdim, stride = stride_of(&v->h);
	int8_t *qq = xcalloc(vdim, 1);
	float qs;

	quantize_query(qq, &qs, q, dim, vdim);
	if (v->map && !v->copy && !v->populated && v->map_len <= VINDEX_POPULATE_MAX) {
		v->populated = true;    /* best effort: before Linux 5.14 it faults in */
		(void)madvise(v->map, v->map_len, MADV_POPULATE_READ);
	}
	t.h = xcalloc(t.cap, sizeof *t.h);
	for (uint64_t i = 0; i < v->h.count; i++) {
		const uint8_t *row = v->data + i * stride;
		float rs;
		int64_t seq;

		if (type >= 0 && row[12] != (uint8_t)type)
			continue;
		memcpy(&rs, row + 8, sizeof rs);
		int32_t d = dot_i8(qq, (const int8_t *)(row + ROWHDR), vdim);
		float cos = (float)d * qs * rs;

		if (t.n == t.cap && cos <= t.h[0].cos)
			continue;
		memcpy(&seq, row, sizeof seq);
		top_push(&t, cos, seq);
	}
	free(qq);
	qsort(t.h, t.n, sizeof *t.h, hit_cmp);
	*out = t.h;
	*count = t.n;
	return 0;
}

static int64_t seq_at(const struct vindex *v, size_t i)
{
	int64_t s;

	memcpy(&s, v->data + i * stride_of(&v->h), sizeof s);
	return s;
}

/*
 * The first row whose seq is >= seq (count when none).  Seqs grow by one
 * but for deleted and archived memories, so the row is near where the seqs
 * were evenly spread: look there first, then halve (a few rows touched,
 * not the 17 pages of a plain binary search over 100K rows).
 */
static size_t row_of(const struct vindex *v, int64_t seq)
{
	size_t lo = 0, hi = v->h.count;
	int64_t first = seq_at(v, 0), last = seq_at(v, hi - 1);

	if (seq <= first)
		return 0;
	if (seq > last)
		return hi;
	size_t guess = (size_t)((double)(seq - first) / (double)(last - first) * (double)(hi - 1));

	/* bracket the row around the guess, widening by doubling */
	for (size_t step = 1; ; step *= 2) {
		size_t a = guess > step ? guess - step : 0, b = guess + step < hi ? guess + step : hi - 1;

		/* (ends: at the widest, row 0 is below seq and the last not) */
		if (seq_at(v, a) < seq && seq_at(v, b) >= seq) {
			lo = a + 1;
			hi = b + 1;
			break;
		}
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (seq_at(v, mid) < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Row seq of a mapped file into buf (ROW_WINDOW rows of room), read with
 * one pread of the rows around where it should be: a page fault per
 * candidate costs more than a read on a virtual machine, and a search
 * touches a few hundred rows of a file it does not scan.  NULL when the
 * row is not there (look it up in the map).
 */
#define ROW_WINDOW 8
static const uint8_t *read_row(struct vindex *v, int64_t seq, uint8_t *buf, size_t cap)
{
	size_t stride = stride_of(&v->h), n = v->h.count, guess, at, k;

	if (!v->fd1 || ROW_WINDOW * stride > cap || n == 0 || seq < v->first || seq > v->last)
		return NULL;
	guess = v->last == v->first ? 0 :
		(size_t)((double)(seq - v->first) / (double)(v->last - v->first) * (double)(n - 1));
	at = guess > ROW_WINDOW / 2 ? guess - ROW_WINDOW / 2 : 0;
	k = n - at < ROW_WINDOW ? n - at : ROW_WINDOW;
	ssize_t got = pread(v->fd1 - 1, buf, k * stride, (off_t)(HDR + at * stride));

	v->reads++;

	for (size_t i = 0; got > 0 && i < (size_t)got / stride; i++) {
		int64_t s;

		memcpy(&s, buf + i * stride, sizeof s);
		if (s == seq)
			return buf + i * stride;
	}
	return NULL;
}

/*
 * A mapped file up to this size has its rows read whole, with one pread
 * into the heap (which the memory programs make resident at start,
 * app/memory_cli.c), at the first row a search looks up: recall looks up
 * the rows of all its candidates, ~190 for a query at 460 memories, and a
 * pread each (read_row) cost ~0.25 ms of system time where one read of
 * the 125 KB file costs ~5 us.  256 KiB: ~960 memories of the local
 * embedding.  A bigger file keeps a pread a row: 27 MB at 100K memories.
 */
#define VINDEX_COPY_MAX (256u << 10)

/* The rows of the mapped file into v->copy, v->data pointing there; as
 * before (the map and read_row) when it cannot be read, without trying
 * again for this map. */
static void copy_rows(struct vindex *v)
{
	size_t len = v->h.count * stride_of(&v->h), at = 0;
	uint8_t *p = malloc(len);

	v->copy_tried = true;

	while (p && at < len) {
		ssize_t got = pread(v->fd1 - 1, p + at, len - at, (off_t)(HDR + at));

		v->reads++;
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		at += (size_t)got;
	}
	if (!p || at < len) {
		free(p);
		return;
	}
	v->copy = p;
	v->data = p;
}

size_t vindex_file_reads(struct memory *m)
{
	return m->idx ? m->idx->reads : 0;
}

bool vindex_cosine(float *cos, struct memory *m, int64_t seq, const float *q, size_t dim)
{
	struct vindex *v = m->idx;
	uint8_t buf[ROW_WINDOW * (ROWHDR + 2048)];

	if (!v || !v->data || v->h.dim != dim || v->h.count == 0)
		return false;
	if (v->fd1 && !v->copy_tried && v->map_len <= VINDEX_COPY_MAX)
		copy_rows(v);
	const uint8_t *row = v->copy ? NULL : read_row(v, seq, buf, sizeof buf);

	if (!row) {
		size_t lo = row_of(v, seq);

		if (lo >= v->h.count)
			return false;
		row = v->data + lo * stride_of(&v->h);
	}
	int64_t s;
	float rs;
	double acc = 0;

	memcpy(&s, row, sizeof s);
	if (s != seq)
		return false;
	memcpy(&rs, row + 8, sizeof rs);
	for (size_t i = 0; i < dim; i++)
		acc += (double)q[i] * ((const int8_t *)(row + ROWHDR))[i];
	*cos = (float)(acc * rs);
	return true;
}

size_t vindex_rows(struct memory *m)
{
	return m->idx ? (size_t)m->idx->h.count : 0;
}

jv vindex_info(struct memory *m)
{
	struct vindex *v = m->idx;
	jv o = jv_object();

	o = json_set(o, "path", json_str_or_null(m->vec_path));
	o = json_set(o, "embedder", jv_string(m->embedder_id));
	o = json_set(o, "rows", jv_number(v ? (double)v->h.count : 0));
	o = json_set(o, "dim", jv_number(v ? v->h.dim : 0));
	o = json_set(o, "bytes", jv_number(v ? (double)(HDR + v->h.count * stride_of(&v->h)) : 0));
	return o;
}

/* ---- pgvector (PostgreSQL, when the server has it) ---------------------- */

/*
 * With pgvector (the `vector` extension created in the database) and an
 * API embedder, the deep vector search runs in the server: memory_vectors
 * holds each active memory's vector (made when missing or older than the
 * memory's text), ranked by cosine distance (<=>).  Everything runs under
 * a savepoint: any failure (no extension after all, vectors of another
 * size, a table made by another process at the same moment) rolls back to
 * it and the client ranks as without pgvector.
 *
 * NOT RUN: the test machines (Debian bookworm) have no pgvector package;
 * tests/pg.bats only checks the "absent" side.
 */
#define PGV_BATCH 256

static void pgv_text(struct buf *b, const float *v, size_t dim)
{
	buf_reset(b);
	buf_addch(b, '[');
	for (size_t i = 0; i < dim; i++)
		buf_addf(b, "%s%.9g", i ? "," : "", (double)v[i]);
	buf_addch(b, ']');
}

/* Vectors of the active memories that have none (or an older one): 1 when
 * more may be left, 0 done, -1. */
static int pgv_fill(struct memory *m)
{
	struct db_stmt *s = NULL, *ins = NULL;
	struct buf tb[PGV_BATCH], vt = BUF_INIT;
	const char *texts[PGV_BATCH];
	size_t lens[PGV_BATCH], n = 0, d = 0;
	int64_t seqs[PGV_BATCH], made[PGV_BATCH];
	float *v = NULL;
	int rc = -1;

	for (int i = 0; i < PGV_BATCH; i++)
		buf_init(&tb[i], 0);
	/* (made_at: the text's updated_at, so that a row done is not chosen again) */
	if (mem_prepare(&s, m, "SELECT m.seq, m.content, m.context, m.tags, m.updated_at FROM memories m "
			"LEFT JOIN memory_vectors v ON v.seq = m.seq WHERE m.archived_at IS NULL AND "
			"(v.seq IS NULL OR v.embedder <> ?1 OR v.made_at < m.updated_at) "
			"ORDER BY m.seq LIMIT 256") < 0)
		goto out;
	db_bind_text(s, 1, m->embedder_id);
	while (n < PGV_BATCH && db_step(s) == DB_ROW) {
		seqs[n] = db_col_int64(s, 0);
		made[n] = db_col_int64(s, 4);
		mem_embed_text(&tb[n], db_col_text(s, 1), db_col_text(s, 2), db_col_text(s, 3));
		texts[n] = tb[n].buf;
		lens[n] = tb[n].len;
		n++;
	}
	if (n && mem_embed_many(&v, &d, m, texts, lens, n) < 0)
		goto out;
	if (n && mem_prepare(&ins, m, "INSERT INTO memory_vectors (seq, embedder, made_at, vec) "
			     "VALUES (?1, ?2, ?3, CAST(?4 AS vector)) ON CONFLICT (seq) DO UPDATE SET "
			     "embedder = excluded.embedder, made_at = excluded.made_at, vec = excluded.vec") < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		db_reset(ins);
		pgv_text(&vt, v + i * d, d);
		db_bind_int64(ins, 1, seqs[i]);
		db_bind_text(ins, 2, m->embedder_id);
		db_bind_int64(ins, 3, made[i]);
		db_bind_text(ins, 4, vt.buf);
		if (db_step(ins) != DB_DONE) {
			mem_fail(m, "cannot store a vector in memory_vectors");
			goto out;
		}
	}
	rc = n == PGV_BATCH ? 1 : 0;
out:
	db_finalize(s);
	db_finalize(ins);
	for (int i = 0; i < PGV_BATCH; i++)
		buf_release(&tb[i]);
	buf_release(&vt);
	free(v);
	return rc;
}

static int pgv_query(struct vhit **out, size_t *count, struct memory *m, const float *q, size_t dim,
		     int type, size_t n)
{
	struct db_stmt *s = NULL;
	struct buf qt = BUF_INIT;
	size_t got = 0;
	int step, rc = -1;

	if (mem_prepare(&s, m, "SELECT v.seq, 1 - (v.vec <=> CAST(?1 AS vector)) FROM memory_vectors v "
			"JOIN memories m ON m.seq = v.seq WHERE v.embedder = ?2 AND m.archived_at IS NULL "
			"AND (CAST(?3 AS INTEGER) < 0 OR m.type = ?4) "
			"ORDER BY v.vec <=> CAST(?1 AS vector), v.seq LIMIT ?5") < 0)
		return -1;
	pgv_text(&qt, q, dim);
	db_bind_text(s, 1, qt.buf);
	db_bind_text(s, 2, m->embedder_id);
	db_bind_int64(s, 3, type);
	db_bind_text(s, 4, type >= 0 ? memory_type_name((enum memory_type)type) : "");
	db_bind_int64(s, 5, (int64_t)(n ? n : 1));
	*out = xcalloc(n + 1, sizeof **out);
	while ((step = db_step(s)) == DB_ROW && got < n) {
		(*out)[got].seq = db_col_int64(s, 0);
		(*out)[got].cos = (float)db_col_double(s, 1);
		got++;
	}
	if (step == DB_ROW || step == DB_DONE) {
		*count = got;
		rc = 0;
	} else {
		mem_fail(m, "cannot rank vectors with pgvector");
	}
	db_finalize(s);
	buf_release(&qt);
	return rc;
}

int vindex_pg_search(struct vhit **out, size_t *count, struct memory *m, const float *q, size_t dim,
		     int type, size_t n)
{
	int more = 0, rounds = 0;

	*out = NULL;
	*count = 0;
	if (!m->pg || !m->embed_provider || !mem_pgvector(m) || !db_in_transaction(m->st))
		return 0;
	if (store_exec(m->st, "SAVEPOINT forge_pgvector") < 0)
		return 0;
	if (!store_readonly(m->st)) {
		if (store_exec(m->st, "CREATE TABLE IF NOT EXISTS memory_vectors (seq bigint PRIMARY KEY "
			       "REFERENCES memories (seq) ON DELETE CASCADE, embedder text NOT NULL, "
			       "made_at bigint NOT NULL, vec vector NOT NULL)") < 0)
			goto fallback;
		while ((more = pgv_fill(m)) == 1 && ++rounds < 4096)
			;
		if (more < 0)
			goto fallback;
	}
	if (pgv_query(out, count, m, q, dim, type, n) < 0)
		goto fallback;
	if (store_exec(m->st, "RELEASE SAVEPOINT forge_pgvector") < 0)
		goto fallback;
	return 1;
fallback:
	free(*out);
	*out = NULL;
	*count = 0;
	(void)store_exec(m->st, "ROLLBACK TO SAVEPOINT forge_pgvector");
	(void)store_exec(m->st, "RELEASE SAVEPOINT forge_pgvector");
	return 0;
}
