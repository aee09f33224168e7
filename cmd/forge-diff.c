/*
 * forge-diff - a run's changes: its branch against the commit it started
 * from, as a unified diff on stdout (no pager).
 *
 *   forge diff TRACE [--stat]
 */
#include "app/cli.h"
#include "app/runview.h"
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "git/git.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_STAT = 256 };

static const struct cli_option options[] = {
	{ "stat", 0, NULL, "one line a file (+added -deleted) and a total, instead of the patch", OPT_STAT },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-diff",
	.synopsis = "TRACE [--stat]",
	.description = "Print what run TRACE changed: its branch forge/TRACE against the commit the run\n"
		       "started from, as a unified diff, without a pager (pipe it to `less -R` or\n"
		       "`git apply`).  Colour only when stdout is a terminal and NO_COLOR is not set.\n"
		       "TRACE may be any unique prefix of a trace id.",
	.options = options,
	.extra_help = "Exit status: 0 printed, 2 no run or several match TRACE, or the run has no\n"
		      "branch and no recorded change, 5 git or the database failed.",
};

static bool colour(void)
{
	return term_color(STDOUT_FILENO);
}

/*
 * The patch, each line coloured as git colours it when colour is on.  On
 * a terminal its control characters are shown as less shows them, ^[ for
 * an escape (buf_add_visible()): the files are a model's, and one that
 * holds an escape sequence would set the terminal's title, hide lines or
 * fake others (before: written as they were).  To a pipe, byte for byte:
 * what git apply reads.
 */
static void print_patch(const char *patch, bool on, bool terminal)
{
	struct buf shown = BUF_INIT;

	for (const char *p = patch; *p;) {
		size_t n = strcspn(p, "\n");
		const char *c = NULL, *line = p;

		if (on) {
			if (!strncmp(p, "diff ", 5) || !strncmp(p, "index ", 6) || !strncmp(p, "--- ", 4) ||
			    !strncmp(p, "+++ ", 4))
				c = "\033[1m";
			else if (*p == '@')
				c = "\033[36m";
			else if (*p == '+')
				c = "\033[32m";
			else if (*p == '-')
				c = "\033[31m";
		}
		p += n + (p[n] == '\n');
		if (terminal) {
			buf_truncate(&shown, 0);
			buf_add_visible(&shown, line, n);
			line = shown.buf ? shown.buf : "";
			n = shown.len;
		}
		printf("%s%.*s%s\n", c ? c : "", (int)n, line, c ? "\033[m" : "");
	}
	buf_release(&shown);
}

static void print_stat(jv files_in)
{
	/* (a file's name may hold escapes, a newline: quoted as git does) */
	jv files = term_safe(term_quote_paths(files_in));
	long add = 0, del = 0;
	int n = 0;

	jv_array_foreach(files, i, f) {
		const char *path = json_get_str(f, "path") ? json_get_str(f, "path") : "?";
		/* padded by columns, as git diff --stat: a name of wide or
		 * accented characters keeps the counts in line */
		printf(" %s%*s +%.0f -%.0f%s\n", path, term_pad(path, 50), "", json_get_num(f, "additions", 0),
		       json_get_num(f, "deletions", 0), json_get_bool(f, "binary", false) ? " (binary)" : "");
		add += (long)json_get_num(f, "additions", 0);
		del += (long)json_get_num(f, "deletions", 0);
		n++;
		jv_free(f);
	}
	printf(" %d file%s changed, %ld insertion%s(+), %ld deletion%s(-)\n", n, n == 1 ? "" : "s", add,
	       add == 1 ? "" : "s", del, del == 1 ? "" : "s");
	jv_free(files);
}

static int on_option(int id, const char *arg, void *payload)
{
	(void)arg;
	if (id == OPT_STAT) {
		*(bool *)payload = true;
		return 0;
	}
	return forge_error("unhandled option");
}

/* The patch: from git itself when the run's branch is there, not the
 * view's JSON text (a binary file's change as a binary patch, Latin-1
 * bytes as they are; before: "Binary files differ" and U+FFFD, a patch git
 * apply refused); else the diff the newest checkpoint recorded. */
static int show_patch(struct runview_open *v, jv diff)
{
	const char *from = json_get_str(diff, "from");
	char *patch = NULL;
	jv cp = jv_null();
	int status = 0;

	if (from && !strcmp(from, "git") && v->g) {
		if (forge_git_patch_revs(&patch, v->g, json_get_str(diff, "base"), json_get_str(diff, "head")) < 0) {
			fprintf(stderr, "forge-diff: %s\n", forge_last_error());
			status = FORGE_EXIT_DEPENDENCY;
		} else {
			print_patch(patch, colour(), isatty(STDOUT_FILENO));
		}
	} else if (store_checkpoint_latest(&cp, v->ses.store, v->trace) < 0) {
		fprintf(stderr, "forge-diff: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	} else {
		jv ch = json_get(cp, "changes");
		print_patch(json_get_str(ch, "diff") ? json_get_str(ch, "diff") : "", colour(), isatty(STDOUT_FILENO));
		jv_free(ch);
	}
	free(patch);
	jv_free(cp);
	return status;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	bool stat = false;
	int first = cli_parse(&common, &spec, argc, argv, on_option, &stat);
	struct runview_open v;
	jv diff;
	int status;

	if (argc - first != 1)
		cli_usage_error(&spec, "one trace id is needed");
	/* (the view without its patch: show_patch() makes it, once) */
	status = runview_open(&v, &common, "forge-diff", argv[first], false);
	if (status)
		goto out;
	diff = json_get(v.view, "diff");
	if (jv_get_kind(diff) != JV_KIND_OBJECT) {
		fprintf(stderr, "forge-diff: run %s has no branch and no recorded change\n", v.trace);
		status = FORGE_EXIT_USAGE;
	} else if (stat) {
		print_stat(json_get(diff, "files"));
	} else {
		status = show_patch(&v, diff);
	}
	jv_free(diff);
out:
	runview_close(&v);
	return cli_finish("forge-diff", status);
}
