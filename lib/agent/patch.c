/*
 * patch.c - apply_patch and edit_file matching.  See patch.h.
 */
#include "agent/patch.h"
#include "core/forge.h"
#include "core/json.h"
#include "os/sandbox.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (16u << 20)

/* ================================================================ lines */

size_t patch_split_lines(char ***out, const char *text, size_t len)
{
	size_t n = 0, cap = 16, i = 0;
	char **v = xmalloc(cap * sizeof(char *));

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - text) : len;
		if (n == cap) {
			cap *= 2;
			v = xrealloc(v, cap * sizeof(char *));
		}
		v[n++] = xstrndup(text + i, e - i);
		i = e + 1;
	}
	*out = v;
	return n;
}

void patch_lines_free(char **lines, size_t n)
{
	for (size_t i = 0; lines && i < n; i++)
		free(lines[i]);
	free(lines);
}

/* ================================================================ latin-1 */

bool patch_is_latin1(const char *text, size_t len)
{
	return !json_utf8_valid(text, len);
}

void patch_latin1_decode(struct buf *b, const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c < 0x80) {
			buf_addch(b, (char)c);
		} else {
			buf_addch(b, (char)(0xc0 | (c >> 6)));
			buf_addch(b, (char)(0x80 | (c & 0x3f)));
		}
	}
}

int patch_latin1_encode(struct buf *b, const char *text, size_t len, const char *path,
			const char *what)
{
	const unsigned char *p = (const unsigned char *)text, *end = p + len;
	size_t start = b->len, line = 1;
	const unsigned char *bol = p;

	while (p < end) {
		const unsigned char *q;
		uint32_t cp;

		if (*p < 0x80) {
			if (*p == '\n') {
				line++;
				bol = p + 1;
			}
			buf_addch(b, (char)*p++);
			continue;
		}
		q = json_utf8_seq(p, end);
		cp = 0;
		if (q) {
			cp = *p & (q - p == 2 ? 0x1f : q - p == 3 ? 0x0f : 0x07);
			for (const unsigned char *k = p + 1; k < q; k++)
				cp = (cp << 6) | (*k & 0x3f);
		}
		if (!q || cp > 0xff) {
			struct buf where = BUF_INIT;
			size_t col = 1;
			/* the column in characters, as the model counts them */
			for (const unsigned char *k = bol; k < p; k++)
				col += (*k & 0xc0) != 0x80;
			if (memchr(text, '\n', len))
				buf_addf(&where, "line %zu, ", line);
			buf_addf(&where, "character %zu", col);
			buf_truncate(b, start);
			if (!q)
				forge_error("'%s' is not UTF-8 and %s holds bytes that are not UTF-8 either (%s)",
					    path, what, where.buf);
			else
				forge_error("'%s' is not UTF-8 (read_file shows it as Latin-1, one character a byte, and edits are written back in its own bytes), so it cannot hold U+%04X '%.*s' (%s, %s): %s",
					    path, (unsigned)cp, (int)(q - p), (const char *)p, what, where.buf,
					    cp == 0xfffd ?
					    "U+FFFD stands for bytes that were not shown as they are; copy the text from read_file again" :
					    "use only characters up to U+00FF in this file");
			buf_release(&where);
			return -1;
		}
		buf_addch(b, (char)cp);
		p = q;
	}
	return 0;
}

/* ================================================================ passes */

const char *patch_fuzz_name(enum patch_fuzz f)
{
	switch (f) {
	case PATCH_EXACT: return "exact";
	case PATCH_RSTRIP: return "ignoring trailing whitespace";
	case PATCH_STRIP: return "ignoring indentation";
	case PATCH_PUNCT: return "ignoring indentation and typographic punctuation (and Unicode composition)";
	}
	return "?";
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Decode one UTF-8 code point at s (len bytes); 0 when not well-formed. */
static uint32_t utf8_at(const unsigned char *s, size_t len, size_t *used)
{
	if (len >= 2 && (s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
		*used = 2;
		return ((uint32_t)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
	}
	if (len >= 3 && (s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
		*used = 3;
		return ((uint32_t)(s[0] & 0x0f) << 12) | ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
	}
	return 0;
}

static char punct_ascii(uint32_t cp)
{
	if ((cp >= 0x2010 && cp <= 0x2015) || cp == 0x2212)
		return '-';
	if (cp >= 0x2018 && cp <= 0x201b)
		return '\'';
	if (cp >= 0x201c && cp <= 0x201f)
		return '"';
	if (cp == 0xa0 || (cp >= 0x2002 && cp <= 0x200a) || cp == 0x202f || cp == 0x205f ||
	    cp == 0x3000)
		return ' ';
	return 0;
}

/* U+00C0-U+017F: the letter each decomposes to (canonically) and its
 * combining mark ('a' + an index into nfd_marks), '.' when it does not
 * decompose so (generated with Python's unicodedata). */
static const uint16_t nfd_marks[] = { 0x300, 0x301, 0x302, 0x303, 0x304, 0x306, 0x307, 0x308, 0x30a, 0x30b, 0x30c, 0x327, 0x328 };
static const char nfd_base[] =
	"AAAAAA.CEEEEIIII.NOOOOO..UUUUY..aaaaaa.ceeeeiiii.nooooo..uuuuy.y"
	"AaAaAaCcCcCcCcDd..EeEeEeEeEeGgGgGgGgHh..IiIiIiIiI...JjKk.LlLlLl."
	"...NnNnNn...OoOoOo..RrRrRrSsSsSsSsTtTt..UuUuUuUuUuUuWwYyYZzZzZz.";
static const char nfd_mark[] =
	"abcdhi.labchabch.dabcdh..abchb..abcdhi.labchabch.dabcdh..abchb.h"
	"eeffmmbbccggkkkk..eeffggmmkkccffggllcc..ddeeffmmg...ccll.bbllkk."
	"...bbllkk...eeffjj..bbllkkbbccllkkllkk..ddeeffiijjmmcccchbbggkk.";

/* cp (below U+10000) as UTF-8 into b. */
static void add_utf8(struct buf *b, uint32_t cp)
{
	if (cp < 0x80) {
		buf_addch(b, (char)cp);
	} else if (cp < 0x800) {
		buf_addch(b, (char)(0xc0 | (cp >> 6)));
		buf_addch(b, (char)(0x80 | (cp & 0x3f)));
	} else {
		buf_addch(b, (char)(0xe0 | (cp >> 12)));
		buf_addch(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
		buf_addch(b, (char)(0x80 | (cp & 0x3f)));
	}
}

/*
 * A precomposed letter decomposed into b as NFD has it (a Latin letter of
 * U+00C0-U+017F: the letter and its combining mark; a Hangul syllable: its
 * jamo), so that text a macOS tool wrote decomposed and the model's
 * composed text compare equal.  False when cp is not one of those.
 */
static bool add_decomposed(struct buf *b, uint32_t cp)
{
	size_t m = cp >= 0xc0 && cp <= 0x17f ? (size_t)(nfd_mark[cp - 0xc0] - 'a') : SIZE_MAX;
	if (m < sizeof nfd_marks / sizeof nfd_marks[0]) {   /* ('.' is below 'a': none) */
		buf_addch(b, nfd_base[cp - 0xc0]);
		add_utf8(b, nfd_marks[m]);
		return true;
	}
	if (cp >= 0xac00 && cp <= 0xd7a3) {
		uint32_t si = cp - 0xac00;
		add_utf8(b, 0x1100 + si / 588);
		add_utf8(b, 0x1161 + (si % 588) / 28);
		if (si % 28)
			add_utf8(b, 0x11a7 + si % 28);
		return true;
	}
	return false;
}

/* The UTF-8 byte-order mark, which Windows editors put at the start of a
 * file (see BYTE-ORDER MARK in patch.h). */
#define BOM "\xef\xbb\xbf"

/* The length of the byte-order mark s starts with: 3, or 0 when none. */
static size_t bom_len(const char *s)
{
	return strncmp(s, BOM, 3) == 0 ? 3 : 0;
}

/* The line as compared in pass f (malloc'd): the loosest pass also reads
 * typographic punctuation as ASCII and composed letters decomposed.  A
 * leading byte-order mark is never compared: it is invisible, so a model
 * may copy it from read_file or not. */
static char *transform(const char *s, enum patch_fuzz f)
{
	size_t len, a = 0;
	struct buf b = BUF_INIT;

	s += bom_len(s);
	len = strlen(s);
	if (f == PATCH_EXACT)
		return xstrdup(s);
	if (f == PATCH_PUNCT) {
		for (size_t i = 0; i < len;) {
			size_t used = 1;
			uint32_t cp = (unsigned char)s[i] >= 0x80 ?
				utf8_at((const unsigned char *)s + i, len - i, &used) : 0;
			char c = cp ? punct_ascii(cp) : 0;
			if (cp && c) {
				buf_addch(&b, c);
				i += used;
			} else if (cp && add_decomposed(&b, cp)) {
				i += used;
			} else {
				buf_add(&b, s + i, cp ? used : 1);
				i += cp ? used : 1;
			}
		}
		s = b.buf;
		len = b.len;
	}
	while (len && is_ws(s[len - 1]))
		len--;
	if (f >= PATCH_STRIP)
		while (a < len && is_ws(s[a]))
			a++;
	{
		char *r = xstrndup(s + a, len - a);
		buf_release(&b);
		return r;
	}
}

static char **transform_all(char *const *lines, size_t n, enum patch_fuzz f)
{
	char **v = xmalloc((n ? n : 1) * sizeof(char *));
	for (size_t i = 0; i < n; i++)
		v[i] = transform(lines[i], f);
	return v;
}

static bool window_eq(char *const *a, size_t at, char *const *b, size_t nb)
{
	for (size_t k = 0; k < nb; k++)
		if (strcmp(a[at + k], b[k]) != 0)
			return false;
	return true;
}

/* Every match of pat in pass f (or the first only); returns the count. */
static size_t find_in_pass(long *first, char *const *lines, size_t n, char *const *pat, size_t np,
			   size_t start, bool eof, enum patch_fuzz f, bool all, long *second)
{
	char **tl = transform_all(lines, n, f), **tp = transform_all(pat, np, f);
	size_t count = 0;

	*first = -1;
	if (second)
		*second = -1;
	if (np <= n) {
		if (eof && n - np >= start && window_eq(tl, n - np, tp, np)) {
			*first = (long)(n - np);
			count = 1;
			if (!all)
				goto out;
		}
		for (size_t i = start; i + np <= n; i++) {
			if ((long)i == *first || !window_eq(tl, i, tp, np))
				continue;
			if (*first < 0) {
				*first = (long)i;
			} else if (second && *second < 0) {
				*second = (long)i;
			}
			count++;
			if (!all)
				break;
		}
	}
out:
	patch_lines_free(tl, n);
	patch_lines_free(tp, np);
	return count;
}

long patch_seek(char *const *lines, size_t n, char *const *pat, size_t np, size_t start,
		bool eof, enum patch_fuzz *fuzz)
{
	if (fuzz)
		*fuzz = PATCH_EXACT;
	if (np == 0)
		return (long)start;
	for (int f = PATCH_EXACT; f <= PATCH_PUNCT; f++) {
		long at;
		if (find_in_pass(&at, lines, n, pat, np, start, eof, (enum patch_fuzz)f, false, NULL)) {
			if (fuzz)
				*fuzz = (enum patch_fuzz)f;
			return at;
		}
	}
	return -1;
}

/* ================================================================ closest */

/* Sorted character bigrams of a stripped line. */
struct bigrams {
	uint16_t *v;
	size_t n;
};

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

static void bigrams_of(struct bigrams *g, const char *s)
{
	char *t = transform(s, PATCH_PUNCT);
	size_t len = strlen(t);

	if (len > 400)
		len = 400;
	g->n = len > 1 ? len - 1 : 0;
	g->v = xmalloc((g->n ? g->n : 1) * sizeof(uint16_t));
	for (size_t i = 0; i < g->n; i++)
		g->v[i] = (uint16_t)(((unsigned char)t[i] << 8) | (unsigned char)t[i + 1]);
	qsort(g->v, g->n, sizeof(uint16_t), cmp_u16);
	if (len == 1) {   /* a one-character line: compare it as itself */
		g->n = 1;
		g->v[0] = (unsigned char)t[0];
	}
	free(t);
}

static double dice(const struct bigrams *a, const struct bigrams *b)
{
	size_t i = 0, j = 0, common = 0;

	if (!a->n && !b->n)
		return 1.0;
	if (!a->n || !b->n)
		return 0.0;
	while (i < a->n && j < b->n) {
		if (a->v[i] == b->v[j]) {
			common++;
			i++;
			j++;
		} else if (a->v[i] < b->v[j]) {
			i++;
		} else {
			j++;
		}
	}
	return 2.0 * (double)common / (double)(a->n + b->n);
}

void patch_closest(struct buf *msg, char *const *lines, size_t n, char *const *pat, size_t np,
		   const char *path)
{
	struct bigrams *gl, *gp;
	size_t use[16], nuse = 0, win = np < n ? np : n, best = 0;
	double best_score = -1;

	if (!n || !np)
		return;
	gl = xcalloc(n, sizeof(*gl));
	gp = xcalloc(np, sizeof(*gp));
	for (size_t i = 0; i < n; i++)
		bigrams_of(&gl[i], lines[i]);
	for (size_t k = 0; k < np; k++)
		bigrams_of(&gp[k], pat[k]);
	/* Score every window on at most 16 of the pattern's lines. */
	for (size_t k = 0; k < np && nuse < 16; k++)
		if (np <= 16 || k < 8 || k >= np - 8)
			use[nuse++] = k;
	for (size_t i = 0; i + win <= n; i++) {
		double s = 0;
		size_t cnt = 0;
		for (size_t u = 0; u < nuse; u++) {
			if (use[u] >= win)
				continue;
			s += dice(&gp[use[u]], &gl[i + use[u]]);
			cnt++;
		}
		s = cnt ? s / (double)cnt : 0;
		if (s > best_score) {
			best_score = s;
			best = i;
		}
	}
	buf_addf(msg, "\nThe closest lines in %s are %zu-%zu (%d%% similar):\n", path, best + 1,
		 best + win, (int)(best_score * 100 + 0.5));
	for (size_t i = best; i < best + win && i < best + 40; i++)
		buf_addf(msg, "%6zu\t%s\n", i + 1, lines[i]);
	if (win > 40)
		buf_addf(msg, "   ...\t(%zu more lines)\n", win - 40);
	for (size_t k = 0; k < win; k++) {
		char *a = transform(pat[k], PATCH_PUNCT), *b = transform(lines[best + k], PATCH_PUNCT);
		bool same = !strcmp(a, b);
		free(a);
		free(b);
		if (!same) {
			buf_addf(msg, "First difference: line %zu of the file is\n\t%s\nbut the expected line %zu is\n\t%s\n",
				 best + k + 1, lines[best + k], k + 1, pat[k]);
			break;
		}
	}
	if (np > n)
		buf_addf(msg, "(the expected text has %zu lines, the file only %zu)\n", np, n);
	for (size_t i = 0; i < n; i++)
		free(gl[i].v);
	for (size_t k = 0; k < np; k++)
		free(gp[k].v);
	free(gl);
	free(gp);
}

/* ================================================================ edit */

static size_t count_exact(const char *hay, const char *needle, size_t *first_line,
			  struct buf *lines_msg)
{
	size_t count = 0, nl = strlen(needle);
	const char *p = hay;

	*first_line = 0;
	while ((p = strstr(p, needle))) {
		size_t line = 1;
		for (const char *q = hay; q < p; q++)
			line += *q == '\n';
		if (!count)
			*first_line = line;
		if (lines_msg && count < 10)
			buf_addf(lines_msg, "%s%zu", count ? ", " : "", line);
		count++;
		p += nl ? nl : 1;
	}
	return count;
}

static char *replace_all_exact(const char *hay, const char *old, const char *new)
{
	struct buf b = BUF_INIT;
	size_t lo = strlen(old);
	const char *p = hay, *q;

	while ((q = strstr(p, old))) {
		buf_add(&b, p, (size_t)(q - p));
		buf_adds(&b, new);
		p = q + lo;
	}
	buf_adds(&b, p);
	return buf_detach(&b, NULL);
}

/* Leading whitespace of s (length). */
static size_t indent_len(const char *s)
{
	size_t i = 0;
	while (s[i] == ' ' || s[i] == '\t')
		i++;
	return i;
}

/*
 * How the file indents what pat indents differently, for lines that matched
 * ignoring indentation: the pattern's base indentation (that of its least
 * indented non-blank line) is the file's `to` where the pattern has `from`,
 * and every other line's indentation beyond the base is the same in both
 * (a TAB for four spaces, 8 spaces for 12, 4 for none).  False when the
 * lines are not indented so uniformly (then nothing is re-indented).
 * *from and *to are new strings (on true).
 */
static bool indent_map(char **from, char **to, char *const *file, char *const *pat, size_t np)
{
	long base = -1;

	for (size_t k = 0; k < np; k++) {
		size_t pi = indent_len(pat[k]);
		if (pat[k][pi] && (base < 0 || pi < indent_len(pat[base])))
			base = (long)k;
	}
	if (base < 0)
		return false;
	size_t pb = indent_len(pat[base]), fb = indent_len(file[base]);
	for (size_t k = 0; k < np; k++) {
		size_t pi = indent_len(pat[k]), fi = indent_len(file[k]);
		if (!pat[k][pi])
			continue;
		if (fi < fb || strncmp(pat[k], pat[base], pb) != 0 || strncmp(file[k], file[base], fb) != 0 ||
		    pi - pb != fi - fb || strncmp(pat[k] + pb, file[k] + fb, pi - pb) != 0)
			return false;
	}
	if (pb == fb && strncmp(pat[base], file[base], pb) == 0)
		return false;   /* the same indentation: nothing to change */
	*from = xstrndup(pat[base], pb);
	*to = xstrndup(file[base], fb);
	return true;
}

/* line, re-indented into b by the map of indent_map() (from NULL: as it
 * is): a leading `from` becomes `to`; a blank line or one not starting
 * with `from` is kept as it is. */
static void add_reindented(struct buf *b, const char *line, const char *from, const char *to)
{
	size_t nf = from ? strlen(from) : 0;

	if (from && line[indent_len(line)] && strncmp(line, from, nf) == 0) {
		buf_adds(b, to);
		line += nf;
	}
	buf_adds(b, line);
}

static bool mostly_crlf(char *const *lines, size_t n)
{
	size_t crlf = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(lines[i]);
		crlf += l && lines[i][l - 1] == '\r';
	}
	return n && crlf * 2 > n;
}

/* text, which the file's byte-order mark was taken off, with the mark put
 * back in front: one mark, whether or not the model's text brought its own
 * (see BYTE-ORDER MARK in patch.h).  Takes text; returns a new string. */
static char *with_bom(char *text)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, BOM);
	buf_adds(&b, text + bom_len(text));
	free(text);
	return buf_detach(&b, NULL);
}

/* More than half of the line ends of text are CRLF. */
static bool text_mostly_crlf(const char *text)
{
	size_t lf = 0, crlf = 0;

	for (const char *p = text; (p = strchr(p, '\n')); p++) {
		lf++;
		crlf += p > text && p[-1] == '\r';
	}
	return lf && crlf * 2 > lf;
}

/* text with every bare LF made CRLF (a new string). */
static char *with_crlf(const char *text)
{
	struct buf b = BUF_INIT;

	for (const char *p = text; *p; p++) {
		if (*p == '\n' && (p == text || p[-1] != '\r'))
			buf_addch(&b, '\r');
		buf_addch(&b, *p);
	}
	return buf_detach(&b, NULL);
}

int patch_edit(char **out, enum patch_fuzz *fuzz, int *count, const char *content,
	       const char *path, const char *old, const char *new, bool replace_all)
{
	char **lines = NULL, **pat = NULL, **repl = NULL;
	size_t n = 0, np = 0, nr = 0, first_line;
	struct buf where = BUF_INIT, msg = BUF_INIT;
	size_t exact, bom = bom_len(content);
	int rc = -1;

	*out = NULL;
	*fuzz = PATCH_EXACT;
	*count = 0;
	/* The file's byte-order mark is matched by no one and kept (patch.h);
	 * a mark the model copied with `old` from line 1 comes off too, and
	 * with it that of `new`, which replaces line 1. */
	if (bom) {
		content += bom;
		if (bom_len(old)) {
			old += bom_len(old);
			new += bom_len(new);
		}
	}
	if (!*old)
		return forge_error("'%s': `old` is empty; give the text to replace", path);
	exact = count_exact(content, old, &first_line, &where);
	if (exact == 1 || (exact > 1 && replace_all)) {
		/* models send LF only: the lines `new` adds take the file's line
		 * ends, as the loose passes and apply_patch write them */
		char *ends = text_mostly_crlf(content) ? with_crlf(new) : NULL;
		*out = replace_all_exact(content, old, ends ? ends : new);
		free(ends);
		*count = (int)exact;
		rc = 0;
		goto out;
	}
	if (exact > 1) {
		forge_error("'%s': `old` occurs %zu times (lines %s%s); include more surrounding lines to make it unique, or set replace_all",
			    path, exact, where.buf, exact > 10 ? ", ..." : "");
		goto out;
	}
	n = patch_split_lines(&lines, content, strlen(content));
	np = patch_split_lines(&pat, old, strlen(old));
	nr = patch_split_lines(&repl, new, strlen(new));
	for (int f = PATCH_RSTRIP; f <= PATCH_PUNCT && np; f++) {
		long at, second;
		size_t c = find_in_pass(&at, lines, n, pat, np, 0, false, (enum patch_fuzz)f, true,
					&second);
		if (!c)
			continue;
		if (c > 1) {
			forge_error("'%s': `old` matches %zu places when %s (lines %ld and %ld); include more surrounding lines to make it unique",
				    path, c, patch_fuzz_name((enum patch_fuzz)f), at + 1, second + 1);
			goto out;
		}
		{
			struct buf b = BUF_INIT;
			char *from = NULL, *to = NULL;
			if (f < PATCH_STRIP || !indent_map(&from, &to, lines + at, pat, np))
				from = to = NULL;
			bool crlf = mostly_crlf(lines, n);
			bool final_nl = content[0] && content[strlen(content) - 1] == '\n';

			for (long i = 0; i < at; i++)
				buf_addf(&b, "%s\n", lines[i]);
			for (size_t i = 0; i < nr; i++) {
				size_t l = strlen(repl[i]);
				add_reindented(&b, repl[i], from, to);
				if (crlf && (!l || repl[i][l - 1] != '\r'))
					buf_addch(&b, '\r');
				buf_addch(&b, '\n');
			}
			for (size_t i = (size_t)at + np; i < n; i++)
				buf_addf(&b, "%s\n", lines[i]);
			if (!final_nl && b.len && (size_t)at + np >= n)
				b.buf[--b.len] = '\0';
			else if (!final_nl && b.len && b.buf[b.len - 1] == '\n')
				b.buf[--b.len] = '\0';
			free(from);
			free(to);
			*out = buf_detach(&b, NULL);
			*fuzz = (enum patch_fuzz)f;
			*count = 1;
			rc = 0;
			goto out;
		}
	}
	buf_addf(&msg, "'%s': `old` was not found (tried exact text, then whole lines ignoring trailing whitespace, indentation, typographic punctuation and Unicode composition). Copy `old` from the file as read_file shows it, without the line-number prefixes.",
		 path);
	patch_closest(&msg, lines, n, pat, np, path);
	while (msg.len && msg.buf[msg.len - 1] == '\n')
		msg.buf[--msg.len] = '\0';
	forge_error("%s", msg.buf);
out:
	if (rc == 0 && bom)
		*out = with_bom(*out);
	if (lines)
		patch_lines_free(lines, n);
	if (pat)
		patch_lines_free(pat, np);
	if (repl)
		patch_lines_free(repl, nr);
	buf_release(&where);
	buf_release(&msg);
	return rc;
}

/* ================================================================ parse */

struct chunk {
	char *ctx;
	char **old, **new;
	size_t nold, nnew;
	long *ctx_of;        /* per new line: the old line it repeats (context), or -1 */
	bool eof;
	bool old_no_eol;     /* "\ No newline at end of file" after a removed line */
	bool new_no_eol;     /* ... after an added (or context) line */
	int line_no;
	size_t trailing_bare;
};

enum hunk_kind { HUNK_ADD, HUNK_DELETE, HUNK_UPDATE };

struct hunk {
	enum hunk_kind kind;
	char *path, *move_to;
	struct buf add;
	size_t add_lines;
	struct chunk *chunks;
	size_t nchunks;
	int line_no;
};

struct parsed {
	struct hunk *h;
	size_t n;
};

static void strv_push(char ***v, size_t *n, const char *s)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(char *));
	(*v)[(*n)++] = xstrdup(s);
}

static void parsed_free(struct parsed *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct hunk *h = &p->h[i];
		free(h->path);
		free(h->move_to);
		buf_release(&h->add);
		for (size_t c = 0; c < h->nchunks; c++) {
			free(h->chunks[c].ctx);
			patch_lines_free(h->chunks[c].old, h->chunks[c].nold);
			patch_lines_free(h->chunks[c].new, h->chunks[c].nnew);
			free(h->chunks[c].ctx_of);
		}
		free(h->chunks);
	}
	free(p->h);
	p->h = NULL;
	p->n = 0;
}

/* s without surrounding whitespace, as a malloc'd string. */
static char *trim_dup(const char *s)
{
	size_t a = 0, e = strlen(s);
	while (is_ws(s[a]))
		a++;
	while (e > a && is_ws(s[e - 1]))
		e--;
	return xstrndup(s + a, e - a);
}

static const char *after(const char *trimmed, const char *prefix)
{
	size_t l = strlen(prefix);
	return strncmp(trimmed, prefix, l) == 0 ? trimmed + l : NULL;
}

static bool is_header(const char *line)
{
	char *t = trim_dup(line);
	bool h = after(t, "*** Add File: ") || after(t, "*** Delete File: ") ||
		 after(t, "*** Update File: ") || !strcmp(t, "*** End Patch");
	free(t);
	return h;
}

static void chunk_close(struct chunk *c)
{
	/* Bare empty lines at the end of a chunk are layout, not context. */
	while (c->trailing_bare && c->nold && c->nnew) {
		free(c->old[--c->nold]);
		free(c->new[--c->nnew]);
		c->trailing_bare--;
	}
}

static struct chunk *chunk_new(struct hunk *h, int line_no)
{
	struct chunk *c;
	if (h->nchunks)
		chunk_close(&h->chunks[h->nchunks - 1]);
	h->chunks = xrealloc(h->chunks, (h->nchunks + 1) * sizeof(*h->chunks));
	c = &h->chunks[h->nchunks++];
	memset(c, 0, sizeof(*c));
	c->line_no = line_no;
	return c;
}

static char *header_context(const char *t)
{
	const char *rest = t + 2;
	/* "@@ -1,3 +1,4 @@ ctx" (unified diff) counts as "@@ ctx". */
	if (rest[0] == ' ' && rest[1] == '-' && strstr(rest, " @@")) {
		const char *e = strstr(rest, " @@");
		rest = e + 3;
	}
	while (is_ws(*rest))
		rest++;
	return *rest ? trim_dup(rest) : NULL;
}

static int parse_patch(struct parsed *out, const char *text)
{
	char **lines;
	size_t n = patch_split_lines(&lines, text, strlen(text)), first = 0, last;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	/* Strip trailing \r of every line for the markers' sake. */
	while (first < n && !*lines[first])
		first++;
	last = n;
	while (last > first && !lines[last - 1][strspn(lines[last - 1], " \t\r")])
		last--;
	if (last > first + 1) {
		char *t0 = trim_dup(lines[first]), *tl = trim_dup(lines[last - 1]);
		bool heredoc = strstr(t0, "<<") && strncmp(t0, "***", 3) != 0;
		if (heredoc && (!strcmp(tl, "EOF") || !strcmp(tl, "PATCH") || !strcmp(tl, "'EOF'"))) {
			first++;
			last--;
		}
		free(t0);
		free(tl);
	}
	{
		char *t = first < last ? trim_dup(lines[first]) : xstrdup("");
		bool ok = !strcmp(t, "*** Begin Patch");
		free(t);
		if (!ok) {
			forge_error("the patch must start with '*** Begin Patch'");
			goto out;
		}
		t = last > first + 1 ? trim_dup(lines[last - 1]) : xstrdup("");
		ok = !strcmp(t, "*** End Patch");
		free(t);
		if (!ok) {
			forge_error("the patch must end with '*** End Patch' (was it cut off?)");
			goto out;
		}
	}
	for (size_t i = first + 1; i < last - 1;) {
		char *t = trim_dup(lines[i]);
		const char *arg;
		struct hunk *h;
		int line_no = (int)i + 1;

		if (!*t) {
			free(t);
			i++;
			continue;
		}
		out->h = xrealloc(out->h, (out->n + 1) * sizeof(*out->h));
		h = &out->h[out->n];
		memset(h, 0, sizeof(*h));
		buf_init(&h->add, 0);
		h->line_no = line_no;
		if ((arg = after(t, "*** Add File: "))) {
			size_t blank = 0;
			h->kind = HUNK_ADD;
			h->path = trim_dup(arg);
			out->n++;
			for (i++; i < last - 1 && !is_header(lines[i]); i++) {
				const char *l = lines[i];
				if (l[0] == '+') {
					for (; blank; blank--) {
						buf_addch(&h->add, '\n');
						h->add_lines++;
					}
					buf_adds(&h->add, l + 1);
					buf_addch(&h->add, '\n');
					h->add_lines++;
				} else if (!l[strspn(l, " \t\r")]) {
					blank++;
				} else if (l[0] == '\\' && h->add.len) {
					/* "\ No newline at end of file" */
					blank = 0;
					buf_truncate(&h->add, h->add.len - 1);
				} else {
					forge_error("line %zu: '%s' in Add File '%s': every line of a new file starts with '+'",
						    i + 1, l, h->path);
					free(t);
					goto out;
				}
			}
		} else if ((arg = after(t, "*** Delete File: "))) {
			h->kind = HUNK_DELETE;
			h->path = trim_dup(arg);
			out->n++;
			i++;
		} else if ((arg = after(t, "*** Update File: "))) {
			struct chunk *c = NULL;
			char prev = 0;   /* the kind of the chunk's last line: ' ', '-', '+' */
			h->kind = HUNK_UPDATE;
			h->path = trim_dup(arg);
			out->n++;
			i++;
			if (i < last - 1) {
				char *m = trim_dup(lines[i]);
				if ((arg = after(m, "*** Move to: "))) {
					h->move_to = trim_dup(arg);
					i++;
				}
				free(m);
			}
			for (; i < last - 1 && !is_header(lines[i]); i++) {
				const char *l = lines[i];
				char *lt = trim_dup(l);
				if (!strcmp(lt, "*** End of File")) {
					if (!c)
						c = chunk_new(h, (int)i + 1);
					c->eof = true;
					prev = 0;
				} else if (!strncmp(lt, "@@", 2) && (!l[0] || l[0] == '@' || is_ws(l[0]))) {
					c = chunk_new(h, (int)i + 1);
					c->ctx = header_context(lt);
					prev = 0;
				} else if (l[0] == '\\' && c && prev) {
					/* unified diff's "\ No newline at end of file": the
					 * line before it has no newline, on its side(s) */
					c->old_no_eol |= prev != '+';
					c->new_no_eol |= prev != '-';
				} else if (l[0] == ' ' || l[0] == '-' || l[0] == '+' || !l[0]) {
					if (!c || (c->eof && (c->nold || c->nnew)))
						c = chunk_new(h, (int)i + 1);
					prev = l[0] ? l[0] : ' ';
					if (l[0] != '+')
						strv_push(&c->old, &c->nold, l[0] ? l + 1 : "");
					if (l[0] != '-') {
						strv_push(&c->new, &c->nnew, l[0] ? l + 1 : "");
						c->ctx_of = xrealloc(c->ctx_of, c->nnew * sizeof(long));
						c->ctx_of[c->nnew - 1] = l[0] == '+' ? -1 : (long)c->nold - 1;
					}
					c->trailing_bare = l[0] ? 0 : c->trailing_bare + 1;
				} else {
					forge_error("line %zu: '%s' in Update File '%s': change lines start with ' ' (context), '-' (removed) or '+' (added); a new change starts with '@@'",
						    i + 1, l, h->path);
					free(lt);
					free(t);
					goto out;
				}
				free(lt);
			}
			if (c)
				chunk_close(c);
			if (!h->nchunks && !h->move_to) {
				forge_error("line %d: Update File '%s' has no changes", line_no, h->path);
				free(t);
				goto out;
			}
		} else {
			forge_error("invalid hunk at line %d, '%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'",
				    line_no, t);
			free(t);
			goto out;
		}
		free(t);
	}
	if (!out->n) {
		forge_error("the patch changes no file");
		goto out;
	}
	rc = 0;
out:
	patch_lines_free(lines, n);
	if (rc < 0)
		parsed_free(out);
	return rc;
}

/* ================================================================ apply */

struct vfile {
	char *path;          /* clean */
	bool loaded;         /* content known (read or written) */
	bool exists;
	bool orig_exists;
	bool changed;
	bool latin1;         /* not UTF-8: content is its Latin-1 reading (see patch.h) */
	struct buf content;
	char *action;        /* add|modify|delete|rename */
	char *from;
	long additions, deletions;
};

struct vfs {
	const struct sandbox_root *root;
	struct vfile *f;
	size_t n;
};

/* The file's current state, reading it from disk the first time.  A
 * negative sandbox code when the path is refused or unreadable. */
static int vfs_get(struct vfile **out, struct vfs *fs, const char *clean)
{
	struct vfile *v;
	int rc;

	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->f[i].path, clean)) {
			*out = &fs->f[i];
			return 0;
		}
	fs->f = xrealloc(fs->f, (fs->n + 1) * sizeof(*fs->f));
	v = &fs->f[fs->n++];
	memset(v, 0, sizeof(*v));
	v->path = xstrdup(clean);
	buf_init(&v->content, 0);
	rc = sandbox_read_file(&v->content, fs->root, clean, MAX_FILE_BYTES);
	if (rc == SANDBOX_ENOENT) {
		rc = 0;
	} else if (rc == 0) {
		v->exists = v->orig_exists = true;
		/* A text file that is not UTF-8 is patched as read_file shows it
		 * and written back in its own bytes. */
		if (!memchr(v->content.buf, '\0', v->content.len) &&
		    patch_is_latin1(v->content.buf, v->content.len)) {
			struct buf u = BUF_INIT;
			patch_latin1_decode(&u, v->content.buf, v->content.len);
			buf_release(&v->content);
			v->content = u;
			v->latin1 = true;
		}
	}
	v->loaded = true;
	*out = v;
	return rc;
}

static void vfs_free(struct vfs *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		free(fs->f[i].path);
		free(fs->f[i].action);
		free(fs->f[i].from);
		buf_release(&fs->f[i].content);
	}
	free(fs->f);
}

static void set_action(struct vfile *v, const char *a)
{
	free(v->action);
	v->action = xstrdup(a);
	v->changed = true;
}

struct repl {
	size_t at, len;
	char **lines;
	size_t n;
	const long *ctx_of;  /* context lines keep the file's own text */
	char *from, *to;     /* re-indent the added lines (indent_map()), or NULL */
	const struct chunk *c;
};

/*
 * Line i of the file (of n) into b with its line end; returns the length
 * of that line end (a CRLF file's "\r\n": 2).  The last line of a file
 * without a final newline gets one here, in the file's style, in case
 * lines follow it; apply_chunks() takes it off again when the result is to
 * keep no final newline.
 */
static size_t add_file_line(struct buf *b, char *const *lines, size_t i, size_t n,
			    bool final_nl, bool crlf)
{
	size_t l = strlen(lines[i]);
	bool unterm = i + 1 == n && !final_nl, cr = l && lines[i][l - 1] == '\r';

	buf_add(b, lines[i], l);
	if (unterm && crlf && !cr) {
		buf_adds(b, "\r\n");
		return 2;
	}
	buf_addch(b, '\n');
	return crlf && cr && !unterm ? 2 : 1;   /* (an unterminated line's '\r' is its text) */
}

static int cmp_repl(const void *a, const void *b)
{
	const struct repl *x = a, *y = b;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* Apply an update hunk's chunks to content; problems go to errs. */
static char *apply_chunks(const struct hunk *h, const char *content, struct buf *errs,
			  struct buf *notes, long *adds, long *dels)
{
	char **lines;
	/* the byte-order mark is no line's text: off while matching, and put
	 * back on the result (patch.h) */
	size_t bom = bom_len(content), len = strlen(content + bom);
	size_t n = patch_split_lines(&lines, content + bom, len), idx = 0, nr = 0;
	struct repl *r = xcalloc(h->nchunks ? h->nchunks : 1, sizeof(*r));
	/* (a last line without a newline tells nothing of the line ends) */
	bool final_nl = !len || content[bom + len - 1] == '\n';
	bool crlf = mostly_crlf(lines, final_nl ? n : n - 1), ok = true, end_nl = final_nl;
	char *result = NULL;

	for (size_t ci = 0; ci < h->nchunks; ci++) {
		const struct chunk *c = &h->chunks[ci];
		enum patch_fuzz fz = PATCH_EXACT;
		size_t nold = c->nold, nnew = c->nnew;
		long at;

		if (c->ctx) {
			char *pat[1] = { c->ctx };
			at = patch_seek(lines, n, pat, 1, idx, false, &fz);
			if (at < 0) {
				buf_addf(errs, "- %s: failed to find context '%s' (chunk %zu, patch line %d)",
					 h->path, c->ctx, ci + 1, c->line_no);
				patch_closest(errs, lines, n, pat, 1, h->path);
				ok = false;
				continue;
			}
			if (fz != PATCH_EXACT)
				buf_addf(notes, "  %s: context '%s' matched %s\n", h->path, c->ctx,
					 patch_fuzz_name(fz));
			idx = (size_t)at + 1;
		}
		if (!nold) {
			size_t ins = c->ctx ? idx : n;
			r[nr++] = (struct repl){ ins, 0, c->new, nnew, NULL, NULL, NULL, c };
			*adds += (long)nnew;
			continue;
		}
		at = patch_seek(lines, n, c->old, nold, idx, c->eof || c->old_no_eol || c->new_no_eol, &fz);
		if (at < 0 && nold > 1 && !*c->old[nold - 1]) {
			nold--;
			if (nnew && !*c->new[nnew - 1])
				nnew--;
			at = patch_seek(lines, n, c->old, nold, idx, c->eof || c->old_no_eol || c->new_no_eol, &fz);
		}
		if (at < 0) {
			buf_addf(errs, "- %s: failed to find the expected lines of chunk %zu (patch line %d):\n",
				 h->path, ci + 1, c->line_no);
			for (size_t k = 0; k < c->nold && k < 40; k++)
				buf_addf(errs, "\t%s\n", c->old[k]);
			patch_closest(errs, lines, n, c->old, c->nold, h->path);
			ok = false;
			continue;
		}
		if (fz != PATCH_EXACT)
			buf_addf(notes, "  %s: chunk %zu matched at line %ld %s\n", h->path, ci + 1,
				 at + 1, patch_fuzz_name(fz));
		r[nr++] = (struct repl){ (size_t)at, nold, c->new, nnew, c->ctx_of, NULL, NULL, c };
		if (fz >= PATCH_STRIP && !indent_map(&r[nr - 1].from, &r[nr - 1].to, lines + at, c->old, nold))
			r[nr - 1].from = r[nr - 1].to = NULL;
		idx = (size_t)at + nold;
		{
			/* Count the real changes: lines not shared by old and new. */
			size_t o = 0, w = 0, keep = 0;
			while (o < nold && w < nnew) {
				if (!strcmp(c->old[o], c->new[w])) {
					keep++;
					o++;
					w++;
				} else {
					break;
				}
			}
			*dels += (long)(nold - keep);
			*adds += (long)(nnew - keep);
		}
	}
	if (ok) {
		struct buf b = BUF_INIT;
		size_t pos = 0, last_end = 0;   /* the line end of b's last line */
		qsort(r, nr, sizeof(*r), cmp_repl);
		for (size_t k = 0; k < nr; k++) {
			if (r[k].at < pos) {
				buf_addf(errs, "- %s: two chunks change the same lines (near line %zu)\n",
					 h->path, r[k].at + 1);
				ok = false;
				break;
			}
			for (; pos < r[k].at; pos++)
				last_end = add_file_line(&b, lines, pos, n, final_nl, crlf);
			for (size_t j = 0; j < r[k].n; j++) {
				long oi = r[k].ctx_of ? r[k].ctx_of[j] : -1;
				size_t l;
				if (oi >= 0 && (size_t)oi < r[k].len) {
					last_end = add_file_line(&b, lines, r[k].at + (size_t)oi, n, final_nl,
								 crlf);
					continue;
				}
				l = strlen(r[k].lines[j]);
				add_reindented(&b, r[k].lines[j], r[k].from, r[k].to);
				if (crlf && (!l || r[k].lines[j][l - 1] != '\r'))
					buf_addch(&b, '\r');
				buf_addch(&b, '\n');
				last_end = crlf ? 2 : 1;
			}
			pos = r[k].at + r[k].len;
			/* a chunk that ends the file says whether the end has a
			 * newline with "\ No newline at end of file"; none keeps
			 * the file's (see patch.h) */
			if (pos == n && r[k].c->new_no_eol)
				end_nl = false;
			else if (pos == n && r[k].c->old_no_eol)
				end_nl = true;
		}
		for (; pos < n; pos++)
			last_end = add_file_line(&b, lines, pos, n, final_nl, crlf);
		if (!end_nl && b.len >= last_end)
			buf_truncate(&b, b.len - last_end);
		if (ok)
			result = buf_detach(&b, NULL);
		if (ok && bom)
			result = with_bom(result);
		buf_release(&b);
	}
	patch_lines_free(lines, n);
	for (size_t k = 0; k < nr; k++) {
		free(r[k].from);
		free(r[k].to);
	}
	free(r);
	return result;
}

/* line (of chunk ci) is one a Latin-1 file can hold; else why goes to errs. */
static bool line_fits_latin1(const struct hunk *h, size_t ci, const char *line, struct buf *errs)
{
	struct buf scratch = BUF_INIT, what = BUF_INIT;
	bool ok;

	buf_addf(&what, "chunk %zu (patch line %d), its line '%s'", ci + 1, h->chunks[ci].line_no, line);
	ok = patch_latin1_encode(&scratch, line, strlen(line), h->path, what.buf) == 0;
	if (!ok)
		buf_addf(errs, "- %s\n", forge_last_error());
	buf_release(&scratch);
	buf_release(&what);
	return ok;
}

/* Every line of an update hunk is one a Latin-1 file can hold; else the
 * first that is not goes to errs. */
static bool hunk_fits_latin1(const struct hunk *h, struct buf *errs)
{
	for (size_t ci = 0; ci < h->nchunks; ci++) {
		const struct chunk *c = &h->chunks[ci];
		if (c->ctx && !line_fits_latin1(h, ci, c->ctx, errs))
			return false;
		for (size_t k = 0; k < c->nold; k++)
			if (!line_fits_latin1(h, ci, c->old[k], errs))
				return false;
		for (size_t k = 0; k < c->nnew; k++)
			if (!line_fits_latin1(h, ci, c->new[k], errs))
				return false;
	}
	return true;
}

static size_t count_lines(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n + (len && s[len - 1] != '\n');
}

int patch_apply(char **summary, jv *files, const struct sandbox_root *root, const char *text)
{
	struct parsed p;
	struct vfs fs = { root, NULL, 0 };
	struct buf errs = BUF_INIT, notes = BUF_INIT, sum = BUF_INIT, enc = BUF_INIT, links = BUF_INIT;
	struct sandbox_txn *txn = NULL;
	int rc = -1, worst = 0;

	*summary = NULL;
	*files = jv_null();
	if (parse_patch(&p, text) < 0)
		return -1;
	for (size_t i = 0; i < p.n; i++) {
		struct hunk *h = &p.h[i];
		struct vfile *v = NULL, *d = NULL;
		/* a name list_files showed quoted ("caf\351.txt") is that file's */
		char *clean = NULL, *dest = NULL, *raw = buf_path_unquoted(h->path);
		char *raw_to = buf_path_unquoted(h->move_to);
		int r;

		r = sandbox_path_clean(&clean, raw, false);
		if (r == 0 && raw_to)
			r = sandbox_path_clean(&dest, raw_to, false);
		free(raw);
		free(raw_to);
		if (r < 0) {
			buf_addf(&errs, "- %s\n", forge_last_error());
			if (r < worst)
				worst = r;
			goto next;
		}
		if ((r = vfs_get(&v, &fs, clean)) < 0) {
			buf_addf(&errs, "- %s\n", forge_last_error());
			if (r == SANDBOX_EDENIED)
				worst = r;
			goto next;
		}
		switch (h->kind) {
		case HUNK_ADD:
			if (v->exists) {
				buf_addf(&errs, "- Add File '%s': the file already exists; use Update File to change it (or Delete File first)\n",
					 h->path);
				goto next;
			}
			buf_reset(&v->content);
			buf_add(&v->content, h->add.buf, h->add.len);
			v->exists = true;
			v->additions += (long)h->add_lines;
			set_action(v, v->orig_exists ? "modify" : "add");
			break;
		case HUNK_DELETE:
			if (!v->exists) {
				buf_addf(&errs, "- Delete File '%s': no such file\n", h->path);
				goto next;
			}
			v->deletions += (long)count_lines(v->content.buf, v->content.len);
			buf_reset(&v->content);
			v->exists = false;
			v->latin1 = false;   /* a file added again here is a new one */
			set_action(v, "delete");
			break;
		case HUNK_UPDATE: {
			char *res;
			long adds = 0, dels = 0;
			if (!v->exists) {
				buf_addf(&errs, "- Update File '%s': no such file (use Add File to create it)\n",
					 h->path);
				goto next;
			}
			if (v->latin1 && !hunk_fits_latin1(h, &errs))
				goto next;
			res = h->nchunks ? apply_chunks(h, v->content.buf, &errs, &notes, &adds, &dels)
					 : xstrdup(v->content.buf);
			if (!res)
				goto next;
			if (dest && strcmp(dest, clean) != 0) {
				if ((r = vfs_get(&d, &fs, dest)) < 0) {
					buf_addf(&errs, "- %s\n", forge_last_error());
					if (r == SANDBOX_EDENIED)
						worst = r;
					free(res);
					goto next;
				}
				vfs_get(&v, &fs, clean);   /* the array may have moved */
				if (d->exists) {
					buf_addf(&errs, "- Move to '%s': the destination already exists\n",
						 h->move_to);
					free(res);
					goto next;
				}
				buf_reset(&d->content);
				buf_adds(&d->content, res);
				d->exists = true;
				d->latin1 = v->latin1;   /* a move keeps the encoding */
				d->additions += adds;
				d->deletions += dels;
				set_action(d, "rename");
				free(d->from);
				d->from = xstrdup(clean);
				buf_reset(&v->content);
				v->exists = false;
				set_action(v, "delete");
				v->changed = v->orig_exists;
				v->additions = v->deletions = 0;
				/* The source disappears silently into the rename. */
				free(v->action);
				v->action = xstrdup("moved");
			} else {
				buf_reset(&v->content);
				buf_adds(&v->content, res);
				v->additions += adds;
				v->deletions += dels;
				if (!v->action || strcmp(v->action, "add") != 0)
					set_action(v, v->orig_exists ? "modify" : "add");
			}
			free(res);
			break;
		}
		}
next:
		free(clean);
		free(dest);
	}
	/* Files read as Latin-1 go back to their bytes (hunk_fits_latin1()
	 * checked the text; this cannot fail but is not taken on trust). */
	for (size_t i = 0; i < fs.n && !errs.len; i++) {
		struct vfile *v = &fs.f[i];
		struct buf bytes = BUF_INIT;
		if (!v->changed || !v->exists || !v->latin1)
			continue;
		char *shown = buf_path_quoted(v->path);
		if (patch_latin1_encode(&bytes, v->content.buf, v->content.len, shown, "the result") < 0)
			buf_addf(&errs, "- %s\n", forge_last_error());
		free(shown);
		buf_release(&v->content);
		v->content = bytes;
	}
	if (errs.len) {
		while (errs.len && errs.buf[errs.len - 1] == '\n')
			errs.buf[--errs.len] = '\0';
		forge_error("the patch was not applied; nothing was changed:\n%s", errs.buf);
		rc = worst ? worst : -1;
		goto out;
	}
	txn = sandbox_txn_new(root);
	*files = jv_array();
	buf_adds(&sum, "Success. Updated the following files:\n");
	for (size_t i = 0; i < fs.n; i++) {
		struct vfile *v = &fs.f[i];
		jv f;
		if (!v->changed)
			continue;
		if (v->exists && v->from)   /* a move keeps the mode (an executable stays one) */
			sandbox_txn_write_like(txn, v->path, v->content.buf, v->content.len, v->from);
		else if (v->exists)
			sandbox_txn_write(txn, v->path, v->content.buf, v->content.len);
		else if (v->orig_exists)
			sandbox_txn_remove(txn, v->path);
		else
			continue;   /* added and deleted again */
		if (!strcmp(v->action, "moved"))
			continue;
		/* (a name that is not UTF-8 quoted, not made U+FFFD: json_path()) */
		f = json_set(jv_object(), "path", json_path(v->path));
		f = json_set(f, "action", jv_string(v->action));
		if (v->from)
			f = json_set(f, "from", json_path(v->from));
		f = json_set(f, "additions", jv_number((double)v->additions));
		f = json_set(f, "deletions", jv_number((double)v->deletions));
		if (v->exists && v->latin1) {
			f = json_set(f, "encoding", jv_string("latin1"));
			if (enc.len)
				buf_adds(&enc, ", ");
			buf_add_path_quoted(&enc, v->path);
		}
		/* a link to nothing read as absent: the new file takes its place */
		char *link = NULL;

		if (v->exists && !v->orig_exists && sandbox_dangling_link(&link, root, v->path) == 1) {
			f = json_set(f, "replaced_symlink", jv_string(link));
			buf_addf(&links, "%s%s (a link to '%s')", links.len ? ", " : "", v->path, link);
		}
		free(link);
		*files = jv_array_append(*files, f);
		/* one name a line, as list_files shows it (a name that is not
		 * UTF-8, or holds a newline, quoted) */
		buf_addf(&sum, "%c ", v->action[0] == 'a' ? 'A' : v->action[0] == 'd' ? 'D' : 'M');
		buf_add_path_quoted(&sum, v->path);
		if (!strcmp(v->action, "rename")) {
			buf_adds(&sum, " (moved from ");
			buf_add_path_quoted(&sum, v->from);
			buf_addch(&sum, ')');
		}
		buf_addch(&sum, '\n');
	}
	if ((rc = sandbox_txn_commit(txn)) < 0) {
		if (sandbox_txn_partial(txn))
			forge_error_prefix("the patch was applied only in part (check the files named)");
		else
			forge_error_prefix("the patch was not applied; nothing was changed");
		jv_free(*files);
		*files = jv_null();
		goto out;
	}
	if (notes.len) {
		buf_adds(&sum, "Note: some lines matched only loosely:\n");
		buf_add(&sum, notes.buf, notes.len);
	}
	if (enc.len)
		buf_addf(&sum, "Note: not UTF-8, so written in Latin-1, its own encoding: %s\n", enc.buf);
	if (links.len)
		buf_addf(&sum, "Note: a symbolic link to nothing stood where a file was added; the file took "
			 "the link's place (git records the link replaced by a file), and the file the link "
			 "named was not created: %s\n", links.buf);
	while (sum.len && sum.buf[sum.len - 1] == '\n')
		sum.buf[--sum.len] = '\0';
	*summary = buf_detach(&sum, NULL);
	rc = 0;
out:
	sandbox_txn_free(txn);
	vfs_free(&fs);
	parsed_free(&p);
	buf_release(&errs);
	buf_release(&notes);
	buf_release(&sum);
	buf_release(&enc);
	buf_release(&links);
	return rc;
}
