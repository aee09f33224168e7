/*
 * diff_combine.c - a file in several sections of one diff, made one
 * change; see diff_internal.h and diff.h.
 *
 * Two sections of a file, f1 (X -> Y) then f2 (Y -> Z), make one change
 * X -> Z.  Each line of the result is a row:
 *   - a line f2 shows ('+', or ' ' and '-' on Y's line y): '+' stays '+';
 *     a ' ' is '+' when f1 added y, else ' ' with y's line in X; a '-' of
 *     a line f1 added cancels it (the text goes to `dropped`), else '-';
 *   - a line f1 shows that f2 left alone: the same kind, moved to Z by the
 *     lines f2's hunks before it added and removed; f1's '-' lines too.
 * Rows are sorted by their place in Z ('-' rows before the line they come
 * before) and cut into hunks where Z's numbering jumps.  f2's context and
 * removed lines on a line f1 shows must read what f1 left there, or the
 * two do not follow one another.
 */
#include "git/diff_internal.h"
#include "core/buf.h"
#include "core/forge.h"

#include <stdlib.h>
#include <string.h>

/* One line of the combined change. */
struct row {
	int z;                  /* its post-image line ('+', ' '), or the one it comes before ('-') */
	int x;                  /* its pre-image line (' ', '-'); 0 for '+' */
	char kind;
	const char *text;       /* borrowed from a section */
};

/* A section's line, looked up by its number on one side. */
struct at {
	int key;                /* its number: post-image (f1's shown lines) or pre-image (f2's) */
	int pos;                /* f2's: the post-image line it is (' ') or comes before ('-') */
	const struct diff_line *l;
};

/* A hunk on one side: its last line there (the line before it when it has
 * none), and what it and the hunks before it add to the numbering. */
struct span {
	int end;
	long delta;
};

/* f's lines, indexed */
struct index {
	struct at *shown;       /* '+' and ' ' lines by post-image number */
	size_t nshown;
	struct at *old;         /* ' ' and '-' lines by pre-image number */
	size_t nold;
	struct span *news, *olds;       /* the hunks by their end on each side */
	size_t nspans;
};

static int cmp_at(const void *a, const void *b)
{
	const struct at *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return (x->end > y->end) - (x->end < y->end);
}

/* Sort spans by end, then make each delta the sum up to it. */
static void sum_spans(struct span *s, size_t n)
{
	qsort(s, n, sizeof *s, cmp_span);
	for (size_t i = 1; i < n; i++)
		s[i].delta += s[i - 1].delta;
}

static void index_make(struct index *ix, const struct diff_file *f)
{
	size_t nlines = 0;

	memset(ix, 0, sizeof *ix);
	for (size_t j = 0; j < f->nhunks; j++)
		nlines += f->hunks[j].nlines;
	ix->shown = xcalloc(nlines + 1, sizeof *ix->shown);
	ix->old = xcalloc(nlines + 1, sizeof *ix->old);
	ix->news = xcalloc(f->nhunks + 1, sizeof *ix->news);
	ix->olds = xcalloc(f->nhunks + 1, sizeof *ix->olds);
	for (size_t j = 0; j < f->nhunks; j++) {
		const struct diff_hunk *h = &f->hunks[j];
		int next = h->new_count > 0 ? h->new_start : h->new_start + 1;

		for (size_t k = 0; k < h->nlines; k++) {
			const struct diff_line *l = &h->lines[k];

			if (l->kind != '+')
				ix->old[ix->nold++] = (struct at){ l->old_line, l->kind == ' ' ? l->new_line : next, l };
			if (l->kind != '-') {
				ix->shown[ix->nshown++] = (struct at){ l->new_line, 0, l };
				next = l->new_line + 1;
			}
		}
		ix->news[j] = (struct span){ h->new_count > 0 ? h->new_start + h->new_count - 1 : h->new_start,
					     (long)h->new_count - h->old_count };
		ix->olds[j] = (struct span){ h->old_count > 0 ? h->old_start + h->old_count - 1 : h->old_start,
					     (long)h->new_count - h->old_count };
	}
	ix->nspans = f->nhunks;
	qsort(ix->shown, ix->nshown, sizeof *ix->shown, cmp_at);
	qsort(ix->old, ix->nold, sizeof *ix->old, cmp_at);
	sum_spans(ix->news, ix->nspans);
	sum_spans(ix->olds, ix->nspans);
}

static void index_release(struct index *ix)
{
	free(ix->shown);
	free(ix->old);
	free(ix->news);
	free(ix->olds);
}

static const struct at *lookup(const struct at *v, size_t n, int key)
{
	struct at k = { key, 0, NULL };

	return n ? bsearch(&k, v, n, sizeof *v, cmp_at) : NULL;
}

/* What the hunks that end before line y add to the numbering. */
static long shift(const struct span *s, size_t n, int y)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].end < y)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? s[lo - 1].delta : 0;
}

static int clamp(long v)
{
	return v < 0 ? 0 : v > 100000000 ? 100000000 : (int)v;
}

struct rows {
	struct row *v;
	size_t n, cap;
};

static void push(struct rows *r, int z, int x, char kind, const char *text)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->v = xrealloc(r->v, r->cap * sizeof *r->v);
	}
	r->v[r->n++] = (struct row){ z, x, kind, text };
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int kx = x->kind != '-', ky = y->kind != '-';

	if (x->z != y->z)
		return (x->z > y->z) - (x->z < y->z);
	if (kx != ky)
		return kx - ky;
	return (x->x > y->x) - (x->x < y->x);
}

static void add_dropped(struct diff_file *f, const char *text)
{
	f->dropped = xrealloc(f->dropped, (f->ndropped + 1) * sizeof *f->dropped);
	f->dropped[f->ndropped++] = (struct diff_line){ 0, 0, '+', xstrdup(text) };
}

static struct diff_hunk *new_hunk(struct diff_file *f)
{
	f->hunks = xrealloc(f->hunks, (f->nhunks + 1) * sizeof *f->hunks);
	struct diff_hunk *h = &f->hunks[f->nhunks++];

	memset(h, 0, sizeof *h);
	h->section = xstrdup("");
	return h;
}

/* The sorted rows as out's hunks (out's counts too). */
static void make_hunks(struct diff_file *out, const struct rows *r)
{
	struct diff_hunk *h = NULL;
	int next_z = 0, first_z = 0, adds = 0, dels = 0, adds0 = 0, dels0 = 0;
	bool first_new = false, first_old = false;

	for (size_t i = 0; i <= r->n; i++) {
		const struct row *w = i < r->n ? &r->v[i] : NULL;

		if (h && (!w || w->z != next_z)) {
			/* an empty side's start is the line before the hunk */
			if (!first_new)
				h->new_start = clamp((long)first_z - 1);
			if (!first_old)
				h->old_start = clamp((long)first_z - 1 - (adds0 - dels0));
			if (adds == adds0 && dels == dels0) {
				/* context alone: a change a later section undid */
				for (size_t k = 0; k < h->nlines; k++)
					free(h->lines[k].text);
				free(h->lines);
				free(h->section);
				out->nhunks--;
			}
			h = NULL;
		}
		if (!w)
			break;
		if (!h) {
			h = new_hunk(out);
			first_z = w->z;
			adds0 = adds;
			dels0 = dels;
			first_new = first_old = false;
		}
		if ((h->nlines & (h->nlines - 1)) == 0)
			h->lines = xrealloc(h->lines, (h->nlines ? h->nlines * 2 : 4) * sizeof *h->lines);
		h->lines[h->nlines++] = (struct diff_line){ w->kind == '-' ? 0 : w->z, w->kind == '+' ? 0 : w->x,
							    w->kind, xstrdup(w->text) };
		if (w->kind != '-') {
			if (!first_new)
				h->new_start = w->z;
			first_new = true;
			h->new_count++;
			next_z = w->z + 1;
		} else {
			next_z = w->z;
		}
		if (w->kind != '+') {
			if (!first_old)
				h->old_start = w->x;
			first_old = true;
			h->old_count++;
		}
		if (w->kind == '+')
			adds++;
		else if (w->kind == '-')
			dels++;
	}
	out->additions = adds;
	out->deletions = dels;
}

/* f2's context or removed line l (pre-image line y) against f1's line s
 * there: a mismatch said in *why (once). */
static void check_line(struct buf *why, const struct at *s, const struct diff_line *l, int y)
{
	if (why->len || strcmp(s->l->text, l->text) == 0)
		return;
	buf_addf(why, "the later one's old line %d is not the line the earlier one left there", y);
}

/*
 * f1 then f2 as one change, into *out (zeroed first; the caller releases
 * it).  -1 with the reason in *why when f2 does not apply to what f1 left.
 */
static int compose(struct diff_file *out, const struct diff_file *f1, const struct diff_file *f2,
		   struct buf *why)
{
	struct index i1, i2;
	struct rows r = { 0 };
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (f1->deleted && !f2->created)
		buf_adds(why, "the later one changes the file the earlier one deleted");
	else if (!f1->deleted && f2->created)
		buf_adds(why, "the later one creates the file again");
	if (why->len)
		return -1;
	index_make(&i1, f1);
	index_make(&i2, f2);
	for (size_t j = 0; j < f1->ndropped; j++)
		add_dropped(out, f1->dropped[j].text);
	/* the lines f2 shows */
	for (size_t j = 0; j < i2.nold; j++) {
		const struct diff_line *l = i2.old[j].l;
		int y = l->old_line;
		const struct at *s = lookup(i1.shown, i1.nshown, y);

		if (s)
			check_line(why, s, l, y);
		if (s && s->l->kind == '+') {
			if (l->kind == ' ')
				push(&r, l->new_line, 0, '+', l->text);
			else
				add_dropped(out, s->l->text);
			continue;
		}
		int x = s ? s->l->old_line : clamp(y - shift(i1.news, i1.nspans, y));
		push(&r, l->kind == ' ' ? l->new_line : i2.old[j].pos, x, l->kind, l->text);
	}
	for (size_t j = 0; j < f2->nhunks; j++)
		for (size_t k = 0; k < f2->hunks[j].nlines; k++)
			if (f2->hunks[j].lines[k].kind == '+')
				push(&r, f2->hunks[j].lines[k].new_line, 0, '+', f2->hunks[j].lines[k].text);
	/* the lines f1 shows that f2 left alone */
	for (size_t j = 0; j < f1->nhunks; j++) {
		const struct diff_hunk *h = &f1->hunks[j];
		int ypos = h->new_count > 0 ? h->new_start : h->new_start + 1;

		for (size_t k = 0; k < h->nlines; k++) {
			const struct diff_line *l = &h->lines[k];
			int y = l->kind == '-' ? ypos : l->new_line;
			const struct at *o = lookup(i2.old, i2.nold, y);

			if (l->kind != '-')
				ypos = l->new_line + 1;
			if (l->kind != '-' && o)
				continue;       /* f2 shows it: done above */
			int z = o ? o->pos : clamp(y + shift(i2.olds, i2.nspans, y));
			push(&r, z, l->kind == '+' ? 0 : l->old_line, l->kind, l->text);
		}
	}
	if (r.n)
		qsort(r.v, r.n, sizeof *r.v, cmp_row);
	for (size_t j = 1; j < r.n && !why->len; j++)
		if (r.v[j].kind != '-' && r.v[j - 1].kind != '-' && r.v[j].z == r.v[j - 1].z)
			buf_addf(why, "both give its line %d", r.v[j].z);
	if (why->len)
		goto out;
	make_hunks(out, &r);
	/* the file before f1, after f2 */
	bool before = !f1->created, after = !f2->deleted;
	out->path = xstrdup(f2->path);
	out->old_path = xstrdup(before ? f1->old_path : f2->path);
	out->created = !before && after;
	out->deleted = !after;
	out->renamed = before && after && strcmp(out->old_path, out->path) != 0;
	out->binary = f2->binary;
	out->symlink = f2->symlink;
	out->cut = f1->cut || f2->cut;
	rc = 0;
out:
	if (rc < 0)
		diff_file_release(out);
	free(r.v);
	index_release(&i1);
	index_release(&i2);
	return rc;
}

/* Two abbreviated blob ids name the same blob (unknown: true). */
static bool same_blob(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;

	return n < 4 || strncmp(a, b, n) == 0;
}

/* Two blob ids that say the same non-empty blob: evidence of an order. */
static bool chained(const char *a, const char *b)
{
	size_t n = strlen(a) < strlen(b) ? strlen(a) : strlen(b);

	return n >= 4 && strncmp(a, b, n) == 0 && strspn(a, "0") < strlen(a);
}

/* A path of a section and the section. */
struct name {
	const char *path;
	size_t i;
};

static int cmp_name(const void *a, const void *b)
{
	const struct name *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* linked[i]: d->files[i] shares a path (new or old) with another section.
 * False when none does. */
static bool find_linked(bool *linked, const struct diff *d)
{
	struct name *v = xcalloc(2 * d->nfiles + 1, sizeof *v);
	size_t n = 0;
	bool any = false;

	for (size_t i = 0; i < d->nfiles; i++) {
		v[n++] = (struct name){ d->files[i].path, i };
		if (strcmp(d->files[i].old_path, d->files[i].path) != 0)
			v[n++] = (struct name){ d->files[i].old_path, i };
	}
	qsort(v, n, sizeof *v, cmp_name);
	for (size_t j = 1; j < n; j++) {
		if (strcmp(v[j].path, v[j - 1].path) == 0 && v[j].i != v[j - 1].i) {
			linked[v[j].i] = linked[v[j - 1].i] = true;
			any = true;
		}
	}
	free(v);
	return any;
}

/* The sections of one file, combined so far. */
struct group {
	struct diff_file own;   /* the combination, when owned */
	bool owned;
	size_t one;             /* else: the one section, d->files[one] */
	size_t first;           /* its first section in the text */
	unsigned long line;     /* the text line of the last section taken */
	const char *new_id;     /* the last section's blob after (borrowed from sec) */
};

static const struct diff_file *group_file(const struct group *g, const struct diff *d)
{
	return g->owned ? &g->own : &d->files[g->one];
}

/* The order to take the sections in: the text's, or its patches last
 * first (`git log -p`) with each patch's sections in the text's order. */
struct order {
	const struct diff_section *sec;
	bool reverse;
};

static int cmp_order(const void *a, const void *b, void *payload)
{
	const struct order *o = payload;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	unsigned long pi = o->sec[i].patch, pj = o->sec[j].patch;

	if (o->reverse && pi != pj)
		return pi < pj ? 1 : -1;
	return (i > j) - (i < j);
}

/* The linked sections of d, taken in the text's order or its patches in
 * reverse, as groups (*out, *nout; released by the caller with
 * groups_free); *evidence how many times a section's "index" blob started
 * where the one before it ended.  -1 with the reason in why when a
 * section does not follow the one before it. */
static int take(struct group **out, size_t *nout, size_t *evidence, const struct diff *d,
		const struct diff_section *sec, const bool *linked, bool reverse, struct buf *why)
{
	struct group *g = NULL;
	size_t ng = 0, *ord = xcalloc(d->nfiles + 1, sizeof *ord);
	struct order o = { sec, reverse };
	int rc = -1;

	*evidence = 0;
	for (size_t k = 0; k < d->nfiles; k++)
		ord[k] = k;
	qsort_r(ord, d->nfiles, sizeof *ord, cmp_order, &o);
	for (size_t k = 0; k < d->nfiles; k++) {
		size_t i = ord[k];
		const struct diff_file *s = &d->files[i];
		struct group *to = NULL;

		if (!linked[i])
			continue;
		/* the file of that name: a deleted one for a creation, else the
		 * one there (a series may delete a file and give its name to
		 * another); a copy starts a file of its own */
		for (int pass = 0; pass < 2 && !to; pass++)
			for (size_t j = 0; j < ng && !sec[i].copy && !to; j++)
				if (strcmp(group_file(&g[j], d)->path, s->old_path) == 0 &&
				    (pass == 1 || group_file(&g[j], d)->deleted == s->created))
					to = &g[j];
		if (!to) {
			g = xrealloc(g, (ng + 1) * sizeof *g);
			g[ng++] = (struct group){ .one = i, .first = i, .line = sec[i].line, .new_id = sec[i].new_id };
			continue;
		}
		struct diff_file both;
		if (!same_blob(to->new_id, sec[i].old_id))
			buf_addf(why, "the later one starts from blob %s, the earlier one ended at %s",
				 sec[i].old_id, to->new_id);
		if (why->len || compose(&both, group_file(to, d), s, why) < 0) {
			struct buf msg = BUF_INIT;
			bool after = sec[i].line > to->line;

			buf_addf(&msg, "'%s' is in more than one section of the diff (at lines %lu and %lu) and "
				 "they do not follow one another (%s)", s->path, after ? to->line : sec[i].line,
				 after ? sec[i].line : to->line, why->buf);
			buf_reset(why);
			buf_add(why, msg.buf, msg.len);
			buf_release(&msg);
			goto out;
		}
		if (chained(to->new_id, sec[i].old_id))
			(*evidence)++;
		if (to->owned)
			diff_file_release(&to->own);
		to->own = both;
		to->owned = true;
		to->line = sec[i].line;
		if (sec[i].old_id[0])   /* else a rename or mode change alone: the blob is the same */
			to->new_id = sec[i].new_id;
		if (i < to->first)
			to->first = i;
	}
	/* two files of one name at the end (a deleted one aside) */
	for (size_t a = 0; a < ng; a++)
		for (size_t b = a + 1; b < ng; b++)
			if (!group_file(&g[a], d)->deleted && !group_file(&g[b], d)->deleted &&
			    strcmp(group_file(&g[a], d)->path, group_file(&g[b], d)->path) == 0) {
				buf_addf(why, "'%s' is in more than one section of the diff (at lines %lu and %lu) and "
					 "they do not follow one another (two files end with that name)",
					 group_file(&g[a], d)->path,
					 sec[g[a].first].line, sec[g[b].first].line);
				goto out;
			}
	rc = 0;
out:
	free(ord);
	*out = g;
	*nout = ng;
	return rc;
}

static void groups_free(struct group *g, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (g[j].owned)
			diff_file_release(&g[j].own);
	free(g);
}

int diff_combine(struct diff *d, const struct diff_section *sec)
{
	bool *linked = xcalloc(d->nfiles + 1, sizeof *linked);
	struct group *g = NULL;
	size_t ng = 0;
	struct buf why = BUF_INIT, other = BUF_INIT;
	int rc = -1;

	if (!find_linked(linked, d)) {
		rc = 0;
		goto out;
	}
	/* the text's order, or its patches in reverse (git log -p) when only
	 * that one fits, or when more of its sections' blobs chain */
	struct group *rg = NULL;
	size_t nrg = 0, ev = 0, rev = 0;
	int fwd = take(&g, &ng, &ev, d, sec, linked, false, &why), bwd = -1;
	if (d->nfiles > 0 && sec[d->nfiles - 1].patch > 0)   /* else the same order */
		bwd = take(&rg, &nrg, &rev, d, sec, linked, true, &other);
	if (fwd < 0 && bwd < 0) {
		groups_free(rg, nrg);
		forge_error("%s: pipe one diff of the whole change (git diff FIRST^ LAST, or "
			    "forge-review --base), or one diff at a time", why.buf);
		goto out;
	}
	if (fwd < 0 || (bwd == 0 && rev > ev)) {
		groups_free(g, ng);
		g = rg;
		ng = nrg;
	} else {
		groups_free(rg, nrg);
	}
	/* the new list: the files no other section names as they were, each
	 * combined file at its first section's place */
	struct diff_file *files = xcalloc(d->nfiles + 1, sizeof *files);
	size_t n = 0;
	for (size_t i = 0; i < d->nfiles; i++) {
		if (!linked[i]) {
			files[n++] = d->files[i];
			continue;
		}
		for (size_t j = 0; j < ng; j++) {
			if (g[j].first != i)
				continue;
			if (g[j].owned) {
				files[n++] = g[j].own;
				g[j].owned = false;
			} else {
				files[n++] = d->files[g[j].one];
				linked[g[j].one] = false;       /* moved, not to be released */
			}
		}
	}
	for (size_t i = 0; i < d->nfiles; i++)
		if (linked[i])
			diff_file_release(&d->files[i]);
	free(d->files);
	d->files = files;
	d->nfiles = n;
	d->additions = d->deletions = 0;
	for (size_t i = 0; i < n; i++) {
		d->additions += files[i].additions;
		d->deletions += files[i].deletions;
	}
	rc = 0;
out:
	groups_free(g, ng);
	buf_release(&why);
	buf_release(&other);
	free(linked);
	return rc;
}
