/*
 * review_scan.c - layer 2, external scanners where installed: flawfinder
 * for C/C++ (-S -D -Q -C single-line output) and bandit for Python (-f
 * json).  Each runs on the temporary post-image copies (review_prepare), so
 * its file:line maps onto the diff directly; only findings on added lines
 * are kept.  A scanner that is not installed is skipped with a
 * review.tool_skipped event.
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

static size_t files_of(const char **files, size_t max, struct review_ctx *ctx, const char *lang)
{
	size_t n = 0;

	jv_array_foreach(ctx->checked, i, p) {
		(void)i;
		const char *l = project_language(jv_string_value(p));
		if (l && (strcmp(l, lang) == 0 || (strcmp(lang, "c") == 0 && strcmp(l, "cpp") == 0)) && n < max)
			files[n++] = jv_string_value(p);	/* borrowed from ctx->checked */
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
	void (*parse)(jv *acc, const struct diff *d, const char *text);
};

static const char *const flawfinder_args[] = { "-S", "-D", "-Q", "-C", "--minlevel=1", NULL };
static const char *const bandit_args[] = { "-f", "json", "-q", NULL };

static const struct scanner scanners[] = {
	{ "flawfinder", "c", flawfinder_args, parse_flawfinder },
	{ "bandit", "python", bandit_args, parse_bandit },
};

#define MAX_FILES 512

int review_scan(jv *out, struct review_ctx *ctx)
{
	*out = jv_array();
	if (!ctx->workdir)
		return 0;
	for (size_t s = 0; s < sizeof scanners / sizeof scanners[0]; s++) {
		const struct scanner *S = &scanners[s];
		const char *files[MAX_FILES], *argv[MAX_FILES + 16];
		size_t nf = files_of(files, MAX_FILES, ctx, S->lang), a = 0;
		struct proc_result r;
		char *prog;

		if (nf == 0)
			continue;
		prog = review_which(S->tool);
		if (!prog) {
			review_tool_missing(ctx, S->tool, "security", S->lang);
			continue;
		}
		argv[a++] = prog;
		for (size_t i = 0; S->args[i]; i++)
			argv[a++] = S->args[i];
		for (size_t i = 0; i < nf; i++)
			argv[a++] = files[i];
		argv[a] = NULL;
		/* in the sandbox, on the post-image copy (review_run_tool) */
		bool cached;
		if (review_run_tool(&r, &cached, ctx, argv, ctx->workdir) == 0 && !r.timed_out) {
			int before = jv_array_length(jv_copy(*out));
			S->parse(out, ctx->diff, r.out.buf);
			jv e = json_set(jv_object(), "tool", jv_string(S->tool));
			e = json_set(e, "files", jv_number((double)nf));
			e = json_set(e, "exit_code", jv_number(r.exit_code));
			e = json_set(e, "findings", jv_number(jv_array_length(jv_copy(*out)) - before));
			if (cached)
				e = json_set(e, "cached", jv_true());
			review_emit(ctx, "review.tool_ran", e);
		} else {
			review_emit(ctx, "review.tool_skipped", json_set(json_set(jv_object(), "tool", jv_string(S->tool)),
								  "reason", jv_string(r.timed_out ? "timed out" : forge_last_error())));
		}
		proc_result_release(&r);
		free(prog);
	}
	return 0;
}
