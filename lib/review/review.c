/* review.c - shared review helpers and synthesis; see review.h. */
#include "review/review.h"
#include "core/buf.h"
#include "git/diff.h"
#include "git/git.h"
#include "core/forge.h"
#include "core/json.h"
#include "os/proc.h"
#include "core/tmpdir.h"
#include "data/risk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A working tree's file larger than this is not linted (skipped, said). */
#define REVIEW_FILE_MAX_BYTES (64u << 20)

jv review_finding(const char *layer, const char *severity, const char *category,
		  const char *rule, const char *file, int line, const char *message)
{
	jv f = jv_object();

	f = json_set(f, "layer", jv_string(layer));
	f = json_set(f, "severity", jv_string(severity));
	f = json_set(f, "category", jv_string(category));
	f = json_set(f, "rule", jv_string(rule));
	f = json_set(f, "message", jv_string(message && *message ? message : rule));
	f = json_set(f, "file", json_str_or_null(file));
	f = json_set(f, "line", line > 0 ? jv_number(line) : jv_null());
	f = json_set(f, "confidence", jv_number(1));
	f = json_set(f, "fixable", jv_false());
	return json_set(f, "fix", jv_null());
}

char *review_which(const char *name)
{
	const char *path = getenv("PATH");
	struct buf b = BUF_INIT;

	if (!path || !*path)
		return NULL;
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);

		buf_reset(&b);
		if (n == 0)
			buf_adds(&b, ".");
		else
			buf_add(&b, path, n);
		buf_addf(&b, "/%s", name);
		if (access(b.buf, X_OK) == 0) {
			struct stat st;
			if (stat(b.buf, &st) == 0 && S_ISREG(st.st_mode))
				return buf_detach(&b, NULL);
		}
		path += n;
		if (*path == ':')
			path++;
	}
	buf_release(&b);
	return NULL;
}

/* ---- the post-image copies --------------------------------------------- */

void review_emit(struct review_ctx *ctx, const char *type, jv data)
{
	if (ctx->emit)
		ctx->emit(ctx->emit_payload, type, data);
	else
		jv_free(data);
}

static void skip_file(struct review_ctx *ctx, const char *path, const char *why)
{
	review_emit(ctx, "review.file_skipped", json_set(json_set(jv_object(), "file", jv_string(path)),
						  "reason", jv_string(why)));
}

/* The post-image text of f into *b: from the commit (g: ctx->commit's
 * repository, opened by the caller), else the file.  -1 with a message
 * (a symbolic link where the diff has a file: the message says so). */
static int read_post_image(struct buf *b, struct review_ctx *ctx, struct forge_git *g,
			   const struct diff_file *f)
{
	struct buf path = BUF_INIT;
	int rc;

	if (ctx->commit)
		return g && forge_git_read_blob(b, g, ctx->commit, f->path) == 0 ? 0 : -1;
	buf_addf(&path, "%s/%s", ctx->root ? ctx->root : ".", f->path);
	/* (a worktree's file: a FIFO there would block the open) */
	rc = buf_read_regular(b, path.buf, REVIEW_FILE_MAX_BYTES);
	buf_release(&path);
	return rc;
}

/* Every added and context line of f is at its number in text. */
static bool agrees(const struct diff_file *f, const char *text, size_t len)
{
	size_t nlines = 0, cap = 0;
	const char **starts = NULL;
	size_t *lens = NULL;
	bool ok = true;

	for (const char *p = text; p < text + len;) {
		const char *nl = memchr(p, '\n', (size_t)(text + len - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);

		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (nlines == cap) {
			cap = cap ? cap * 2 : 256;
			starts = xrealloc(starts, cap * sizeof *starts);
			lens = xrealloc(lens, cap * sizeof *lens);
		}
		starts[nlines] = p;
		lens[nlines++] = n;
		p = nl ? nl + 1 : text + len;
	}
	for (size_t j = 0; ok && j < f->nhunks; j++) {
		for (size_t k = 0; ok && k < f->hunks[j].nlines; k++) {
			const struct diff_line *l = &f->hunks[j].lines[k];
			size_t i = (size_t)l->new_line;

			if (l->kind == '-')
				continue;
			if (i < 1 || i > nlines || strlen(l->text) != lens[i - 1] ||
			    memcmp(l->text, starts[i - 1], lens[i - 1]) != 0)
				ok = false;
		}
	}
	free(starts);
	free(lens);
	return ok;
}

static int mkdirs_for(const char *path)
{
	char *dir = xstrdup(path);
	int rc = 0;

	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			rc = -1;
		*p = '/';
	}
	free(dir);
	return rc;
}

static bool safe_path(const char *p)
{
	if (!*p || p[0] == '/')
		return false;
	for (const char *s = p; *s; s++)
		if (s[0] == '.' && s[1] == '.' && (s == p || s[-1] == '/') && (s[2] == '/' || !s[2]))
			return false;
	return true;
}

int review_prepare(struct review_ctx *ctx)
{
	struct buf b = BUF_INIT, dst = BUF_INIT;
	struct forge_git *g = NULL;

	ctx->checked = jv_array();
	if (tmpdir_make(&ctx->workdir, "forge-review") < 0)
		return -1;
	/* A failure to open leaves g NULL: each file is then skipped with this message. */
	if (ctx->commit && !ctx->unreadable && forge_git_open(&g, ctx->root ? ctx->root : ".") < 0) {
		forge_git_free(g);
		g = NULL;
	}
	for (size_t i = 0; i < ctx->diff->nfiles; i++) {
		const struct diff_file *f = &ctx->diff->files[i];

		if (f->deleted || f->binary || f->additions == 0)
			continue;
		if (f->symlink) {
			/* its one line is where it points, no code (read from the
			 * worktree it would be followed): nothing to lint, and
			 * said (before: --commit linted the target's path as a
			 * shell script, and a diff on stdin said "Too many levels
			 * of symbolic links", hunt61 #4) */
			const char *to = diff_new_line(f, 1);
			jv e = json_set(jv_object(), "file", jv_string(f->path));

			review_emit(ctx, "review.symlink_skipped", json_set(e, "target", json_str_or_null(to)));
			continue;
		}
		if (!safe_path(f->path)) {
			skip_file(ctx, f->path, "unsafe path");
			continue;
		}
		if (ctx->unreadable) {
			skip_file(ctx, f->path, ctx->unreadable);
			continue;
		}
		buf_reset(&b);
		if (read_post_image(&b, ctx, g, f) < 0) {
			skip_file(ctx, f->path, forge_last_error());
			continue;
		}
		if (!agrees(f, b.buf, b.len)) {
			skip_file(ctx, f->path, "the file's content differs from the diff");
			continue;
		}
		buf_reset(&dst);
		buf_addf(&dst, "%s/%s", ctx->workdir, f->path);
		FILE *out = mkdirs_for(dst.buf) == 0 ? fopen(dst.buf, "wb") : NULL;
		if (!out || fwrite(b.buf, 1, b.len, out) != b.len) {
			if (out)
				fclose(out);
			skip_file(ctx, f->path, "cannot write a temporary copy");
			continue;
		}
		if (fclose(out) != 0) {
			skip_file(ctx, f->path, "cannot write a temporary copy");
			continue;
		}
		ctx->checked = jv_array_append(ctx->checked, jv_string(f->path));
	}
	buf_release(&b);
	buf_release(&dst);
	forge_git_free(g);
	return 0;
}

/* Whether f's post-image at root/prefix/f->path (prefix may be NULL)
 * agrees with the diff. */
static bool agrees_at(const struct diff_file *f, const char *root, const char *prefix)
{
	struct buf path = BUF_INIT, b = BUF_INIT;
	bool yes;

	buf_addf(&path, "%s/%s%s%s", root, prefix ? prefix : "", prefix ? "/" : "", f->path);
	yes = buf_read_regular(&b, path.buf, REVIEW_FILE_MAX_BYTES) == 0 && agrees(f, b.buf, b.len);
	buf_release(&path);
	buf_release(&b);
	return yes;
}

static void prefix_path(char **path, const char *prefix)
{
	struct buf b = BUF_INIT;

	if (!*path)
		return;
	buf_addf(&b, "%s/%s", prefix, *path);
	free(*path);
	*path = buf_detach(&b, NULL);
}

int review_diff_relative(struct diff *d, const char *root, const char *prefix)
{
	int at_root = 0, at_prefix = 0;

	if (!d || !root || !prefix || !*prefix)
		return 0;
	for (size_t i = 0; i < d->nfiles && at_root == 0; i++) {
		const struct diff_file *f = &d->files[i];

		if (f->deleted || f->binary || f->additions == 0 || !safe_path(f->path))
			continue;
		if (agrees_at(f, root, NULL))
			at_root++;
		else if (agrees_at(f, root, prefix))
			at_prefix++;
	}
	if (at_root > 0 || at_prefix == 0)
		return 0;
	for (size_t i = 0; i < d->nfiles; i++) {
		prefix_path(&d->files[i].path, prefix);
		prefix_path(&d->files[i].old_path, prefix);
	}
	for (size_t i = 0; i < d->nomitted; i++)
		prefix_path(&d->omitted[i].path, prefix);
	return 1;
}

void review_ctx_release(struct review_ctx *ctx)
{
	tmpdir_remove(ctx->workdir);
	ctx->workdir = NULL;
	jv_free(ctx->checked);
	ctx->checked = jv_null();
	jv_free(ctx->missing);
	ctx->missing = jv_null();
}

void review_tool_missing(struct review_ctx *ctx, const char *tool, const char *layer,
			 const char *language)
{
	jv m = json_set(jv_object(), "tool", jv_string(tool));

	m = json_set(m, "layer", jv_string(layer));
	m = json_set(m, "language", jv_string(language));
	if (jv_get_kind(ctx->missing) != JV_KIND_ARRAY) {
		jv_free(ctx->missing);
		ctx->missing = jv_array();
	}
	ctx->missing = jv_array_append(ctx->missing, m);
	review_emit(ctx, "review.tool_skipped", json_set(json_set(jv_object(), "tool", jv_string(tool)),
						  "reason", jv_string("not installed")));
}

/* ---- levels, fingerprints --------------------------------------------- */

/* The levels and their bands are data/risk.h's: review_level is risk_level. */
const char *review_level_name(enum review_level l)
{
	return risk_level_name((enum risk_level)l);
}

int review_level_parse(enum review_level *out, const char *name)
{
	enum risk_level l;

	if (risk_level_parse(&l, name) < 0)
		return -1;
	*out = (enum review_level)l;
	return 0;
}

static unsigned long long fnv(unsigned long long h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	h ^= 0xff;	/* field separator */
	h *= 1099511628211ULL;
	return h;
}

void review_fingerprint(char out[17], const char *rule, const char *file, const char *content)
{
	unsigned long long h = 14695981039346656037ULL;
	struct buf norm = BUF_INIT;
	bool space = false;

	for (const char *s = content ? content : ""; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') {
			space = norm.len > 0;
			continue;
		}
		if (space)
			buf_addch(&norm, ' ');
		space = false;
		buf_addch(&norm, *s);
	}
	h = fnv(h, rule);
	h = fnv(h, file);
	h = fnv(h, norm.buf);
	snprintf(out, 17, "%016llx", h);
	buf_release(&norm);
}

static int severity_rank(const char *s)
{
	static const char *const names[] = { "info", "warning", "error", "critical" };

	for (int i = 0; i < 4; i++)
		if (s && strcmp(s, names[i]) == 0)
			return i;
	return 0;
}

static int cmp_findings(const void *a, const void *b)
{
	jv x = *(const jv *)a, y = *(const jv *)b;
	const char *fx = json_get_str(x, "file"), *fy = json_get_str(y, "file");
	int c = strcmp(fx ? fx : "", fy ? fy : "");

	if (c)
		return c;
	double lx = json_get_num(x, "line", 0), ly = json_get_num(y, "line", 0);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	c = severity_rank(json_get_str(y, "severity")) - severity_rank(json_get_str(x, "severity"));
	if (c)
		return c;
	const char *rx = json_get_str(x, "rule"), *ry = json_get_str(y, "rule");
	return strcmp(rx ? rx : "", ry ? ry : "");
}

jv review_synthesize(jv findings, const struct diff *d, double min_confidence)
{
	size_t n = 0;
	jv *items = NULL;
	jv out = jv_array();

	if (jv_get_kind(findings) != JV_KIND_ARRAY) {
		jv_free(findings);
		return out;
	}
	items = xcalloc((size_t)jv_array_length(jv_copy(findings)) + 1, sizeof *items);
	jv_array_foreach(findings, i, f) {
		(void)i;
		if (json_get_num(f, "confidence", 1) < min_confidence) {
			jv_free(f);
			continue;
		}
		const char *file = json_get_str(f, "file");
		int line = (int)json_get_num(f, "line", 0);
		const char *content = file && line > 0 ? diff_new_line(diff_find(d, file), line) : NULL;
		char fp[17];

		review_fingerprint(fp, json_get_str(f, "rule"), file, content ? content : json_get_str(f, "message"));
		items[n++] = json_set(f, "fingerprint", jv_string(fp));
	}
	jv_free(findings);
	qsort(items, n, sizeof *items, cmp_findings);
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		/* sorted by file, line, severity: the first of a (file, line, rule) is the most severe */
		for (size_t j = i; j-- > 0;) {
			const char *fi = json_get_str(items[i], "file"), *fj = json_get_str(items[j], "file");
			if (strcmp(fi ? fi : "", fj ? fj : "") != 0 ||
			    json_get_num(items[i], "line", 0) != json_get_num(items[j], "line", 0))
				break;
			const char *ri = json_get_str(items[i], "rule"), *rj = json_get_str(items[j], "rule");
			if (strcmp(ri ? ri : "", rj ? rj : "") == 0)
				dup = true;
		}
		if (!dup)
			out = jv_array_append(out, jv_copy(items[i]));
	}
	for (size_t i = 0; i < n; i++)
		jv_free(items[i]);
	free(items);
	return out;
}

/* ---- risk and decision --------------------------------------------------- */

static const char *sensitive(const char *path)
{
	static const struct {
		const char *needle;
		const char *why;
	} rules[] = {
		{ ".github/workflows/", "CI workflow" }, { ".gitlab-ci", "CI configuration" },
		{ "Jenkinsfile", "CI configuration" }, { ".circleci/", "CI configuration" },
		{ "Makefile", "build system" }, { "CMakeLists.txt", "build system" },
		{ "Dockerfile", "container image" }, { "auth", "authentication" },
		{ "login", "authentication" }, { "passw", "credentials" }, { "secret", "secrets" },
		{ "credential", "credentials" }, { "token", "credentials" }, { "crypt", "cryptography" },
		{ "security", "security" }, { "permission", "access control" }, { "acl", "access control" },
		{ "session", "sessions" }, { "migration", "database migration" }, { ".sql", "database schema" },
		{ "install", "installation" }, { "deploy", "deployment" }, { "sudoers", "privileges" },
		{ ".env", "environment secrets" },
	};

	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
		if (strstr(path, rules[i].needle))
			return rules[i].why;
	return NULL;
}

/*
 * The plan's risk (state.plan.risk; borrowed) taken into *score as one
 * unit (data/risk.h): its stated level, its score in that level's band.
 * When it raises the score - and so, maybe, the level - a reason says so
 * with the level and score applied, and the score the plan gave when that
 * was outside its level's band.
 */
static void plan_raise(double *score, jv *reasons, jv plan_risk)
{
	enum risk_level level;
	double ps, stated, lo, hi;

	if (risk_of_plan(&level, &ps, &stated, plan_risk) < 0 || ps <= *score)
		return;
	*score = ps;
	struct buf b = BUF_INIT;
	buf_addf(&b, "the plan's risk is %s (score %.2f", risk_level_name(level), ps);
	risk_band(&lo, &hi, level);
	if (stated >= 0 && stated != ps)
		buf_addf(&b, "; the plan gave %g, outside %s's band %.2f-%.2f", stated,
			 risk_level_name(level), lo, hi);
	buf_addch(&b, ')');
	*reasons = jv_array_append(*reasons, jv_string(b.buf));
	buf_release(&b);
}

void review_risk(struct review_risk *out, const struct diff *d, jv findings, jv plan_risk)
{
	double score = 0;
	int lines = d->additions + d->deletions, counts[4] = { 0 };
	struct buf b = BUF_INIT;

	out->reasons = jv_array();
	if (lines >= 500) {
		score += 0.3;
		buf_addf(&b, "large change: %d lines", lines);
	} else if (lines >= 200) {
		score += 0.2;
		buf_addf(&b, "sizeable change: %d lines", lines);
	} else if (lines >= 50) {
		score += 0.1;
		buf_addf(&b, "%d lines changed", lines);
	}
	if (b.len)
		out->reasons = jv_array_append(out->reasons, jv_string(b.buf));
	if (d->nfiles > 10) {
		score += 0.1;
		buf_reset(&b);
		buf_addf(&b, "%zu files touched", d->nfiles);
		out->reasons = jv_array_append(out->reasons, jv_string(b.buf));
	}
	for (size_t i = 0; i < d->nfiles; i++) {
		const char *why = sensitive(d->files[i].path);
		if (why) {
			score += 0.25;
			buf_reset(&b);
			buf_addf(&b, "sensitive path '%s' (%s)", d->files[i].path, why);
			out->reasons = jv_array_append(out->reasons, jv_string(b.buf));
			break;
		}
	}
	if (jv_get_kind(findings) == JV_KIND_ARRAY) {
		jv_array_foreach(findings, i, f) {
			(void)i;
			counts[severity_rank(json_get_str(f, "severity"))]++;
			jv_free(f);
		}
	}
	double fs = counts[3] * 0.4 + counts[2] * 0.15 + counts[1] * 0.03;
	if (fs > 0.6)
		fs = 0.6;
	if (fs > 0) {
		score += fs;
		buf_reset(&b);
		buf_addf(&b, "findings: %d critical, %d error, %d warning", counts[3], counts[2], counts[1]);
		out->reasons = jv_array_append(out->reasons, jv_string(b.buf));
	}
	if (score > 1)
		score = 1;
	plan_raise(&score, &out->reasons, plan_risk);
	out->score = (double)(long)(score * 1000 + 0.5) / 1000;
	/* one band table for the shown score and level: neither contradicts
	 * the other (the plan's level is its score's: plan_raise) */
	out->level = (enum review_level)risk_level_of(out->score);
	buf_release(&b);
}

const char *review_decide(const char **why, jv findings, enum review_level risk,
			  enum review_level human_min)
{
	bool critical_security = false, blocking = false;

	if (jv_get_kind(findings) == JV_KIND_ARRAY) {
		jv_array_foreach(findings, i, f) {
			(void)i;
			int sev = severity_rank(json_get_str(f, "severity"));
			const char *cat = json_get_str(f, "category");

			if (sev == 3 && cat && strcmp(cat, "security") == 0)
				critical_security = true;
			if (sev >= 2)
				blocking = true;
			jv_free(f);
		}
	}
	if (critical_security) {
		*why = "a critical security finding needs a human (gate security_findings)";
		return "require_human";
	}
	if (blocking) {
		*why = "error findings on changed lines";
		return "request_changes";
	}
	if (risk >= human_min) {
		*why = "the change's risk needs a human review";
		return "require_human";
	}
	*why = "no blocking findings";
	return "approve";
}
