/* diff.c - unified diff parser; see diff.h. */
#include "git/diff.h"
#include "git/diff_internal.h"
#include "core/buf.h"
#include "core/forge.h"

#include <stdlib.h>
#include <string.h>

/* The lines diff_cut writes (and an older cut wrote inside a hunk). */
#define CUT_MARK "[\u2026 diff cut: "
#define OMIT_MARK "[\u2026 not shown: "
#define MORE_MARK "[\u2026 and "
#define MARK_END " \u2026]"

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && memcmp(s, prefix, k) == 0;
}

/* Whether the mode word m[0..n) (a git header's, line end and trailing
 * blanks allowed) is a symbolic link's, 120000. */
static bool is_link_mode(const char *m, size_t n)
{
	while (n > 0 && (m[n - 1] == '\r' || m[n - 1] == ' ' || m[n - 1] == '\t'))
		n--;
	return n == 6 && memcmp(m, "120000", 6) == 0;
}

bool diff_looks_like(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (starts(p, n, "diff --git ") || starts(p, n, "Index: ") || starts(p, n, "@@ -") ||
		    starts(p, n, CUT_MARK))
			return true;
		if (starts(p, n, "--- ") && nl && starts(nl + 1, (size_t)(end - nl - 1), "+++ "))
			return true;
		p = nl ? nl + 1 : end;
	}
	return false;
}

static bool is_octal(char c)
{
	return c >= '0' && c <= '7';
}

/* The character a C escape \c stands for, as git writes them in a quoted
 * path (quote.c: \a \b \t \n \v \f \r \" \\); c itself for others. */
static char unescape(char c)
{
	static const char from[] = "abtnvfr", to[] = "\a\b\t\n\v\f\r";
	const char *p = strchr(from, c);

	return c && p ? to[p - from] : c;
}

/* A path from a header: timestamp cut, quotes undone, prefix removed. */
static char *header_path(const char *s, size_t n, const char *prefix)
{
	char *out;
	size_t o = 0;

	if (n > 0 && s[0] == '"') {
		out = xmalloc(n + 1);
		for (size_t i = 1; i < n && s[i] != '"'; i++) {
			char c = s[i];

			if (c == '\\' && i + 1 < n) {
				c = s[++i];
				if (is_octal(c) && i + 2 < n && is_octal(s[i + 1]) && is_octal(s[i + 2])) {
					c = (char)(((s[i] - '0') << 6) | ((s[i + 1] - '0') << 3) | (s[i + 2] - '0'));
					i += 2;
				} else {
					c = unescape(c);
				}
			}
			out[o++] = c;
		}
		out[o] = '\0';
	} else {
		const char *tab = memchr(s, '\t', n);

		if (tab)
			n = (size_t)(tab - s);
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\r'))
			n--;
		out = xstrndup(s, n);
	}
	size_t k = strlen(prefix);
	if (strcmp(out, "/dev/null") != 0 && strncmp(out, prefix, k) == 0)
		memmove(out, out + k, strlen(out + k) + 1);
	return out;
}

/* A new file section, its header at text line `line`; *sec grows with d->files. */
static struct diff_file *new_file(struct diff *d, struct diff_section **sec, unsigned long line,
				   unsigned long patch)
{
	d->files = xrealloc(d->files, (d->nfiles + 1) * sizeof *d->files);
	*sec = xrealloc(*sec, (d->nfiles + 1) * sizeof **sec);
	memset(&(*sec)[d->nfiles], 0, sizeof **sec);
	(*sec)[d->nfiles].line = line;
	(*sec)[d->nfiles].patch = patch;
	struct diff_file *f = &d->files[d->nfiles++];

	memset(f, 0, sizeof *f);
	return f;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The hex digits at *s (at most DIFF_ID_MAX) into out, moving *s past them. */
static void read_id(char out[DIFF_ID_MAX + 1], const char **s, const char *end)
{
	size_t k = 0;

	while (*s < end && is_hex(**s)) {
		if (k < DIFF_ID_MAX)
			out[k++] = **s;
		(*s)++;
	}
	out[k] = '\0';
}

/* "index OLD..NEW[ MODE]" (git's extended header): the blobs into sec. */
static void read_index_line(struct diff_section *sec, const char *s, size_t n)
{
	const char *p = s + 6, *end = s + n;

	while (end > p && end[-1] == '\r')
		end--;
	read_id(sec->old_id, &p, end);
	if (end - p < 2 || p[0] != '.' || p[1] != '.') {
		sec->old_id[0] = '\0';
		return;
	}
	p += 2;
	read_id(sec->new_id, &p, end);
}

/* Where one patch of a series ends: 2 at a mail's "From " line (git
 * format-patch, an mbox) or git log's "commit SHA", where the next patch
 * starts; 1 at the "-- " line before format-patch's signature; else 0.
 * What follows is text (the signature, the next patch's message). */
static int patch_boundary(const char *s, size_t n)
{
	if (n > 0 && s[n - 1] == '\r')
		n--;
	if (n == 3 && memcmp(s, "-- ", 3) == 0)
		return 1;
	if (starts(s, n, "From "))
		return 2;
	if (!starts(s, n, "commit "))
		return 0;
	size_t k = 7;
	while (k < n && is_hex(s[k]))
		k++;
	return k >= 7 + 7 && (k == n || s[k] == ' ') ? 2 : 0;
}

/* The prefixes git gives the two sides of a diff: a/ b/, or with
 * diff.mnemonicPrefix i/ w/ (index, work tree), c/ w/, c/ i/, o/ w/,
 * 1/ 2/ (--no-index).  Whether old and new carry such a pair. */
static bool side_prefixes(const char *old, const char *new)
{
	static const char pairs[][2] = { { 'a', 'b' }, { 'i', 'w' }, { 'c', 'w' }, { 'c', 'i' },
					 { 'o', 'w' }, { '1', '2' } };

	if (!old[0] || old[1] != '/' || !new[0] || new[1] != '/')
		return false;
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
		if (old[0] == pairs[i][0] && new[0] == pairs[i][1])
			return true;
	return false;
}

/* Drop the side prefixes of old and new (see side_prefixes) in place. */
static void drop_side_prefixes(char *old, char *new)
{
	if (strcmp(old, "/dev/null") == 0 || strcmp(new, "/dev/null") == 0 ||
	    !side_prefixes(old, new))
		return;
	memmove(old, old + 2, strlen(old + 2) + 1);
	memmove(new, new + 2, strlen(new + 2) + 1);
}

/* The length of the C-quoted path at s (s[0] == '"'), closing quote
 * included; 0 when it does not close. */
static size_t quoted_len(const char *s, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

/* "diff --git a/x b/x": the paths, when they can be told apart.  A path
 * git quotes ("a/\303\251.png": a byte that is not ASCII, a quote) is
 * unquoted; the prefixes may be mnemonic ones (i/ w/, c/ i/, ...). */
static void git_header_paths(struct diff_file *f, const char *s, size_t n)
{
	const char *rest = s + 11;
	size_t rn = n - 11;
	char *old = NULL, *new = NULL;

	while (rn > 0 && (rest[rn - 1] == '\r' || rest[rn - 1] == ' '))
		rn--;
	if (rn > 0 && rest[0] == '"') {
		size_t q = quoted_len(rest, rn);

		if (q && q + 1 < rn && rest[q] == ' ') {
			old = header_path(rest, q, "");
			new = header_path(rest + q + 1, rn - q - 1, "");
		}
	} else if (rn % 2 == 1 && rest[(rn - 1) / 2] == ' ' &&
		   memcmp(rest, rest + (rn + 1) / 2, (rn - 1) / 2) == 0) {
		/* "P P" (diff.noprefix): the same path twice */
		f->old_path = xstrndup(rest, (rn - 1) / 2);
		f->path = xstrndup(rest, (rn - 1) / 2);
		return;
	} else if (rn > 2 && rest[1] == '/') {
		const char *b = NULL;

		/* "X/P Y/P": split in the middle when both halves are equal */
		if (rn % 2 == 1) {
			size_t half = (rn - 1) / 2;
			if (rest[half] == ' ' && rest[half + 2] == '/' &&
			    memcmp(rest + 2, rest + half + 3, half - 2) == 0)
				b = rest + half;
		}
		for (size_t i = 0; !b && i + 1 < rn; i++)
			if (rest[i] == ' ' && rest[i + 1] == '"')
				b = rest + i;
		for (size_t i = 0; !b && i + 3 < rn; i++)
			if (rest[i] == ' ' && rest[i + 2] == '/' && side_prefixes(rest, rest + i + 1))
				b = rest + i;
		if (b) {
			old = xstrndup(rest, (size_t)(b - rest));
			new = header_path(b + 1, (size_t)(rest + rn - b - 1), "");
		}
	}
	if (old && new && side_prefixes(old, new)) {
		drop_side_prefixes(old, new);
		f->old_path = old;
		f->path = new;
		return;
	}
	free(old);
	free(new);
}

static int parse_range(int *start, int *count, const char **p)
{
	char *end;
	long v = strtol(*p, &end, 10);

	if (end == *p || v < 0 || v > 100000000)
		return -1;
	*start = (int)v;
	*count = 1;
	if (*end == ',') {
		const char *q = end + 1;
		v = strtol(q, &end, 10);
		if (end == q || v < 0 || v > 100000000)
			return -1;
		*count = (int)v;
	}
	*p = end;
	return 0;
}

static int parse_hunk_header(struct diff_hunk *h, const char *s, size_t n)
{
	char *line = xstrndup(s, n);
	const char *p = line + 3;
	int rc = -1;

	if (*p != '-')
		goto out;
	p++;
	if (parse_range(&h->old_start, &h->old_count, &p) < 0 || *p != ' ' || p[1] != '+')
		goto out;
	p += 2;
	if (parse_range(&h->new_start, &h->new_count, &p) < 0 || strncmp(p, " @@", 3) != 0)
		goto out;
	p += 3;
	if (*p == ' ')
		p++;
	h->section = xstrdup(p);
	rc = 0;
out:
	free(line);
	return rc;
}

static void add_line(struct diff_hunk *h, char kind, const char *s, size_t n, int old_line,
		     int new_line)
{
	if ((h->nlines & (h->nlines - 1)) == 0)
		h->lines = xrealloc(h->lines, (h->nlines ? h->nlines * 2 : 4) * sizeof *h->lines);
	struct diff_line *l = &h->lines[h->nlines++];

	if (n > 0 && s[n - 1] == '\r')
		n--;
	l->kind = kind;
	l->text = xstrndup(s, n);
	l->old_line = kind == '+' ? 0 : old_line;
	l->new_line = kind == '-' ? 0 : new_line;
}

/* A size or count at s ("123 "), moving s past it; false when none. */
static bool read_size(size_t *out, const char **s, const char *end)
{
	size_t v = 0;
	const char *p = *s;

	while (p < end && *p >= '0' && *p <= '9' && v < ((size_t)-1) / 10 - 10)
		v = v * 10 + (size_t)(*p++ - '0');
	if (p == *s)
		return false;
	*out = v;
	*s = p;
	return true;
}

/* A line diff_cut wrote: the cut, a file left out, or the count of the
 * ones not named.  False when the line only starts like one. */
static bool read_mark(struct diff *d, const char *s, size_t n)
{
	const char *end = s + n, *p;
	size_t v = 0;

	while (end > s && end[-1] == '\r')
		end--;
	n = (size_t)(end - s);
	if (n < strlen(MARK_END) || memcmp(end - strlen(MARK_END), MARK_END, strlen(MARK_END)) != 0)
		return false;
	end -= strlen(MARK_END);
	if (starts(s, n, CUT_MARK)) {
		/* "N files not shown (B bytes)", or an older "N more bytes" */
		p = s + strlen(CUT_MARK);
		if (read_size(&v, &p, end) && starts(p, (size_t)(end - p), " file"))
			d->omitted_total += v;
		d->cut = true;
		return true;
	}
	if (starts(s, n, MORE_MARK)) {
		p = s + strlen(MORE_MARK);
		return read_size(&v, &p, end) && starts(p, (size_t)(end - p), " more file");
	}
	/* "[… not shown: PATH (B bytes) …]": the size from the right, so a
	 * path may hold " (" */
	static const char bytes[] = " bytes)";
	size_t bn = strlen(bytes);
	p = s + strlen(OMIT_MARK);
	if ((size_t)(end - p) < bn + 3 || memcmp(end - bn, bytes, bn) != 0)
		return false;
	const char *q = end - bn;
	while (q > p && q[-1] >= '0' && q[-1] <= '9')
		q--;
	const char *digits = q;
	if (q - p < 3 || q[-1] != '(' || q[-2] != ' ' || !read_size(&v, &digits, end - bn))
		return false;
	d->omitted = xrealloc(d->omitted, (d->nomitted + 1) * sizeof *d->omitted);
	d->omitted[d->nomitted].path = header_path(p, (size_t)(q - 2 - p), "");
	d->omitted[d->nomitted].bytes = v;
	d->nomitted++;
	if (d->omitted_total < d->nomitted)
		d->omitted_total = d->nomitted;
	d->cut = true;
	return true;
}

int diff_parse(struct diff **out, const char *text, size_t len)
{
	struct diff *d = xcalloc(1, sizeof *d);
	struct diff_section *sec = NULL;        /* sec[i]: of d->files[i] */
	struct diff_file *f = NULL;
	struct diff_hunk *h = NULL;
	const char *p = text, *end = text + len;
	unsigned long lineno = 0, patch = 0;
	int rem_old = 0, rem_new = 0, old_no = 0, new_no = 0;
	bool git_header = false, after_hunk = false, binary_data = false;
	int rc = -1;

	*out = NULL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *s = p;

		p = nl ? nl + 1 : end;
		lineno++;
		if (rem_old > 0 || rem_new > 0) {
			char c = n ? s[0] : ' ';

			if (c == '\\')
				continue;
			if (starts(s, n, CUT_MARK)) {
				/* cut inside this hunk: it ends where the text does */
				h->old_count -= rem_old;
				h->new_count -= rem_new;
				rem_old = rem_new = 0;
				f->cut = d->cut = true;
				after_hunk = true;
				continue;
			}
			if (c != ' ' && c != '+' && c != '-') {
				forge_error("line %lu: hunk ends early: %d more old and %d more new lines expected",
					    lineno, rem_old, rem_new);
				goto fail;
			}
			if ((c != '+' && rem_old <= 0) || (c != '-' && rem_new <= 0)) {
				forge_error("line %lu: hunk is longer than its header says", lineno);
				goto fail;
			}
			add_line(h, c, n ? s + 1 : s, n ? n - 1 : 0, old_no, new_no);
			if (c != '+') {
				rem_old--;
				old_no++;
			}
			if (c != '-') {
				rem_new--;
				new_no++;
			}
			if (c == '+') {
				f->additions++;
				d->additions++;
			} else if (c == '-') {
				f->deletions++;
				d->deletions++;
			}
			after_hunk = rem_old == 0 && rem_new == 0;
			continue;
		}
		if (starts(s, n, CUT_MARK) || starts(s, n, OMIT_MARK) || starts(s, n, MORE_MARK)) {
			if (read_mark(d, s, n))
				continue;
		}
		if (binary_data) {
			if (n == 0 || starts(s, n, "diff --git "))
				binary_data = false;
			if (n == 0)
				continue;
		}
		if (starts(s, n, "diff --cc ") || starts(s, n, "diff --combined ") || starts(s, n, "@@@ ")) {
			forge_error("line %lu: a combined diff (of a merge, 'diff --cc'): review the merge "
				    "against one parent instead (git diff M^1 M, or forge-review --commit M)", lineno);
			goto fail;
		}
		if (starts(s, n, "diff --git ")) {
			f = new_file(d, &sec, lineno, patch);
			h = NULL;
			git_header = true;
			after_hunk = false;
			git_header_paths(f, s, n);
			continue;
		}
		if (starts(s, n, "--- ") && p < end && starts(p, (size_t)(end - p), "+++ ")) {
			if (!f || !git_header || f->nhunks > 0 || h) {
				f = new_file(d, &sec, lineno, patch);
				h = NULL;
			}
			git_header = false;
			after_hunk = false;
			char *old = header_path(s + 4, n - 4, "");
			free(f->old_path);
			f->old_path = old;
			continue;
		}
		if (starts(s, n, "+++ ") && f && !h && f->old_path) {
			char *np = header_path(s + 4, n - 4, "");

			/* a/ and b/ (or git's mnemonic i/ w/, c/ w/ ...) go as a
			 * pair; one alone was stripped before: "a/x" against
			 * /dev/null */
			if (!strcmp(f->old_path, "/dev/null") && np[0] && strchr("bwi2", np[0]) && np[1] == '/')
				memmove(np, np + 2, strlen(np + 2) + 1);
			else if (!strcmp(np, "/dev/null") && f->old_path[0] && strchr("acio1", f->old_path[0]) &&
				 f->old_path[1] == '/')
				memmove(f->old_path, f->old_path + 2, strlen(f->old_path + 2) + 1);
			else
				drop_side_prefixes(f->old_path, np);
			if (strcmp(np, "/dev/null") == 0) {
				f->deleted = true;
				free(np);
				np = xstrdup(f->old_path);
			}
			if (strcmp(f->old_path, "/dev/null") == 0) {
				f->created = true;
				free(f->old_path);
				f->old_path = xstrdup(np);
			}
			free(f->path);
			f->path = np;
			continue;
		}
		if (starts(s, n, "@@ ")) {
			if (!f || !f->path) {
				forge_error("line %lu: hunk before any file header", lineno);
				goto fail;
			}
			f->hunks = xrealloc(f->hunks, (f->nhunks + 1) * sizeof *f->hunks);
			h = &f->hunks[f->nhunks++];
			memset(h, 0, sizeof *h);
			if (parse_hunk_header(h, s, n) < 0) {
				forge_error("line %lu: bad hunk header '%.*s'", lineno, (int)(n > 80 ? 80 : n), s);
				goto fail;
			}
			rem_old = h->old_count;
			rem_new = h->new_count;
			old_no = h->old_start;
			new_no = h->new_start;
			git_header = false;
			after_hunk = rem_old == 0 && rem_new == 0;
			continue;
		}
		int boundary = patch_boundary(s, n);
		if (boundary) {
			/* the next patch of a series: its message, its "---" and
			 * diffstat belong to no file */
			if (boundary == 2 && d->nfiles > 0 && sec[d->nfiles - 1].patch == patch)
				patch++;
			f = NULL;
			h = NULL;
			git_header = after_hunk = false;
			continue;
		}
		if (f && git_header) {
			/* the post-image's mode: "new file mode M", "new mode M",
			 * "index A..B M" (a change that keeps the mode) */
			const char *mode = starts(s, n, "new file mode ") ? s + 14 :
					   starts(s, n, "new mode ") ? s + 9 :
					   starts(s, n, "index ") ? memchr(s + 6, ' ', n - 6) : NULL;
			if (mode && *mode == ' ')
				mode++;
			if (mode)
				f->symlink = is_link_mode(mode, (size_t)(s + n - mode));
			if (starts(s, n, "new file mode")) {
				f->created = true;
			} else if (starts(s, n, "deleted file mode")) {
				f->deleted = true;
			} else if (starts(s, n, "index ")) {
				read_index_line(&sec[f - d->files], s, n);
			} else if (starts(s, n, "copy from ")) {
				sec[f - d->files].copy = true;
				free(f->old_path);
				f->old_path = header_path(s + 10, n - 10, "");
			} else if (starts(s, n, "copy to ")) {
				free(f->path);
				f->path = header_path(s + 8, n - 8, "");
			} else if (starts(s, n, "rename from ")) {
				free(f->old_path);
				f->old_path = header_path(s + 12, n - 12, "");
				f->renamed = true;
			} else if (starts(s, n, "rename to ")) {
				free(f->path);
				f->path = header_path(s + 10, n - 10, "");
				f->renamed = true;
			} else if (starts(s, n, "Binary files ")) {
				f->binary = true;
			} else if (starts(s, n, "GIT binary patch")) {
				f->binary = true;
				binary_data = true;
			}
			continue;
		}
		if (after_hunk && n > 0 && (s[0] == '+' || (s[0] == '-' && !starts(s, n, "-- ")))) {
			forge_error("line %lu: hunk is longer than its header says", lineno);
			goto fail;
		}
		if (f && starts(s, n, "Binary files "))
			f->binary = true;
		/* anything else (a commit message, "index …", a signature) is skipped */
	}
	if (rem_old > 0 || rem_new > 0) {
		forge_error("line %lu: diff ends inside a hunk: %d more old and %d more new lines expected",
			    lineno, rem_old, rem_new);
		goto fail;
	}
	if (d->nfiles == 0 && !d->cut) {
		forge_error("not a unified diff: no file header (\"diff --git\" or \"---\"/\"+++\") found");
		goto fail;
	}
	for (size_t i = 0; i < d->nfiles; i++) {
		if (!d->files[i].path) {
			forge_error("a file in the diff has no path");
			goto fail;
		}
		if (!d->files[i].old_path)
			d->files[i].old_path = xstrdup(d->files[i].path);
	}
	if (diff_combine(d, sec) < 0) {
		rc = -2;
		goto fail;
	}
	free(sec);
	*out = d;
	return 0;
fail:
	free(sec);
	diff_free(d);
	return rc;
}

void diff_file_release(struct diff_file *f)
{
	for (size_t j = 0; j < f->nhunks; j++) {
		for (size_t k = 0; k < f->hunks[j].nlines; k++)
			free(f->hunks[j].lines[k].text);
		free(f->hunks[j].lines);
		free(f->hunks[j].section);
	}
	free(f->hunks);
	for (size_t k = 0; k < f->ndropped; k++)
		free(f->dropped[k].text);
	free(f->dropped);
	free(f->path);
	free(f->old_path);
}

void diff_free(struct diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nfiles; i++)
		diff_file_release(&d->files[i]);
	free(d->files);
	for (size_t i = 0; i < d->nomitted; i++)
		free(d->omitted[i].path);
	free(d->omitted);
	free(d);
}

const struct diff_file *diff_find(const struct diff *d, const char *path)
{
	if (!path)
		return NULL;
	if (path[0] == '.' && path[1] == '/')
		path += 2;
	const struct diff_file *gone = NULL;

	/* a series may delete a file and give its name to another: the one there now */
	for (size_t i = 0; i < d->nfiles; i++) {
		if (strcmp(d->files[i].path, path) != 0)
			continue;
		if (!d->files[i].deleted)
			return &d->files[i];
		if (!gone)
			gone = &d->files[i];
	}
	return gone;
}

static const struct diff_line *find_line(const struct diff_file *f, int line)
{
	for (size_t j = 0; j < f->nhunks; j++) {
		const struct diff_hunk *h = &f->hunks[j];

		if (line < h->new_start || line >= h->new_start + h->new_count)
			continue;
		for (size_t k = 0; k < h->nlines; k++)
			if (h->lines[k].new_line == line)
				return &h->lines[k];
	}
	return NULL;
}

const char *diff_added_line(const struct diff_file *f, int line)
{
	const struct diff_line *l = f ? find_line(f, line) : NULL;

	return l && l->kind == '+' ? l->text : NULL;
}

const char *diff_new_line(const struct diff_file *f, int line)
{
	const struct diff_line *l = f ? find_line(f, line) : NULL;

	return l ? l->text : NULL;
}

bool diff_in_hunk(const struct diff_file *f, int line)
{
	for (size_t j = 0; f && j < f->nhunks; j++)
		if (line >= f->hunks[j].new_start && line < f->hunks[j].new_start + f->hunks[j].new_count)
			return true;
	return false;
}

/* ---- cutting a diff to a size ---------------------------------------------- */

/* One file's part of a patch: text[off, off + len). */
struct part {
	size_t off, len;
	bool keep;
};

/* The path of the file whose part starts at s: its header parsed alone
 * (the header ends at the first hunk or binary patch). */
static char *part_path(const char *s, size_t n)
{
	const char *e = s;
	struct diff *d = NULL;
	char *path = NULL;

	while ((size_t)(e - s) < n) {
		const char *nl = memchr(e, '\n', n - (size_t)(e - s));

		if (!nl)
			break;
		e = nl + 1;
		if (starts(e, n - (size_t)(e - s), "@@ ") || starts(e, n - (size_t)(e - s), "GIT binary patch"))
			break;
	}
	if ((size_t)(e - s) >= n)
		e = s + n;
	if (diff_parse(&d, s, (size_t)(e - s)) == 0 && d->nfiles > 0)
		path = xstrdup(d->files[0].path);
	diff_free(d);
	if (!path) {
		/* a header this parser cannot split: git's own line */
		const char *nl = memchr(s, '\n', n);
		path = xstrndup(s + 11, nl ? (size_t)(nl - s) - 11 : n - 11);
	}
	return path;
}

/* path as the marker lines write it: as it is, or in C quotes when a
 * quote, backslash, control character or an edge space would make it
 * ambiguous (header_path reads either). */
static void add_path(struct buf *b, const char *path)
{
	size_t n = strlen(path);
	bool quote = n == 0 || path[0] == ' ' || path[n - 1] == ' ';

	for (size_t i = 0; i < n && !quote; i++)
		quote = (unsigned char)path[i] < 0x20 || path[i] == 0x7f || path[i] == '"' || path[i] == '\\';
	if (!quote) {
		buf_add(b, path, n);
		return;
	}
	buf_addch(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];

		if (c == '"' || c == '\\')
			buf_addf(b, "\\%c", c);
		else if (c == '\n')
			buf_adds(b, "\\n");
		else if (c == '\t')
			buf_adds(b, "\\t");
		else if (c < 0x20 || c == 0x7f)
			buf_addf(b, "\\%03o", c);
		else
			buf_addch(b, (char)c);
	}
	buf_addch(b, '"');
}

char *diff_cut(const char *text, size_t len, size_t max)
{
	struct part *parts = NULL;
	size_t nparts = 0, used = 0, left = 0, left_bytes = 0;
	struct buf out = BUF_INIT, marks = BUF_INIT, line = BUF_INIT;

	if (max < 4096)
		max = 4096;
	if (len <= max)
		return xstrndup(text, len);
	/* the parts: text before the first header (if any), then one per file */
	for (size_t off = 0; off < len;) {
		size_t start = off;

		do {
			const char *nl = memchr(text + off, '\n', len - off);
			off = nl ? (size_t)(nl - text) + 1 : len;
		} while (off < len && !starts(text + off, len - off, "diff --git "));
		parts = xrealloc(parts, (nparts + 1) * sizeof *parts);
		parts[nparts++] = (struct part){ .off = start, .len = off - start };
	}
	/* a sixteenth (at least 1 KiB) is kept back for the lines that name
	 * what was left out, so the whole stays under max */
	size_t reserve = max / 16 < 1024 ? 1024 : max / 16;
	for (size_t i = 0; i < nparts; i++) {
		if (used + parts[i].len <= max - reserve) {
			parts[i].keep = true;
			used += parts[i].len;
			buf_add(&out, text + parts[i].off, parts[i].len);
		} else {
			/* text before the first file is not a file: its bytes are counted */
			left += starts(text + parts[i].off, parts[i].len, "diff --git ");
			left_bytes += parts[i].len;
		}
	}
	if (out.len && out.buf[out.len - 1] != '\n')
		buf_addch(&out, '\n');
	buf_addf(&out, CUT_MARK "%zu file%s not shown (%zu bytes)" MARK_END "\n", left, left == 1 ? "" : "s",
		 left_bytes);
	size_t named = 0;
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].keep)
			continue;
		if (!starts(text + parts[i].off, parts[i].len, "diff --git "))
			continue;
		char *path = part_path(text + parts[i].off, parts[i].len);
		buf_reset(&line);
		buf_adds(&line, OMIT_MARK);
		add_path(&line, path);
		buf_addf(&line, " (%zu bytes)" MARK_END "\n", parts[i].len);
		free(path);
		/* room for this line and the "and N more" one after it */
		if (out.len + marks.len + line.len + 64 > max)
			break;
		buf_add(&marks, line.buf, line.len);
		named++;
	}
	if (marks.len)
		buf_add(&out, marks.buf, marks.len);
	if (named < left)
		buf_addf(&out, MORE_MARK "%zu more file%s not shown" MARK_END "\n", left - named,
			 left - named == 1 ? "" : "s");
	buf_release(&marks);
	buf_release(&line);
	free(parts);
	return buf_detach(&out, NULL);
}

bool diff_is_cut(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (starts(p, (size_t)(end - p), CUT_MARK))
			return true;
		p = nl ? nl + 1 : end;
	}
	return false;
}
