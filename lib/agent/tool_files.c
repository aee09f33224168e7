/*
 * tool_files.c - the file tools: read_file, list_files, grep, write_file.
 * Every path goes through sandbox.h.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "agent/patch.h"
#include "agent/tools.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "git/git.h"
#include "os/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_CUT 2000
#define GREP_FILE_MAX (4u << 20)
#define GREP_LINE_CUT 300
/* A pattern that backtracks catastrophically ((a|a)+c on a long line)
 * stops at these limits per line (PCRE2's defaults: 10M steps, a 20 GB
 * heap); such a line is named to the model, never taken as "no match". */
#define GREP_MATCH_LIMIT 1000000
#define GREP_DEPTH_LIMIT 1000000
#define GREP_HEAP_LIMIT_KIB (64u << 10)
#define GREP_FAILED_MAX 10        /* lines over a limit before the search stops */
#define GREP_TIME_MS 20000        /* one call's budget: it stops and says so */

/*
 * A whole-number argument of a tool, clamped to [lo, hi].  The schema
 * checks that it is an integer, not that it fits a long: a double out of
 * range cast to long is undefined (1e20 came out LONG_MIN, and read_file
 * answered "[lines -9223372036854775808-0 of 43]").  NaN reads as lo.
 */
static long num_arg(jv input, const char *key, double dflt, long lo, long hi)
{
	double v = json_get_num(input, key, dflt);

	if (!(v > (double)lo))
		return lo;
	if (v >= (double)hi)
		return hi;
	return (long)v;
}

/* ================================================================ read_file */

/* No file has more lines than this (2^53, a double's exact integers): a
 * start_line or end_line beyond it means "past the end" as it is, and
 * start + max_lines cannot overflow. */
#define LINE_ARG_MAX (1L << 53)
#define READ_LINES_MAX 10000 /* the schema's max_lines maximum */

static bool looks_binary(const char *p, size_t n)
{
	return memchr(p, '\0', n < 8000 ? n : 8000) != NULL;
}

/*
 * The next line of f, its newline included, like getline(); but only its
 * first keep bytes are kept in *line (NUL-terminated), however long the
 * line is: a file of one 900 MB line (minified, generated) held whole in
 * this unconfined process's memory otherwise.  Returns the line's whole
 * length, -1 at the end; *ends how many of its last bytes are its end of
 * line ("\n" 1, "\r\n" 2, none 0).
 */
static ssize_t line_bounded(char **line, size_t *cap, FILE *f, size_t keep, int *ends)
{
	size_t total = 0, kept = 0;
	int c, prev = EOF;

	if (*cap < keep + 1) {
		*line = xrealloc(*line, keep + 1);
		*cap = keep + 1;
	}
	*ends = 0;
	while ((c = getc_unlocked(f)) != EOF) {
		if (kept < keep)
			(*line)[kept++] = (char)c;
		total++;
		if (c == '\n') {
			*ends = prev == '\r' ? 2 : 1;
			break;
		}
		prev = c;
	}
	(*line)[kept] = '\0';
	return total ? (ssize_t)total : -1;
}

/*
 * True when the rest of f is valid UTF-8, read in chunks (a sequence cut
 * by a chunk's end is carried to the next).  Leaves f at the end or where
 * it stopped.
 */
static bool stream_is_utf8(FILE *f)
{
	char b[65536];
	size_t carry = 0, n;

	while ((n = fread(b + carry, 1, sizeof b - carry, f)) > 0) {
		size_t len = carry + n, bad = json_utf8_invalid_at(b, len);
		/* a UTF-8 sequence is at most 4 bytes: a bad one that close to
		 * the end may only be cut short */
		if (bad < len && len - bad >= 4)
			return false;
		carry = len - bad;
		memmove(b, b + bad, carry);
	}
	return carry == 0;
}

void tool_read_file(struct tool_result *out, const struct tool_ctx *ctx,
		    const struct sandbox_root *root, jv input)
{
	const char *path = json_get_str(input, "path");
	long start = num_arg(input, "start_line", 1, 1, LINE_ARG_MAX);
	long max_lines = num_arg(input, "max_lines", 2000, 1, READ_LINES_MAX);
	long end = num_arg(input, "end_line", (double)(start + max_lines - 1), 1, LINE_ARG_MAX);
	/* the model's own numbers, for the messages (a clamped one is not) */
	double start_asked = json_get_num(input, "start_line", 1);
	double end_asked = json_get_num(input, "end_line", (double)end);
	size_t cap = ctx->read_cap ? ctx->read_cap : TOOL_READ_CAP_DEFAULT;
	struct buf text = BUF_INIT, body = BUF_INIT, shown = BUF_INIT;
	char *name = NULL;
	long lineno = 0, shown_last = 0;
	bool cut = false, latin1 = false;
	struct stat st;
	int fd, rc;
	FILE *f;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	int ends;

	if (end < start) {
		tool_fail(out, TOOL_ERR_INPUT, jv_object(), "read_file: end_line %.0f is before start_line %.0f",
			  end_asked, start_asked);
		return;
	}
	if (end - start + 1 > max_lines)
		end = start + max_lines - 1;
	/* a name list_files showed quoted ("caf\351.txt") is that file's */
	name = buf_path_unquoted(path);
	rc = sandbox_open_read(&fd, &st, root, name);
	free(name);
	if (rc < 0) {
		tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "read_file: %s", forge_last_error());
		return;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		tool_fail(out, TOOL_ERR_INTERNAL, jv_object(), "read_file: '%s': %s", path, strerror(errno));
		return;
	}
	{
		char head[8000];
		size_t n = fread(head, 1, sizeof(head), f);
		if (looks_binary(head, n)) {
			jv d = json_set(jv_object(), "path", jv_string(path));
			d = json_set(d, "bytes", jv_number((double)st.st_size));
			d = json_set(d, "binary", jv_true());
			buf_addf(&text, "'%s' is a binary file (%lld bytes); its content is not shown.", path,
				 (long long)st.st_size);
			fclose(f);
			tool_ok(out, buf_detach(&text, NULL), d);
			return;
		}
		rewind(f);
		/* A file that is not UTF-8 is shown as Latin-1, one character a
		 * byte, so that the model's copy of it maps back to its bytes
		 * (patch.h); shown lossily, its other bytes all read U+FFFD. */
		latin1 = !stream_is_utf8(f);
		rewind(f);
	}
	while ((len = line_bounded(&line, &lcap, f, LINE_CUT + 2, &ends)) >= 0) {
		size_t kept = (size_t)len < lcap ? (size_t)len : lcap - 1;

		lineno++;
		if (lineno < start || lineno > end || cut)
			continue;
		len -= ends;
		if (kept > (size_t)len) {
			kept = (size_t)len;
			line[kept] = '\0';
		}
		buf_reset(&shown);
		if (latin1)
			patch_latin1_decode(&shown, line, kept > LINE_CUT ? LINE_CUT : kept);
		else
			buf_add(&shown, line, kept > LINE_CUT ? LINE_CUT : kept);
		if (body.len + shown.len + (kept > LINE_CUT ? 40 : 0) + 16 > cap) {
			cut = true;
			continue;
		}
		buf_addf(&body, "%6ld\t", lineno);
		tool_text_add(&body, shown.buf, shown.len);
		if ((size_t)len > LINE_CUT)
			buf_addf(&body, "\xe2\x80\xa6 [line cut: %zd chars]", len);
		buf_addch(&body, '\n');
		shown_last = lineno;
	}
	free(line);
	fclose(f);
	buf_release(&shown);
	if (lineno == 0) {
		buf_addf(&text, "'%s' is empty.", path);
	} else if (start > lineno) {
		buf_release(&body);
		tool_fail(out, TOOL_ERR_INPUT, jv_object(),
			  "read_file: start_line %.0f is past the end of '%s' (%ld lines)", start_asked, path,
			  lineno);
		return;
	} else {
		if (latin1)
			buf_addf(&text, "['%s' is not UTF-8: shown as Latin-1, one character a byte; edit_file, "
				 "apply_patch and write_file write your text back in its own bytes, so use only "
				 "characters up to U+00FF in it]\n", path);
		buf_add(&text, body.buf, body.len);
		if (shown_last < lineno)
			buf_addf(&text, "[lines %ld-%ld of %ld; call again with start_line=%ld to read on]",
				 start, shown_last, lineno, shown_last + 1);
		else if (start > 1)
			buf_addf(&text, "[lines %ld-%ld of %ld]", start, shown_last, lineno);
		else if (text.len)
			text.buf[--text.len] = '\0';
	}
	buf_release(&body);
	{
		jv d = json_set(jv_object(), "path", jv_string(path));
		d = json_set(d, "start_line", jv_number((double)start));
		d = json_set(d, "end_line", jv_number((double)shown_last));
		d = json_set(d, "total_lines", jv_number((double)lineno));
		d = json_set(d, "bytes", jv_number((double)st.st_size));
		d = json_set(d, "truncated", jv_bool(shown_last < lineno || cut));
		if (latin1)
			d = json_set(d, "encoding", jv_string("latin1"));
		tool_ok(out, buf_detach(&text, NULL), d);
	}
}

/* ================================================================ file set */

/* Glob with '*' (within a component), '**' (across), '?', '[...]'. */
static bool glob_match(const char *p, const char *s)
{
	while (*p) {
		if (p[0] == '*' && p[1] == '*') {
			const char *rest = p + 2;
			if (*rest == '/')
				rest++;
			if (!*rest)
				return true;
			for (const char *t = s;; t++) {
				if ((t == s || t[-1] == '/') && glob_match(rest, t))
					return true;
				if (!*t)
					return false;
			}
		}
		if (*p == '*') {
			for (const char *t = s;; t++) {
				if (glob_match(p + 1, t))
					return true;
				if (!*t || *t == '/')
					return false;
			}
		}
		if (!*s)
			return false;
		if (*p == '?') {
			if (*s == '/')
				return false;
		} else if (*p == '[') {
			const char *q = p + 1;
			bool neg = *q == '!' || *q == '^', hit = false;
			if (neg)
				q++;
			for (bool first = true; *q && (first || *q != ']'); first = false) {
				if (q[1] == '-' && q[2] && q[2] != ']') {
					hit |= *s >= q[0] && *s <= q[2];
					q += 3;
				} else {
					hit |= *s == *q;
					q++;
				}
			}
			if (*q != ']')   /* no closing bracket: a literal '[' */
				hit = *s == '[', q = p;
			if (hit == neg)
				return false;
			p = q;
		} else if (*p != *s) {
			return false;
		}
		p++;
		s++;
	}
	return !*s;
}

static bool path_matches(const char *glob, const char *path)
{
	const char *base;

	if (!glob)
		return true;
	if (strchr(glob, '/'))
		return glob_match(glob, path);
	base = strrchr(path, '/');
	return glob_match(glob, base ? base + 1 : path);
}

struct fileset {
	char **v;
	size_t n, cap;
};

static void fs_add(struct fileset *fs, const char *p)
{
	if (fs->n == fs->cap) {
		fs->cap = fs->cap ? fs->cap * 2 : 256;
		fs->v = xrealloc(fs->v, fs->cap * sizeof(char *));
	}
	fs->v[fs->n++] = xstrdup(p);
}

static void fs_free(struct fileset *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		free(fs->v[i]);
	free(fs->v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Without git: walk the tree, skipping .git and not following symlinks. */
static void walk(struct fileset *fs, const char *abs, const char *rel, int depth)
{
	DIR *d;
	struct dirent *e;

	if (depth > 40 || !(d = opendir(abs)))
		return;
	while ((e = readdir(d))) {
		struct buf a = BUF_INIT, r = BUF_INIT;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    sandbox_path_is_git(e->d_name))
			continue;
		buf_addf(&a, "%s/%s", abs, e->d_name);
		buf_addf(&r, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		if (e->d_type == DT_DIR)
			walk(fs, a.buf, r.buf, depth + 1);
		else if (e->d_type == DT_REG || e->d_type == DT_LNK)
			fs_add(fs, r.buf);
		buf_release(&a);
		buf_release(&r);
	}
	closedir(d);
}

/* Tracked files plus untracked files that are not ignored, sorted. */
static int list_repo_files(struct fileset *fs, const char *root)
{
	git_repository *repo = NULL;
	git_index *idx = NULL;
	git_status_list *st = NULL;
	git_status_options so;
	struct fileset del = { 0 };
	size_t w = 0;
	int rc = 0;

	forge_git_init();
	if (forge_git_repo_open(&repo, root, 0) != 0 || git_repository_is_bare(repo)) {
		walk(fs, root, "", 0);
		goto sort;
	}
	if (git_repository_index(&idx, repo) == 0) {
		for (size_t i = 0; i < git_index_entrycount(idx); i++) {
			const git_index_entry *e = git_index_get_byindex(idx, i);
			if (e && git_index_entry_stage(e) == 0)
				fs_add(fs, e->path);
		}
	}
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
	if (git_status_list_new(&st, repo, &so) == 0) {
		for (size_t i = 0; i < git_status_list_entrycount(st); i++) {
			const git_status_entry *e = git_status_byindex(st, i);
			const git_diff_delta *d = e->index_to_workdir;
			if (!d)
				continue;
			if (e->status & GIT_STATUS_WT_NEW)
				fs_add(fs, d->new_file.path);
			else if (e->status & GIT_STATUS_WT_DELETED)
				fs_add(&del, d->old_file.path);
		}
	}
	if (del.n)
		qsort(del.v, del.n, sizeof(char *), cmp_str);
	/* Drop deleted files (still in the index). */
	for (size_t i = 0; i < fs->n; i++) {
		if (del.n && bsearch(&fs->v[i], del.v, del.n, sizeof(char *), cmp_str)) {
			free(fs->v[i]);
			continue;
		}
		fs->v[w++] = fs->v[i];
	}
	fs->n = w;
sort:
	if (fs->n)
		qsort(fs->v, fs->n, sizeof(char *), cmp_str);
	/* Dedupe and drop anything in .git, to be sure. */
	w = 0;
	for (size_t i = 0; i < fs->n; i++) {
		if ((w && !strcmp(fs->v[w - 1], fs->v[i])) || sandbox_path_is_git(fs->v[i])) {
			free(fs->v[i]);
			continue;
		}
		fs->v[w++] = fs->v[i];
	}
	fs->n = w;
	fs_free(&del);
	git_status_list_free(st);
	git_index_free(idx);
	git_repository_free(repo);
	return rc;
}

/* The files below `under` (clean, "" = all) matching glob. */
static void select_files(struct fileset *out, struct fileset *all, const char *under,
			 const char *glob)
{
	size_t ul = strlen(under);

	for (size_t i = 0; i < all->n; i++) {
		const char *p = all->v[i];
		if (ul && !(strncmp(p, under, ul) == 0 && (p[ul] == '/' || p[ul] == '\0')))
			continue;
		if (!path_matches(glob, p))
			continue;
		fs_add(out, p);
	}
}

/* Clean the optional `path` of an input; fills out on error. */
static bool clean_under(char **clean, struct tool_result *out, const char *tool, jv input)
{
	char *path = buf_path_unquoted(json_get_str(input, "path"));   /* (as read_file) */
	int rc = sandbox_path_clean(clean, path ? path : "", true);

	free(path);
	if (rc < 0) {
		tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "%s: %s", tool, forge_last_error());
		return false;
	}
	return true;
}

void tool_list_files(struct tool_result *out, const struct tool_ctx *ctx,
		     const struct sandbox_root *root, jv input)
{
	const char *glob = json_get_str(input, "pattern");
	size_t max = (size_t)num_arg(input, "max_results", 1000, 1, 10000); /* the schema's bounds */
	struct fileset all = { 0 }, sel = { 0 };
	struct buf text = BUF_INIT;
	char *under = NULL;
	jv d;

	(void)ctx;
	if (!clean_under(&under, out, "list_files", input))
		return;
	if (*under) {
		struct stat st;
		int rc = sandbox_stat(&st, root, under);
		if (rc < 0) {
			tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "list_files: %s",
				  forge_last_error());
			free(under);
			return;
		}
	}
	list_repo_files(&all, root->path);
	select_files(&sel, &all, under, glob);
	/* one name a line: a name holding a newline is quoted as git does */
	for (size_t i = 0; i < sel.n && i < max; i++) {
		buf_add_path_quoted(&text, sel.v[i]);
		buf_addch(&text, '\n');
	}
	if (sel.n > max)
		buf_addf(&text, "[%zu more files not shown; narrow with path or pattern]\n", sel.n - max);
	if (!sel.n)
		buf_addf(&text, "no files%s%s%s%s\n", glob ? " match '" : "", glob ? glob : "",
			 glob ? "'" : "", *under ? " below that path" : "");
	if (text.len)
		text.buf[--text.len] = '\0';
	d = json_set(jv_object(), "count", jv_number((double)sel.n));
	d = json_set(d, "truncated", jv_bool(sel.n > max));
	tool_ok(out, buf_detach(&text, NULL), d);
	fs_free(&all);
	fs_free(&sel);
	free(under);
}

/* ================================================================ grep */

/* What a grep could not search: the lines on which the pattern hit a limit
 * (named, the first GREP_FAILED_MAX), and why the search stopped early. */
struct grep_skips {
	struct buf lines;       /* "path:N, …" */
	size_t failed;
	char reason[160];       /* PCRE2's message for the first failure */
	const char *stopped;    /* why the whole search stopped, or NULL */
	struct buf big;         /* files over GREP_FILE_MAX: "path (N bytes), …" */
	size_t nbig;
	struct buf unread;      /* files that could not be read: "message; …" */
	size_t nunread;
};

#define GREP_NAMED_MAX 10   /* files named in each list of the note */

/* Note that path could not be read (why: the read's error).  A directory
 * (a submodule, which the index lists as one path) is no file to search. */
static void grep_unread(struct grep_skips *sk, const struct sandbox_root *root, const char *path,
			const char *why)
{
	char *msg = xstrdup(why);   /* (sandbox_stat may set the last error) */
	struct stat st;
	bool known = sandbox_stat(&st, root, path) == 0;

	if (known && S_ISDIR(st.st_mode)) {
		/* nothing to name */
	} else if (known && S_ISREG(st.st_mode) && (size_t)st.st_size > GREP_FILE_MAX) {
		if (sk->nbig++ < GREP_NAMED_MAX)
			buf_addf(&sk->big, "%s%s (%lld bytes)", sk->nbig > 1 ? ", " : "", path,
				 (long long)st.st_size);
	} else if (sk->nunread++ < GREP_NAMED_MAX) {
		buf_addf(&sk->unread, "%s%s", sk->nunread > 1 ? "; " : "", msg);
	}
	free(msg);
}

/* Note a match error on line lineno of path; stops the search after
 * GREP_FAILED_MAX of them. */
static void grep_failed(struct grep_skips *sk, const char *path, size_t lineno, int rc)
{
	if (!sk->failed) {
		PCRE2_UCHAR msg[120];
		pcre2_get_error_message(rc, msg, sizeof msg);
		snprintf(sk->reason, sizeof sk->reason, "%s", (char *)msg);
	}
	buf_addf(&sk->lines, "%s%s:%zu", sk->failed ? ", " : "", path, lineno);
	if (++sk->failed >= GREP_FAILED_MAX)
		sk->stopped = "the pattern is too complex on too many lines";
}

/* The note that says what was not searched, for the model. */
static void grep_skips_text(struct buf *text, const struct grep_skips *sk, size_t searched,
			    size_t total)
{
	if (sk->nbig) {
		buf_addf(text, "[%zu file%s not searched, over grep's limit of %u bytes (4 MiB) a file: %s",
			 sk->nbig, sk->nbig == 1 ? "" : "s", GREP_FILE_MAX, sk->big.buf);
		if (sk->nbig > GREP_NAMED_MAX)
			buf_addf(text, " and %zu more", sk->nbig - GREP_NAMED_MAX);
		buf_adds(text, "; search such a file with run_command (grep -n), or read it in parts "
			 "with read_file and start_line]\n");
	}
	if (sk->nunread) {
		buf_addf(text, "[%zu file%s not searched, could not be read: %s", sk->nunread,
			 sk->nunread == 1 ? "" : "s", sk->unread.buf);
		if (sk->nunread > GREP_NAMED_MAX)
			buf_addf(text, "; and %zu more", sk->nunread - GREP_NAMED_MAX);
		buf_adds(text, "]\n");
	}
	if (sk->failed)
		buf_addf(text, "[pattern too complex (%s) on %zu line%s, not searched: %s; simplify the "
			 "pattern (no nested or overlapping repeats such as (a|a)+)]\n", sk->reason,
			 sk->failed, sk->failed == 1 ? "" : "s", sk->lines.buf);
	if (sk->stopped)
		buf_addf(text, "[search stopped: %s; %zu of %zu files searched]\n", sk->stopped, searched,
			 total);
}

void tool_grep(struct tool_result *out, const struct tool_ctx *ctx,
	       const struct sandbox_root *root, jv input)
{
	const char *pattern = json_get_str(input, "pattern");
	const char *glob = json_get_str(input, "glob");
	size_t max = (size_t)num_arg(input, "max_results", 200, 1, 5000); /* the schema's bounds */
	uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
	struct fileset all = { 0 }, sel = { 0 };
	struct buf text = BUF_INIT, content = BUF_INIT, decoded = BUF_INIT, latin1 = BUF_INIT;
	struct grep_skips sk = { .lines = BUF_INIT, .big = BUF_INIT, .unread = BUF_INIT };
	size_t nlatin1 = 0;
	pcre2_code *re = NULL;
	pcre2_match_data *md = NULL;
	pcre2_match_context *mc = NULL;
	size_t matches = 0, searched = 0, files_hit = 0;
	int64_t deadline = monotonic_ms() + GREP_TIME_MS;
	char *under = NULL;
	int err;
	PCRE2_SIZE off;
	jv d;

	(void)ctx;
	if (json_get_bool(input, "case_insensitive", false))
		opts |= PCRE2_CASELESS;
	if (json_get_bool(input, "fixed_strings", false))
		opts |= PCRE2_LITERAL;
	re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &err, &off, NULL);
	if (!re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(err, msg, sizeof(msg));
		tool_fail(out, TOOL_ERR_INPUT, jv_object(), "grep: bad pattern at offset %zu: %s",
			  (size_t)off, (char *)msg);
		return;
	}
	md = pcre2_match_data_create_from_pattern(re, NULL);
	mc = pcre2_match_context_create(NULL);
	if (!md || !mc)
		forge_fatal("out of memory");
	pcre2_set_match_limit(mc, GREP_MATCH_LIMIT);
	pcre2_set_depth_limit(mc, GREP_DEPTH_LIMIT);
	pcre2_set_heap_limit(mc, GREP_HEAP_LIMIT_KIB);
	if (!clean_under(&under, out, "grep", input))
		goto out;
	list_repo_files(&all, root->path);
	select_files(&sel, &all, under, glob);
	for (size_t i = 0; i < sel.n && matches < max && !sk.stopped; i++) {
		const struct buf *c = &content;
		const char *p;
		size_t lineno = 0;
		bool hit = false;

		buf_reset(&content);
		if (sandbox_read_file(&content, root, sel.v[i], GREP_FILE_MAX) < 0) {
			grep_unread(&sk, root, sel.v[i], forge_last_error());
			continue;
		}
		if (looks_binary(content.buf, content.len))
			continue;
		searched++;
		/* A file that is not UTF-8 is searched and shown as read_file
		 * shows it: read as Latin-1 (patch.h). */
		if (patch_is_latin1(content.buf, content.len)) {
			buf_reset(&decoded);
			patch_latin1_decode(&decoded, content.buf, content.len);
			c = &decoded;
		}
		p = c->buf;
		while (p < c->buf + c->len && matches < max) {
			const char *e = memchr(p, '\n', (size_t)(c->buf + c->len - p));
			size_t len = e ? (size_t)(e - p) : (size_t)(c->buf + c->len - p);
			lineno++;
			int rc = pcre2_match(re, (PCRE2_SPTR)p, len, 0, 0, md, mc);
			if (rc >= 0) {
				size_t shown = len > GREP_LINE_CUT ? GREP_LINE_CUT : len;
				if (shown && p[shown - 1] == '\r')
					shown--;
				buf_add_path_quoted(&text, sel.v[i]);   /* (as git grep) */
				buf_addf(&text, ":%zu:", lineno);
				tool_text_add(&text, p, shown);
				buf_addf(&text, "%s\n", len > GREP_LINE_CUT ? "\xe2\x80\xa6" : "");
				matches++;
				hit = true;
			} else if (rc != PCRE2_ERROR_NOMATCH) {
				grep_failed(&sk, sel.v[i], lineno, rc);
			}
			if (!sk.stopped && monotonic_ms() > deadline)
				sk.stopped = "it took too long (over 20 s)";
			if (!e || sk.stopped)
				break;
			p = e + 1;
		}
		files_hit += hit;
		if (hit && c == &decoded && nlatin1++ < GREP_NAMED_MAX)
			buf_addf(&latin1, "%s%s", nlatin1 > 1 ? ", " : "", sel.v[i]);
	}
	if (matches >= max)
		buf_addf(&text, "[stopped after %zu matches; narrow the search with path or glob]\n", max);
	if (nlatin1)
		buf_addf(&text, "[not UTF-8, so searched and shown as Latin-1, as read_file shows them: %s%s]\n",
			 latin1.buf, nlatin1 > GREP_NAMED_MAX ? ", ..." : "");
	grep_skips_text(&text, &sk, searched, sel.n);
	if (!matches && !sk.failed && !sk.stopped && (sk.nbig || sk.nunread))
		buf_addf(&text, "no matches in the %zu files searched; %zu not searched (named above)\n",
			 searched, sk.nbig + sk.nunread);
	else if (!matches && !sk.failed && !sk.stopped)
		buf_addf(&text, "no matches (searched %zu files)\n", searched);
	if (text.len)
		text.buf[--text.len] = '\0';
	d = json_set(jv_object(), "matches", jv_number((double)matches));
	d = json_set(d, "files", jv_number((double)files_hit));
	d = json_set(d, "searched", jv_number((double)searched));
	d = json_set(d, "truncated", jv_bool(matches >= max));
	d = json_set(d, "lines_not_searched", jv_number((double)sk.failed));
	d = json_set(d, "files_not_searched", jv_number((double)(sk.nbig + sk.nunread)));
	d = json_set(d, "stopped", jv_bool(sk.stopped != NULL));
	if (!matches && (sk.failed || sk.stopped))
		tool_fail(out, TOOL_ERR_INPUT, d, "grep: no matches, but not everything was searched:\n%s",
			  text.buf);
	else
		tool_ok(out, buf_detach(&text, NULL), d);
out:
	buf_release(&text);
	buf_release(&content);
	buf_release(&decoded);
	buf_release(&latin1);
	buf_release(&sk.lines);
	buf_release(&sk.big);
	buf_release(&sk.unread);
	fs_free(&all);
	fs_free(&sel);
	free(under);
	pcre2_match_context_free(mc);
	pcre2_match_data_free(md);
	pcre2_code_free(re);
}

/* ================================================================ write_file */

static size_t nlines(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n + (len && s[len - 1] != '\n');
}

/*
 * Say that the write to path put a file where a symbolic link to nothing
 * was (sandbox_dangling_link(): its target `link`), and where to write to
 * keep the link: a model that meant the file the link names would
 * otherwise not know it turned a link into a file (a change git records).
 */
static void note_replaced_link(struct buf *text, jv *data, const char *path, const char *link)
{
	const char *slash = strrchr(path, '/');
	struct buf joined = BUF_INIT;
	char *target = NULL;

	*data = json_set(*data, "replaced_symlink", jv_string(link));
	buf_addf(text, " Note: %s was a symbolic link to '%s', which does not exist: this file took the "
		 "link's place (git records the link replaced by a file), and the file the link named was "
		 "not created.", path, link);
	/* where the link leads, as a path of the tree: a relative link's is
	 * relative to its directory; ".." taken back a directory, as long as
	 * it stays in the tree */
	if (slash)
		buf_add(&joined, path, (size_t)(slash - path));
	for (const char *p = link; link[0] != '/' && *p; ) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.') {
			char *up = strrchr(joined.buf, '/');

			if (!joined.len)
				break;          /* out of the tree: no advice */
			buf_truncate(&joined, up ? (size_t)(up - joined.buf) : 0);
		} else if (n && !(n == 1 && p[0] == '.')) {
			buf_addf(&joined, "%s%.*s", joined.len ? "/" : "", (int)n, p);
		}
		p += n + (p[n] == '/');
	}
	if (joined.len && sandbox_path_clean(&target, joined.buf, false) == 0)
		buf_addf(text, " If you meant that file, put the link back (git checkout -- %s, when git "
			 "tracks it) and write '%s'.", path, target);
	free(target);
	buf_release(&joined);
}

void tool_write_file(struct tool_result *out, const struct tool_ctx *ctx,
		     const struct sandbox_root *root, jv input)
{
	char *path = buf_path_unquoted(json_get_str(input, "path"));   /* (as read_file) */
	jv content = json_get(input, "content");
	const char *data = jv_string_value(content);
	size_t len = (size_t)jv_string_length_bytes(jv_copy(content));
	struct sandbox_txn *t = NULL;
	struct buf old = BUF_INIT, bytes = BUF_INIT;
	char *clean = NULL, *link = NULL, *shown = NULL;
	bool existed, latin1;
	int rc;

	(void)ctx;
	if ((rc = sandbox_path_clean(&clean, path, false)) < 0) {
		tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "write_file: %s", forge_last_error());
		goto out;
	}
	shown = buf_path_quoted(clean);
	rc = sandbox_read_file(&old, root, clean, 64u << 20);
	existed = rc == 0;
	if (rc < 0 && rc != SANDBOX_ENOENT) {
		tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "write_file: %s", forge_last_error());
		goto out;
	}
	/* An existing text file that is not UTF-8 keeps its encoding: the
	 * content, as read_file showed it, is written back as Latin-1 bytes
	 * (patch.h); text it cannot hold is refused, not turned into U+FFFD
	 * or into a silent change of the whole file's encoding. */
	latin1 = existed && !memchr(old.buf, '\0', old.len) && patch_is_latin1(old.buf, old.len);
	if (latin1) {
		if (patch_latin1_encode(&bytes, data, len, shown, "`content`") < 0) {
			tool_fail(out, TOOL_ERR_INPUT, jv_object(),
				  "write_file: %s (to make it a UTF-8 file instead, delete it first with apply_patch's "
				  "'*** Delete File: %s', then write it)", forge_last_error(), shown);
			goto out;
		}
		data = bytes.buf;
		len = bytes.len;
	}
	/* a link to nothing reads as absent: the write replaces the link */
	if (!existed)
		sandbox_dangling_link(&link, root, clean);
	t = sandbox_txn_new(root);
	sandbox_txn_write(t, clean, data, len);
	if ((rc = sandbox_txn_commit(t)) < 0) {
		tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "write_file: %s", forge_last_error());
		goto out;
	}
	{
		struct buf text = BUF_INIT;
		jv d = json_set(jv_object(), "path", json_path(clean));
		d = json_set(d, "action", jv_string(existed ? "modify" : "add"));
		d = json_set(d, "bytes", jv_number((double)len));
		d = json_set(d, "additions", jv_number((double)nlines(data, len)));
		d = json_set(d, "deletions", jv_number((double)nlines(old.buf, old.len)));
		if (latin1)
			d = json_set(d, "encoding", jv_string("latin1"));
		buf_addf(&text, "%s %s (%zu bytes, %zu lines).", existed ? "Replaced" : "Created", shown,
			 len, nlines(data, len));
		if (latin1)
			buf_adds(&text, " The file is not UTF-8: it was written in Latin-1, its own encoding.");
		if (link)
			note_replaced_link(&text, &d, clean, link);
		tool_ok(out, buf_detach(&text, NULL), d);
	}
out:
	sandbox_txn_free(t);
	buf_release(&old);
	buf_release(&bytes);
	free(link);
	free(clean);
	free(shown);
	free(path);
	jv_free(content);
}
