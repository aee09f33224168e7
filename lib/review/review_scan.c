/*
 * review_scan.c - layer 2, external scanners where installed: flawfinder
 * for C/C++ (-S -D -Q -C single-line output) and bandit for Python (-f
 * json).  Each runs on the temporary post-image copies (review_prepare), so
 * its file:line maps onto the diff directly; only findings on added lines
 * are kept.  A scanner that is not installed is skipped with a
 * review.tool_skipped event; one that fails (an exit status above what it
 * returns for findings, a signal, a timeout) gives a forge/not-reviewed
 * warning for each file it was given.  Files go MAX_FILES at a time.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "review/review.h"
#include "core/buf.h"
#include "git/diff.h"
#include "core/forge.h"
#include "core/json.h"
#include "os/proc.h"
#include "data/project.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>


static void add(jv *acc, const struct diff *d, const char *severity, const char *rule,
		const char *file, int line, const char *msg, double confidence)
{
	const struct diff_file *f;

	while (file[0] == '.' && file[1] == '/')
		file += 2;
	f = diff_find(d, file);
	if (!f || !diff_added_line(f, line))
		return;
	jv fi = review_finding("security", severity, "security", rule, f->path, line, msg);
	*acc = jv_array_append(*acc, json_set(fi, "confidence", jv_number(confidence)));
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
		bool match = l && (strcmp(l, lang) == 0 || (strcmp(lang, "c") == 0 && strcmp(l, "cpp") == 0));
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

static void parse_flawfinder(jv *acc, const struct diff *d, const char *text)
{
	int err;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)"^(.+?):(\\d+):(?:\\d+:)?\\s+\\[(\\d)\\]\\s+\\(([\\w-]+)\\)\\s+([\\w-]+):\\s*(.*)$",
				       PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
	pcre2_match_data *md = pcre2_match_data_create(8, NULL);
	struct buf rule = BUF_INIT;
	const char *p = text;

	while (re && p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *line = xstrndup(p, n);

		if (pcre2_match(re, (PCRE2_SPTR)line, n, 0, 0, md, NULL) > 0) {
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
			char *file = xstrndup(line + ov[2], ov[3] - ov[2]);
			char *num = xstrndup(line + ov[4], ov[5] - ov[4]);
			int level = line[ov[6]] - '0';
			char *name = xstrndup(line + ov[10], ov[11] - ov[10]);
			long ln = 0;

			if (forge_parse_long(&ln, num, 1, 100000000) == 0) {
				buf_reset(&rule);
				buf_addf(&rule, "flawfinder/%s", name);
				add(acc, d, level >= 4 ? "error" : level == 3 ? "warning" : "info", rule.buf, file,
				    (int)ln, line + ov[12], 0.4 + level * 0.1);
			}
			free(file);
			free(num);
			free(name);
		}
		free(line);
		p = nl ? nl + 1 : NULL;
	}
	pcre2_code_free(re);
	pcre2_match_data_free(md);
	buf_release(&rule);
}

static void parse_bandit(jv *acc, const struct diff *d, const char *text)
{
	const char *brace = strchr(text, '{');
	jv doc = brace ? json_parse(brace, strlen(brace)) : jv_invalid();
	jv results = json_get(doc, "results");
	struct buf rule = BUF_INIT;

	if (jv_get_kind(results) == JV_KIND_ARRAY) {
		jv_array_foreach(results, i, r) {
			(void)i;
			const char *sev = json_get_str(r, "issue_severity");
			const char *conf = json_get_str(r, "issue_confidence");
			const char *file = json_get_str(r, "filename");
			const char *msg = json_get_str(r, "issue_text");

			buf_reset(&rule);
			buf_addf(&rule, "bandit/%s", json_get_str(r, "test_id") ? json_get_str(r, "test_id") : "B000");
			if (file && msg)
				add(acc, d, sev && strcmp(sev, "HIGH") == 0 ? "error" :
					    sev && strcmp(sev, "MEDIUM") == 0 ? "warning" : "info",
				    rule.buf, file, (int)json_get_num(r, "line_number", 0), msg,
				    conf && strcmp(conf, "HIGH") == 0 ? 0.9 : conf && strcmp(conf, "MEDIUM") == 0 ? 0.7 : 0.4);
			jv_free(r);
		}
	}
	jv_free(results);
	jv_free(doc);
	buf_release(&rule);
}

struct scanner {
	const char *tool;
	const char *lang;
	const char *const *args;
	int max_ok;	/* the highest exit status of a run that worked (bandit: 1, issues found) */
	void (*parse)(jv *acc, const struct diff *d, const char *text);
};

static const char *const flawfinder_args[] = { "-S", "-D", "-Q", "-C", "--minlevel=1", NULL };
static const char *const bandit_args[] = { "-f", "json", "-q", NULL };

static const struct scanner scanners[] = {
	{ "flawfinder", "c", flawfinder_args, 0, parse_flawfinder },
	{ "bandit", "python", bandit_args, 1, parse_bandit },
};

/* Files a scanner is given at once; a larger change is scanned in batches. */
#define MAX_FILES 512

/* See review.h. */
void review_not_reviewed(jv *acc, const char *layer, const char *not_done, const char *tool, const char **files,
			 size_t nf, const char *why)
{
	struct buf msg = BUF_INIT;

	buf_addf(&msg, "not %s: %s %s; review the file yourself", not_done, tool, why);
	for (size_t i = 0; i < nf; i++)
		*acc = jv_array_append(*acc, review_finding(layer, "warning", "correctness", "forge/not-reviewed",
							    files[i], 0, msg.buf));
	buf_release(&msg);
}


/* See review.h. */
void review_tool_failure(struct buf *why, const struct proc_result *r)
{
	const char *out = r->out.buf ? r->out.buf : "";

	while (*out == '\n')
		out++;
	if (r->term_signal) {
		buf_addf(why, "was killed by signal %d", r->term_signal);
		return;
	}
	buf_addf(why, "failed (exit %d", r->exit_code);
	if (r->exit_code == 127 || r->exit_code == 126)
		buf_adds(why, r->exit_code == 127 ? ", command not found" : ", not executable");
	else if (r->exit_code > 128 && r->exit_code < 128 + 65)
		/* (a shell between forge and the tool reports its signal so) */
		buf_addf(why, ", killed by signal %d", r->exit_code - 128);
	buf_addf(why, "%s%.*s)", *out ? ": " : "", (int)strcspn(out, "\n"), out);
}

void review_tool_ran(struct review_ctx *ctx, const char *tool, int files, int exit_code, int findings,
		     bool cached, const char *failure)
{
	jv e = json_set(jv_object(), "tool", jv_string(tool));

	if (failure) {
		e = json_set(e, "failed", jv_true());
		e = json_set(e, "error", jv_string(failure));
	}
	e = json_set(e, "files", jv_number(files));
	e = json_set(e, "exit_code", jv_number(exit_code));
	e = json_set(e, "findings", jv_number(failure ? 0 : findings));
	if (cached)
		e = json_set(e, "cached", jv_true());
	review_emit(ctx, "review.tool_ran", e);
}

/* One run of scanner S (program prog) over files; its findings, or a
 * not-reviewed warning per file when it failed, into *acc. */
static void scan_batch(jv *acc, struct review_ctx *ctx, const struct scanner *S, const char *prog,
		       const char **files, size_t nf)
{
	const char *argv[MAX_FILES + 16];
	char *dotted[MAX_FILES];
	size_t a = 0, nd = 0;
	struct proc_result r;
	struct buf why = BUF_INIT;
	bool cached;

	argv[a++] = prog;
	for (size_t i = 0; S->args[i]; i++)
		argv[a++] = S->args[i];
	/* flawfinder took "-x.c" for options, exited 16 and scanned nothing
	 * (add() strips the "./") */
	nd = review_file_args(argv, &a, files, nf, dotted);
	argv[a] = NULL;
	/* in the sandbox, on the post-image copy (review_run_tool) */
	if (review_run_tool(&r, &cached, ctx, argv, ctx->workdir) < 0 || r.timed_out) {
		buf_adds(&why, r.timed_out ? "timed out" : forge_last_error());
		review_emit(ctx, "review.tool_skipped", json_set(json_set(jv_object(), "tool", jv_string(S->tool)),
								  "reason", jv_string(why.buf)));
		buf_reset(&why);
		buf_addf(&why, "was skipped (%s)", r.timed_out ? "timed out" : "could not run");
		review_not_reviewed(acc, "security", "security-scanned", S->tool, files, nf, why.buf);
		goto out;
	}
	int before = jv_array_length(jv_copy(*acc));
	bool failed = r.term_signal || r.exit_code < 0 || r.exit_code > S->max_ok;

	if (failed) {
		/* before: counted as a clean run with 0 findings */
		review_tool_failure(&why, &r);
		review_not_reviewed(acc, "security", "security-scanned", S->tool, files, nf, why.buf);
	} else {
		S->parse(acc, ctx->diff, r.out.buf);
	}
	review_tool_ran(ctx, S->tool, (int)nf, r.exit_code, jv_array_length(jv_copy(*acc)) - before, cached,
			failed ? why.buf : NULL);
out:
	proc_result_release(&r);
	buf_release(&why);
	for (size_t i = 0; i < nd; i++)
		free(dotted[i]);
}

int review_scan(jv *out, struct review_ctx *ctx)
{
	*out = jv_array();
	if (!ctx->workdir)
		return 0;
	for (size_t s = 0; s < sizeof scanners / sizeof scanners[0]; s++) {
		const struct scanner *S = &scanners[s];
		const char *files[MAX_FILES];
		bool more = false;
		size_t nf = files_of(files, MAX_FILES, 0, &more, ctx, S->lang);
		char *prog;

		if (nf == 0)
			continue;
		prog = review_which(S->tool);
		if (!prog) {
			review_tool_missing(ctx, S->tool, "security", S->lang);
			continue;
		}
		/* every file, MAX_FILES at a time (before: the files past the
		 * 512th of a language were not scanned, and nothing said so) */
		for (size_t done = 0; nf > 0;) {
			scan_batch(out, ctx, S, prog, files, nf);
			done += nf;
			nf = more ? files_of(files, MAX_FILES, done, &more, ctx, S->lang) : 0;
		}
		free(prog);
	}
	return 0;
}
