/*
 * review_lint.c - layer 1: linters, their output mapped onto the diff.
 *
 * How findings are kept: each linter runs on the temporary copy of the
 * post-image (review_prepare), so the file names it prints are the diff's
 * paths and its line numbers are post-image line numbers.  A finding is
 * kept when diff_added_line(file, line) says the diff added that line.
 * Output formats read: cppcheck --template '{file}:{line}:{column}:
 * {severity}: {id}: {message}', shellcheck -f json1, and gcc-style
 * "file:line[:col]: [severity:] message [rule]" (clang-tidy, flake8, ruff,
 * eslint -f unix, a configured lint command).
 *
 * Linters execute code and configuration from the change (a lint command
 * from the branch, eslint plugins, …), so they run in the sandbox
 * (sandbox_job.h): the detected linters with the post-image copy as the
 * only writable tree, the lint command with the worktree.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "review/review.h"
#include "core/buf.h"
#include "data/config.h"
#include "git/diff.h"
#include "core/forge.h"
#include "core/json.h"
#include "os/proc.h"
#include "data/project.h"
#include "os/sandbox.h"
#include "os/sandbox_job.h"
#include "review/toolcache.h"

#include <locale.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>


/* Strip "./" and an absolute prefix (dir + '/') from a tool's path. */
static const char *rel_path(const char *path, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;

	if (n && strncmp(path, dir, n) == 0 && path[n] == '/')
		path += n + 1;
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	return path;
}

static const char *category_for(const char *severity_word)
{
	if (!severity_word)
		return "correctness";
	if (strcmp(severity_word, "style") == 0 || strcmp(severity_word, "information") == 0 ||
	    strcmp(severity_word, "info") == 0 || strcmp(severity_word, "note") == 0)
		return "style";
	if (strcmp(severity_word, "performance") == 0)
		return "performance";
	return "correctness";
}

static const char *severity_for(const char *word)
{
	if (!word)
		return "warning";
	if (strstr(word, "error"))
		return "error";
	if (strcmp(word, "warning") == 0 || strcmp(word, "performance") == 0 ||
	    strcmp(word, "portability") == 0)
		return "warning";
	return "info";
}

static void keep(jv *acc, const struct diff *d, const char *layer, const char *severity,
		 const char *category, const char *rule, const char *file, int line, const char *msg)
{
	const struct diff_file *f = diff_find(d, file);

	if (!f || !diff_added_line(f, line))
		return;
	*acc = jv_array_append(*acc, review_finding(layer, severity, category, rule, f->path, line, msg));
}

static char *group(const char *s, PCRE2_SIZE *ov, int i)
{
	if (ov[2 * i] == PCRE2_UNSET)
		return NULL;
	return xstrndup(s + ov[2 * i], ov[2 * i + 1] - ov[2 * i]);
}

/* The next line of *p (malloc'd), advancing *p; NULL at the end. */
static char *next_line(const char **p)
{
	const char *s = *p, *nl;
	size_t n;

	if (!s || !*s)
		return NULL;
	nl = strchr(s, '\n');
	n = nl ? (size_t)(nl - s) : strlen(s);
	*p = nl ? nl + 1 : s + n;
	return xstrndup(s, n);
}

static void parse_gcc_in(jv *acc, const struct diff *d, const char *tool, const char *text, const char *dir)
{
	int err;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)"^(.+?):(\\d+):(?:(\\d+):)?\\s*(?:(fatal error|error|warning|note|"
				       "info|style|information|performance|portability)\\s*:\\s*)?(.*)$",
				       PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
	pcre2_code *code = pcre2_compile((PCRE2_SPTR)"^(?:([A-Z]{1,4}\\d{2,5})\\s+)?(.*?)(?:\\s+\\[([^\\]]+)\\])?\\s*$",
					 PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
	pcre2_match_data *md = pcre2_match_data_create(8, NULL);
	struct buf rule = BUF_INIT;

	if (!re || !code)
		goto out;
	const char *cursor = text;
	char *line;
	while ((line = next_line(&cursor))) {
		if (pcre2_match(re, (PCRE2_SPTR)line, strlen(line), 0, 0, md, NULL) > 0) {
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
			char *file = group(line, ov, 1), *num = group(line, ov, 2), *sev = group(line, ov, 4);
			char *rest = group(line, ov, 5);
			long ln = 0;

			if (forge_parse_long(&ln, num, 1, 100000000) == 0 && rest &&
			    pcre2_match(code, (PCRE2_SPTR)rest, strlen(rest), 0, 0, md, NULL) > 0) {
				ov = pcre2_get_ovector_pointer(md);
				char *c = group(rest, ov, 1), *msg = group(rest, ov, 2), *tag = group(rest, ov, 3);
				const char *id = c ? c : tag;
				const char *severity = severity_for(sev);

				/* flake8/ruff: E9xx and Fxxx are errors, the rest style */
				if (!sev && c)
					severity = (c[0] == 'F' || strncmp(c, "E9", 2) == 0) ? "error" : "warning";
				if (tag && strncmp(tag, "Error/", 6) == 0) {
					severity = "error";
					id = tag + 6;
				} else if (tag && strncmp(tag, "Warning/", 8) == 0) {
					severity = "warning";
					id = tag + 8;
				}
				buf_reset(&rule);
				buf_addf(&rule, "%s/%s", tool, id ? id : "diagnostic");
				if (!(id && strncmp(id, "clang-diagnostic-", 17) == 0) && !(sev && strcmp(sev, "note") == 0))
					keep(acc, d, "static", severity,
					     c && !sev ? (c[0] == 'F' ? "correctness" : "style") : category_for(sev),
					     rule.buf, rel_path(file, dir), (int)ln, msg && *msg ? msg : rest);
				free(c);
				free(msg);
				free(tag);
			}
			free(file);
			free(num);
			free(sev);
			free(rest);
		}
		free(line);
	}
out:
	pcre2_code_free(re);
	pcre2_code_free(code);
	pcre2_match_data_free(md);
	buf_release(&rule);
}

void review_parse_gcc(jv *acc, const struct diff *d, const char *tool, const char *text)
{
	parse_gcc_in(acc, d, tool, text, NULL);
}

void review_parse_cppcheck(jv *acc, const struct diff *d, const char *text)
{
	int err;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)"^(.+?):(\\d+):(\\d+): (\\w+): (\\w+): (.*?)(?: \\[CWE-(\\d+)\\])?$",
				       PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
	pcre2_match_data *md = pcre2_match_data_create(10, NULL);
	struct buf rule = BUF_INIT, msg = BUF_INIT;

	if (!re)
		goto out;
	const char *cursor = text;
	char *line;
	while ((line = next_line(&cursor))) {
		if (pcre2_match(re, (PCRE2_SPTR)line, strlen(line), 0, 0, md, NULL) > 0) {
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
			char *file = group(line, ov, 1), *num = group(line, ov, 2), *sev = group(line, ov, 4);
			char *id = group(line, ov, 5), *text_ = group(line, ov, 6), *cwe = group(line, ov, 7);
			long ln = 0;

			if (forge_parse_long(&ln, num, 1, 100000000) == 0 && strcmp(sev, "information") != 0) {
				buf_reset(&rule);
				buf_addf(&rule, "cppcheck/%s", id);
				buf_reset(&msg);
				buf_adds(&msg, text_);
				if (cwe && strcmp(cwe, "0") != 0)
					buf_addf(&msg, " (CWE-%s)", cwe);
				keep(acc, d, "static", strcmp(sev, "style") == 0 ? "info" : severity_for(sev),
				     category_for(sev), rule.buf, rel_path(file, NULL), (int)ln, msg.buf);
			}
			free(file);
			free(num);
			free(sev);
			free(id);
			free(text_);
			free(cwe);
		}
		free(line);
	}
out:
	pcre2_code_free(re);
	pcre2_match_data_free(md);
	buf_release(&rule);
	buf_release(&msg);
}

/* shellcheck codes that are about security rather than style. */
static bool shellcheck_security(int code)
{
	static const int codes[] = { 2029, 2059, 2087, 2091, 2115, 2294 };

	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (codes[i] == code)
			return true;
	return false;
}

void review_parse_shellcheck(jv *acc, const struct diff *d, const char *json_text)
{
	jv doc = json_parse(json_text, strlen(json_text));
	jv comments = json_get(doc, "comments");
	struct buf rule = BUF_INIT;

	if (jv_get_kind(comments) == JV_KIND_ARRAY) {
		jv_array_foreach(comments, i, c) {
			(void)i;
			int code = (int)json_get_num(c, "code", 0);
			const char *level = json_get_str(c, "level");
			const char *file = json_get_str(c, "file");
			const char *msg = json_get_str(c, "message");
			bool sec = shellcheck_security(code);
			size_t before = (size_t)jv_array_length(jv_copy(*acc));

			buf_reset(&rule);
			buf_addf(&rule, "shellcheck/SC%d", code);
			if (file && msg)
				keep(acc, d, sec ? "security" : "static",
				     level && strcmp(level, "error") == 0 ? "error" :
				     level && strcmp(level, "warning") == 0 ? "warning" : "info",
				     sec ? "security" : level && strcmp(level, "style") == 0 ? "style" : "correctness",
				     rule.buf, rel_path(file, NULL), (int)json_get_num(c, "line", 0), msg);
			jv fx = json_get(c, "fix");
			bool has_fix = jv_get_kind(fx) == JV_KIND_OBJECT;
			jv_free(fx);
			if ((size_t)jv_array_length(jv_copy(*acc)) > before && has_fix) {
				int last = jv_array_length(jv_copy(*acc)) - 1;
				jv f = jv_array_get(jv_copy(*acc), last);
				*acc = jv_array_set(*acc, last, json_set(f, "fixable", jv_true()));
			}
			jv_free(c);
		}
	}
	jv_free(comments);
	jv_free(doc);
	buf_release(&rule);
}

/* ---- running the tools ------------------------------------------------ */

/* Whether runs of tools in dir may come from the cache (review/toolcache.h):
 * only in the review's private copy of the checked files (the project's own
 * lint command runs in the worktree, which no key covers). */
static bool cacheable(const struct review_ctx *ctx, const char *dir)
{
	return ctx->workdir && !strcmp(dir, ctx->workdir) &&
	       (!ctx->cfg || config_get_bool(ctx->cfg, "review.tool_cache"));
}

/*
 * The locale the tools run in: C.UTF-8 where the system has it, whatever
 * the caller's.  Their output is parsed (the same English everywhere), and
 * under C a tool may mangle a file name that is not ASCII (shellcheck
 * printed "d\xef\xbf\xbd..." for "déploiement.sh": its findings matched no
 * file and were lost).  NULL: leave the caller's.
 */
static const char *tool_locale(void)
{
	static int have = -1;

	if (have < 0) {
		locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);

		have = l != (locale_t)0;
		if (l)
			freelocale(l);
	}
	return have ? "LC_ALL=C.UTF-8" : NULL;
}

/* The cache key of argv run in dir: the locale is part of what ran. */
static bool tool_key(char key[65], const char *const *argv, const char *dir, const char *locale)
{
	size_t n = 0;
	const char **with;
	bool ok;

	while (argv[n])
		n++;
	with = xcalloc(n + 2, sizeof(*with));
	memcpy(with, argv, n * sizeof(*with));
	with[n] = locale ? locale : "(the caller's locale)";
	ok = toolcache_key(key, with, dir) == 0;
	free(with);
	return ok;
}

int review_run_tool(struct proc_result *r, bool *cached, struct review_ctx *ctx, const char *const *argv,
		    const char *dir)
{
	struct sandbox_policy *policy = NULL;
	struct buf cmd = BUF_INIT;
	const char *locale = tool_locale();
	char key[65];
	bool keyed = cacheable(ctx, dir) && tool_key(key, argv, dir, locale);
	int rc = -1;

	memset(r, 0, sizeof *r);
	buf_init(&r->out, 0);
	buf_init(&r->err, 0);
	if (cached)
		*cached = false;
	if (keyed && toolcache_get(key, dir, &r->exit_code, &r->out)) {
		if (cached)
			*cached = true;
		return 0;
	}
	if (sandbox_policy_from_config(&policy, ctx->cfg) < 0)
		return -1;
	if (locale)
		buf_addf(&cmd, "%s ", locale);	/* an assignment: not quoted */
	sandbox_shell_join(&cmd, argv);
	struct sandbox_job job = {
		.policy = policy,
		.command = cmd.buf,
		.root = dir,
		.timeout_ms = ctx->timeout_ms > 0 ? ctx->timeout_ms : 120000,
		.output_cap = 4u << 20,
	};
	proc_result_release(r);
	rc = sandbox_job_run(r, NULL, &job);
	if (rc == 0 && keyed && !r->timed_out && !r->term_signal)
		toolcache_put(key, dir, r->exit_code, r->out.buf, r->out.len);
	buf_release(&cmd);
	sandbox_policy_free(policy);
	return rc;
}

size_t review_file_args(const char **argv, size_t *a, const char *const *files, size_t nf, char **dotted)
{
	size_t nd = 0;

	for (size_t i = 0; i < nf; i++) {
		if (files[i][0] == '-') {
			struct buf b = BUF_INIT;

			buf_addf(&b, "./%s", files[i]);
			argv[(*a)++] = dotted[nd++] = buf_detach(&b, NULL);
		} else {
			argv[(*a)++] = files[i];
		}
	}
	return nd;
}

static void skipped(struct review_ctx *ctx, const char *tool, const char *why)
{
	review_emit(ctx, "review.tool_skipped", json_set(json_set(jv_object(), "tool", jv_string(tool)),
						  "reason", jv_string(why)));
}

/* The checked files of a language ("c" also takes "cpp"), from the
 * `skip`-th on, at most max; *more whether there are others after them. */
static size_t files_of(const char **files, size_t max, size_t skip, bool *more, struct review_ctx *ctx,
		       const char *lang)
{
	size_t n = 0, seen = 0;

	*more = false;
	jv_array_foreach(ctx->checked, i, p) {
		(void)i;
		const char *l = project_language(jv_string_value(p));
		bool match = l && (strcmp(l, lang) == 0 || (strcmp(lang, "c") == 0 && strcmp(l, "cpp") == 0) ||
				   (strcmp(lang, "javascript") == 0 && strcmp(l, "typescript") == 0));
		if (match && seen++ >= skip) {
			if (n < max)
				files[n++] = jv_string_value(p);	/* borrowed from ctx->checked */
			else
				*more = true;
		}
		jv_free(p);
	}
	return n;
}

enum parser { P_GCC, P_CPPCHECK, P_SHELLCHECK };

struct linter {
	const char *tool;               /* program */
	const char *lang;
	const char *const *args;        /* after the program, before the files */
	const char *const *tail;        /* after the files; may be NULL */
	enum parser parser;
};

static const char *const cppcheck_args[] = {
	"--enable=warning,style,performance,portability", "--inline-suppr", "--quiet",
	"--template={file}:{line}:{column}: {severity}: {id}: {message} [CWE-{cwe}]", NULL };
static const char *const shellcheck_args[] = { "-f", "json1", "-S", "style", NULL };
static const char *const clang_tidy_args[] = {
	"--quiet", "--checks=-*,clang-analyzer-*,bugprone-*,cert-*,-cert-err33-c", NULL };
static const char *const clang_tidy_tail[] = { "--", NULL };
static const char *const ruff_args[] = { "check", "--no-cache", "--output-format=concise", NULL };
static const char *const flake8_args[] = { NULL };
static const char *const eslint_args[] = { "--format", "unix", "--no-color", NULL };

static const struct linter linters[] = {
	{ "cppcheck", "c", cppcheck_args, NULL, P_CPPCHECK },
	{ "clang-tidy", "c", clang_tidy_args, clang_tidy_tail, P_GCC },
	{ "shellcheck", "shell", shellcheck_args, NULL, P_SHELLCHECK },
	{ "ruff", "python", ruff_args, NULL, P_GCC },
	{ "flake8", "python", flake8_args, NULL, P_GCC },
	{ "eslint", "javascript", eslint_args, NULL, P_GCC },
};

/* Files a linter is given at once; a larger change is linted in batches. */
#define MAX_FILES 512

/*
 * Whether a lint command's run failed rather than reported: the shell could
 * not find or execute it (126, 127), it was killed (a signal, or 128 + the
 * signal as a shell reports a child's).  (A run that timed out is skipped
 * before.)  Any other status is
 * the command's own (linters exit 1 or 2 for findings, make 2), and its
 * output is read.
 */
static bool lint_failed(const struct proc_result *r)
{
	return r->term_signal || r->exit_code < 0 || r->exit_code == 126 ||
	       r->exit_code == 127 || r->exit_code > 128;
}

/* One run of linter L (program prog) over files; its findings into *acc,
 * or, when it timed out or crashed, a not-reviewed warning per file (before:
 * a linter killed by a signal counted as a clean run with 0 findings). */
static void lint_batch(jv *acc, struct review_ctx *ctx, const struct linter *L, const char *prog,
		       const char **files, size_t nf)
{
	const char *argv[MAX_FILES + 32];
	char *dotted[MAX_FILES];
	size_t a = 0, nd = 0;
	struct proc_result r;
	struct buf why = BUF_INIT;
	bool cached;

	argv[a++] = prog;
	for (size_t i = 0; L->args[i]; i++)
		argv[a++] = L->args[i];
	nd = review_file_args(argv, &a, files, nf, dotted);
	for (size_t i = 0; L->tail && L->tail[i]; i++)
		argv[a++] = L->tail[i];
	argv[a] = NULL;
	if (review_run_tool(&r, &cached, ctx, argv, ctx->workdir) < 0 || r.timed_out) {
		skipped(ctx, L->tool, r.timed_out ? "timed out" : forge_last_error());
		buf_addf(&why, "was skipped (%s)", r.timed_out ? "timed out" : "could not run");
		review_not_reviewed(acc, "static", "linted", L->tool, files, nf, why.buf);
		goto out;
	}
	int before = jv_array_length(jv_copy(*acc));
	bool failed = lint_failed(&r);

	if (failed) {
		review_tool_failure(&why, &r);
		review_not_reviewed(acc, "static", "linted", L->tool, files, nf, why.buf);
	} else if (L->parser == P_CPPCHECK) {
		review_parse_cppcheck(acc, ctx->diff, r.out.buf);
	} else if (L->parser == P_SHELLCHECK) {
		review_parse_shellcheck(acc, ctx->diff, r.out.buf);
	} else {
		parse_gcc_in(acc, ctx->diff, L->tool, r.out.buf, ctx->workdir);
	}
	review_tool_ran(ctx, L->tool, (int)nf, r.exit_code, jv_array_length(jv_copy(*acc)) - before, cached,
			failed ? why.buf : NULL);
out:
	proc_result_release(&r);
	buf_release(&why);
	for (size_t i = 0; i < nd; i++)
		free(dotted[i]);
}

static int run_linter(jv *acc, struct review_ctx *ctx, const struct linter *L, bool *python_done)
{
	const char *files[MAX_FILES];
	bool more = false;
	size_t nf = files_of(files, MAX_FILES, 0, &more, ctx, L->lang);
	char *prog;

	if (nf == 0)
		return 0;
	if (strcmp(L->lang, "python") == 0 && *python_done)
		return 0;
	prog = review_which(L->tool);
	if (!prog) {
		review_tool_missing(ctx, L->tool, "static", L->lang);
		return 0;
	}
	/* every file, MAX_FILES at a time (before: the files past the 512th
	 * of a language were not linted, and nothing said so) */
	for (size_t done = 0; nf > 0; ) {
		lint_batch(acc, ctx, L, prog, files, nf);
		done += nf;
		nf = more ? files_of(files, MAX_FILES, done, &more, ctx, L->lang) : 0;
	}
	if (strcmp(L->lang, "python") == 0)
		*python_done = true;
	free(prog);
	return 0;
}

/* A forge/not-reviewed warning for each of the change's files (the lint
 * command was given the whole tree), why: what went wrong, so a lint
 * command that did not run is not read as "no findings". */
static void not_linted(jv *acc, const struct review_ctx *ctx, const char *why)
{
	struct buf msg = BUF_INIT;

	buf_addf(&msg, "not linted: tools.lint_command %s; review the file yourself", why);
	for (size_t i = 0; i < ctx->diff->nfiles; i++) {
		const struct diff_file *f = &ctx->diff->files[i];

		if (f->deleted || f->binary)
			continue;
		*acc = jv_array_append(*acc, review_finding("static", "warning", "correctness", "forge/not-reviewed",
							    f->path, 0, msg.buf));
	}
	buf_release(&msg);
}

/* tools.lint_command run in ctx->root; its findings, or a not-reviewed
 * warning per file when it could not run or failed, into *out.  (Before:
 * a command that was not found, exit 127, counted as a clean run with 0
 * findings and the change was approved as linted, hunt58 #5.)  As the
 * scanners (review_scan.c) do: a run that failed has "failed": true and
 * the reason in its review.tool_ran event. */
static int lint_command(jv *out, struct review_ctx *ctx, const char *cmd)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct proc_result r;
	struct buf why = BUF_INIT;
	bool cached;
	int nfiles = jv_get_kind(ctx->checked) == JV_KIND_ARRAY ? jv_array_length(jv_copy(ctx->checked)) : 0;

	if (review_run_tool(&r, &cached, ctx, argv, ctx->root) < 0 || r.timed_out) {
		skipped(ctx, "lint_command", r.timed_out ? "timed out" : forge_last_error());
		not_linted(out, ctx, r.timed_out ? "was skipped (timed out)" : "was skipped (could not run)");
		goto out;
	}
	bool failed = lint_failed(&r);

	if (failed) {
		review_tool_failure(&why, &r);
		not_linted(out, ctx, why.buf);
	} else {
		parse_gcc_in(out, ctx->diff, "lint", r.out.buf, ctx->root);
	}
	review_tool_ran(ctx, "lint_command", nfiles, r.exit_code, jv_array_length(jv_copy(*out)), cached,
			failed ? why.buf : NULL);
out:
	proc_result_release(&r);
	buf_release(&why);
	return 0;
}

bool review_lint_in_root(const struct review_ctx *ctx)
{
	const char *cmd = ctx->cfg ? config_get_str(ctx->cfg, "tools.lint_command") : NULL;

	return cmd && *cmd && !ctx->unreadable && ctx->root;
}

int review_lint(jv *out, struct review_ctx *ctx)
{
	const char *cmd = ctx->cfg ? config_get_str(ctx->cfg, "tools.lint_command") : NULL;
	bool python_done = false;

	*out = jv_array();
	if (cmd && *cmd && ctx->unreadable) {
		/* it would run in a tree that is not the change's */
		skipped(ctx, "lint_command", ctx->unreadable);
		return 0;
	}
	if (cmd && *cmd)
		return lint_command(out, ctx, cmd);
	if (!ctx->workdir)
		return 0;
	for (size_t i = 0; i < sizeof linters / sizeof linters[0]; i++)
		run_linter(out, ctx, &linters[i], &python_done);
	if (python_done && jv_get_kind(ctx->missing) == JV_KIND_ARRAY) {
		/* ruff or flake8: one of them checked the Python files */
		jv kept = jv_array();
		jv_array_foreach(ctx->missing, i, m) {
			(void)i;
			const char *layer = json_get_str(m, "layer"), *lang = json_get_str(m, "language");
			if (layer && lang && !strcmp(layer, "static") && !strcmp(lang, "python"))
				jv_free(m);
			else
				kept = jv_array_append(kept, m);
		}
		jv_free(ctx->missing);
		ctx->missing = kept;
	}
	return 0;
}
