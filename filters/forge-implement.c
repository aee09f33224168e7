/*
 * forge-implement - plan (+ review findings or fixable test failures on a
 * bounce) → changes (DESIGN.md §3; seed 000 §7.2; TDD: seed 004 §3.3).
 *
 * All work happens in the run's own git worktree, forge_git_runs_dir()/TRACE
 * (outside the checkout) on branch forge/TRACE (lib/git/git.h), made on the first run and
 * reopened on bounces; the user's checkout is never touched.  The agent
 * gets the edit tools (read_file, list_files, grep, write_file, edit_file,
 * apply_patch, run_command, git_diff, git_status) rooted at the worktree,
 * with a temp dir of its own and the configured sandbox policy.  On a
 * bounce the prompt starts with what to fix: the review's findings (when
 * review.decision is request_changes) or the test failures whose suggested
 * fix has confidence above bounces.test_fix_confidence.
 *
 * After the agent finishes, the work is committed on forge/TRACE ("forge:
 * TASK (attempt N)"; nothing to commit is reported, not an error), then the
 * project's real build and test commands (project.h) run in the worktree
 * under the sandbox: `validated` and `validation` record what they did --
 * unless the agent's last successful run_command was the test command on
 * the tree the worktree still holds (tests_passed(): validation then says
 * skipped, why, the tree and the tool call).
 * When validation fails, the agent gets implement.fix_rounds more runs with
 * the failure first in its prompt.
 *
 * TDD (implement.tdd or --tdd): a first agent run writes only the tests;
 * forge runs them and confirms they fail (tdd.red) — when they pass, the
 * model is told and tries again (once), after which the phase is rejected —
 * and commits them; a second run implements until they pass (tdd.green).
 * The tests the red step committed are held: a green attempt that changed
 * or deleted one gets them back with a finding (tdd.tests_changed) and tries
 * again, at most TDD_GREEN_TRIES times in all, then the phase is rejected —
 * unless the plan says the tests themselves were wrong (plan.tests_wrong).
 *
 * Output: the state with `changes` {files, diff (against the run's base),
 * commit, base_commit, tests_added, validated, validation; empty: true when
 * the branch holds no change against its base, with an implement.no_change
 * event} and task.worktree / task.branch.
 */
#include "core/buf.h"
#include "data/config.h"
#include "data/schema.h"
#include "core/forge.h"
#include "git/diff.h"
#include "git/git.h"
#include "core/json.h"
#include "app/human.h"
#include "app/phase.h"
#include "app/runshare.h"
#include "app/term.h"
#include "data/project.h"
#include "os/sandbox.h"
#include "agent/tools.h"
#include "core/tmpdir.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIFF_MAX (900 * 1024)     /* bytes of the unified diff kept in the state */
#define OUTPUT_MAX 4000           /* bytes of a command's output kept per step */
#define PROMPT_OUTPUT_MAX 2000    /* bytes of a failure's output shown to the model */
#define FINDINGS_MAX 50
#define TDD_RED_TRIES 2
#define TDD_GREEN_TRIES 2     /* green attempts that may change the red tests before the phase is rejected */
#define TDD_TEST_MAX (4u << 20)

enum { OPT_TDD = 256 };

static const char *const edit_tools[] = {
	"read_file", "list_files", "grep", "write_file", "edit_file", "apply_patch",
	"run_command", "git_diff", "git_status", NULL
};

struct options {
	bool tdd;
};

struct impl {
	struct phase *ph;
	struct forge_git *g;
	struct forge_git_worktree *wt;
	struct sandbox_policy *policy;
	char *tmp;              /* the run's temp dir (removed at the end) */
	struct tool_ctx ctx;
	char *system;           /* the system prompt */
	char *context;          /* what every agent run starts from: fixes + plan + repository */
	char *summary;          /* the task in one short line, for commit messages */
	int attempt;            /* this run of implement in the pipeline: 1, 2, … */
	int commits;            /* commits made by this run */
	jv validation;          /* the last validation, or null */
	bool validated;
	const char *test_cmd;   /* the configured or detected test command, or NULL,
	                           when implement.validate is on (else nothing to skip) */
	const char *build_cmd;  /* the same for the build command */
	int tool_calls;         /* the agent's tool calls so far (all runs) */
	/* The agent's last successful run_command, when it was test_cmd: the
	 * worktree's tree then (NULL: none), at which tool call, its output. */
	char *tested_tree;
	int tested_call;
	jv tested;
	/* The tree of the agent's last successful run_command of build_cmd,
	 * when no other command succeeded after it but the test command (NULL:
	 * none): the build the skipped validation would run is covered then. */
	char *built_tree;
};

/* ---- small helpers -------------------------------------------------------- */

/* The last max bytes of text (at a line start when there is one), with a
 * marker saying how much was left out.  A new string. */
static jv tail_text(const char *text, size_t len, size_t max)
{
	if (len <= max)
		return jv_string_sized(text, (int)len);
	const char *start = text + (len - max);
	const char *nl = memchr(start, '\n', max);
	if (nl && (size_t)(nl - start) < max / 2)
		start = nl + 1;
	/* do not start inside a UTF-8 sequence */
	while (start < text + len && ((unsigned char)*start & 0xC0) == 0x80)
		start++;
	struct buf b = BUF_INIT;
	buf_addf(&b, "[… %zu bytes omitted …]\n", (size_t)(start - text));
	buf_add(&b, start, len - (size_t)(start - text));
	jv s = jv_string_sized(b.buf, (int)b.len);
	buf_release(&b);
	return s;
}

/* The first line of s, at most max bytes (cut at a UTF-8 boundary), its
 * control characters spaces: the commit's subject, which git log and
 * every tool that shows history print as it is. */
static char *first_line(const char *s, size_t max)
{
	size_t n = strcspn(s, "\n");
	char *line;

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	line = xstrndup(s, n);
	term_clean_line(line, strlen(line));
	return line;
}

/* A path that looks like a test file. */
static bool is_test_path(const char *path)
{
	static const char *const dirs[] = { "test", "tests", "t", "spec", "specs", "__tests__", "testing", NULL };
	static const char *const marks[] = { "_test.", "-test.", ".test.", "_spec.", ".spec.", "Test.", "Tests.", NULL };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (const char *p = path; p < base;) {
		size_t n = strcspn(p, "/");
		for (size_t i = 0; dirs[i]; i++)
			if (strlen(dirs[i]) == n && strncmp(p, dirs[i], n) == 0)
				return true;
		p += n + 1;
	}
	if (strncmp(base, "test", 4) == 0 && (base[4] == '_' || base[4] == '-' || base[4] == '.'))
		return true;
	for (size_t i = 0; marks[i]; i++)
		if (strstr(base, marks[i]))
			return true;
	size_t n = strlen(base);
	return n > 5 && strcmp(base + n - 5, ".bats") == 0;
}

/* Whether line (n bytes, the text after a diff's "+") is a Rust test
 * attribute: #[test], or one whose last path segment is test, with or
 * without arguments (#[tokio::test], #[tokio::test(flavor = "...")]). */
static bool rust_test_attr(const char *line, size_t n)
{
	size_t i = 0, seg;

	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (n - i < 2 || line[i] != '#' || line[i + 1] != '[')
		return false;
	for (i += 2;;) {
		seg = i;
		while (i < n && (isalnum((unsigned char)line[i]) || line[i] == '_'))
			i++;
		if (i == seg)
			return false;
		if (n - i >= 2 && line[i] == ':' && line[i + 1] == ':') {
			i += 2;
			continue;
		}
		break;
	}
	return i - seg == 4 && strncmp(line + seg, "test", 4) == 0 && i < n && (line[i] == ']' || line[i] == '(');
}

/*
 * Whether the unified diff patch adds a Rust test to the .rs file path: a
 * line of a hunk of that file ("+++ b/PATH") adding a test attribute
 * (rust_test_attr) -- a unit test written inline in a src/ file, in its
 * #[cfg(test)] module, which no test path names (before: such a change
 * added no test, for tests_added).
 */
static bool adds_rust_test(const char *patch, const char *path)
{
	size_t plen = strlen(path);
	bool mine = false, header = false;

	if (!patch || plen < 4 || strcmp(path + plen - 3, ".rs") != 0)
		return false;
	for (const char *p = patch; *p;) {
		size_t n = strcspn(p, "\n");

		if (n >= 11 && strncmp(p, "diff --git ", 11) == 0) {
			header = true;
			mine = false;
		} else if (header && n >= 4 && strncmp(p, "+++ ", 4) == 0) {
			mine = n == 6 + plen && strncmp(p + 4, "b/", 2) == 0 && strncmp(p + 6, path, plen) == 0;
		} else if (n >= 2 && strncmp(p, "@@", 2) == 0) {
			header = false;
		} else if (mine && !header && n >= 1 && *p == '+' && rust_test_attr(p + 1, n - 1)) {
			return true;
		}
		p += n + (p[n] == '\n');
	}
	return false;
}

/* ---- the prompt ----------------------------------------------------------- */

/* Where the last bounce to implement came from ("review", "test"), or NULL. */
static char *bounce_from(struct phase *ph)
{
	jv bounces = json_get(ph->state, "bounces");
	char *from = NULL;

	if (jv_get_kind(bounces) == JV_KIND_ARRAY) {
		jv_array_foreach(bounces, i, b) {
			const char *to = json_get_str(b, "to"), *f = json_get_str(b, "from");
			if (to && f && strcmp(to, "implement") == 0) {
				free(from);
				from = xstrdup(f);
			}
			jv_free(b);
		}
	}
	jv_free(bounces);
	return from;
}

static int severity_rank(const char *s)
{
	static const char *const order[] = { "critical", "error", "warning", "info", NULL };

	for (int i = 0; s && order[i]; i++)
		if (strcmp(s, order[i]) == 0)
			return i;
	return 4;
}

/* The review's findings, worst first, as a numbered list; returns the count. */
static int findings_text(struct buf *b, jv review)
{
	jv findings = json_get(review, "findings");
	int n = 0;

	if (jv_get_kind(findings) != JV_KIND_ARRAY) {
		jv_free(findings);
		return 0;
	}
	for (int rank = 0; rank <= 4 && n < FINDINGS_MAX; rank++) {
		jv_array_foreach(findings, i, f) {
			const char *sev = json_get_str(f, "severity");
			if (severity_rank(sev) == rank && n < FINDINGS_MAX) {
				const char *file = json_get_str(f, "file"), *msg = json_get_str(f, "message");
				const char *cat = json_get_str(f, "category"), *rule = json_get_str(f, "rule");
				const char *fix = json_get_str(f, "fix");
				double line = json_get_num(f, "line", -1);
				buf_addf(b, "%d. ", ++n);
				/* (a name holding a newline quoted, as git does) */
				buf_add_path_quoted(b, file ? file : "(no file)");
				if (file && line > 0)
					buf_addf(b, ":%.0f", line);
				buf_addf(b, " — %s", sev ? sev : "warning");
				if (cat)
					buf_addf(b, " %s", cat);
				if (rule)
					buf_addf(b, " [%s]", rule);
				buf_addf(b, ": %s\n", msg ? msg : "");
				if (fix && *fix)
					buf_addf(b, "   Suggested fix: %s\n", fix);
			}
			jv_free(f);
		}
	}
	jv_free(findings);
	return n;
}

/* The failures with a confident suggested fix, as a numbered list. */
static int failures_text(struct buf *b, jv tests, double min_confidence)
{
	jv failures = json_get(tests, "failures");
	int n = 0;

	if (jv_get_kind(failures) != JV_KIND_ARRAY) {
		jv_free(failures);
		return 0;
	}
	jv_array_foreach(failures, i, f) {
		const char *fix = json_get_str(f, "suggested_fix");
		double conf = json_get_num(f, "confidence", 0);
		if (fix && *fix && conf > min_confidence && n < FINDINGS_MAX) {
			const char *test = json_get_str(f, "test"), *file = json_get_str(f, "file");
			const char *msg = json_get_str(f, "message"), *cause = json_get_str(f, "root_cause");
			const char *output = json_get_str(f, "output");
			double line = json_get_num(f, "line", -1);
			buf_addf(b, "%d. %s", ++n, test ? test : "(unnamed test)");
			if (file) {
				buf_adds(b, " (");
				buf_add_path_quoted(b, file);
				if (line > 0)
					buf_addf(b, ":%.0f", line);
				buf_adds(b, ")");
			}
			buf_addf(b, ": %s\n", msg && *msg ? msg : "failed");
			if (cause && *cause)
				buf_addf(b, "   Root cause: %s\n", cause);
			buf_addf(b, "   Suggested fix: %s (confidence %.2f)\n", fix, conf);
			if (output && *output) {
				jv tail = tail_text(output, strlen(output), PROMPT_OUTPUT_MAX);
				buf_addf(b, "   Output:\n```\n%s\n```\n", jv_string_value(tail));
				jv_free(tail);
			}
		}
		jv_free(f);
	}
	jv_free(failures);
	return n;
}

/* What a bounce asks to fix, for the top of the prompt ("" when nothing). */
static void bounce_text(struct buf *b, struct impl *im)
{
	struct phase *ph = im->ph;
	char *from = bounce_from(ph);
	jv review = json_get(ph->state, "review"), tests = json_get(ph->state, "tests");
	const char *decision = json_get_str(review, "decision");
	int nfind = 0, nfail = 0;

	if (decision && strcmp(decision, "request_changes") == 0 && (!from || strcmp(from, "review") == 0)) {
		struct buf list = BUF_INIT;
		nfind = findings_text(&list, review);
		if (nfind) {
			buf_addf(b, "# Fix these first: the review requested changes\n\n"
				    "The review of the previous attempt (already committed on this branch) "
				    "requested changes. Fix every finding below — file, line, severity, the "
				    "problem and the suggested fix — then make sure the build and tests still "
				    "pass. Change nothing else.\n\n%s\n", list.buf);
		}
		buf_release(&list);
	}
	if (jv_get_kind(tests) == JV_KIND_OBJECT && (!from || strcmp(from, "test") == 0)) {
		struct buf list = BUF_INIT;
		double min = config_get_num(ph->cfg, "bounces.test_fix_confidence");
		nfail = failures_text(&list, tests, min);
		if (nfail) {
			const char *cmd = json_get_str(tests, "command");
			buf_addf(b, "# Fix these first: tests failed\n\n"
				    "The tests of the previous attempt (already committed on this branch) "
				    "failed%s%s%s. Fix the code for each failure below — the suggested fixes "
				    "come from an analysis of the output — and change a test only when the test "
				    "itself is wrong. Then run the tests again.\n\n%s\n",
				 cmd ? " (`" : "", cmd ? cmd : "", cmd ? "`)" : "", list.buf);
		}
		buf_release(&list);
	}
	if (nfind || nfail) {
		jv ev = json_set(jv_object(), "from", json_str_or_null(from));
		ev = json_set(ev, "findings", jv_number(nfind));
		ev = json_set(ev, "failures", jv_number(nfail));
		phase_emit(ph, "implement.bounce", ev);
	}
	jv_free(review);
	jv_free(tests);
	free(from);
}

/* What the run's reflection (Loop 3, forge-supervisor) learned so far:
 * state.reflection.learnings, after the fixes (app/reflect_run.h). */
static void reflection_text(struct buf *b, struct phase *ph)
{
	jv r = json_get(ph->state, "reflection"), learnings = json_get(r, "learnings");
	int n = 0;

	if (jv_get_kind(learnings) == JV_KIND_ARRAY) {
		jv_array_foreach(learnings, i, l) {
			const char *content = json_get_str(l, "content"), *context = json_get_str(l, "context");
			if (content && *content) {
				if (!n++)
					buf_adds(b, "# What this run has learned so far\n\n"
						    "A reflection on this run's earlier attempts (its bounces, failures and "
						    "costs) concluded the following. Apply it in this attempt.\n\n");
				buf_addf(b, "- %s", content);
				if (context && *context)
					buf_addf(b, " (applies to: %s)", context);
				buf_addch(b, '\n');
			}
			jv_free(l);
			(void)i;
		}
	}
	if (n) {
		buf_addch(b, '\n');
		phase_emit(ph, "implement.reflection", json_set(jv_object(), "learnings", jv_number(n)));
	}
	jv_free(learnings);
	jv_free(r);
}

static void strings_list(struct buf *b, const char *label, jv list)
{
	int n = 0;

	if (jv_get_kind(list) != JV_KIND_ARRAY)
		return;
	jv_array_foreach(list, i, s) {
		if (jv_get_kind(s) == JV_KIND_STRING)
			buf_addf(b, "%s%s", n++ ? ", " : label, jv_string_value(s));
		else if (jv_get_kind(s) == JV_KIND_OBJECT) {
			char *text = json_dumps(jv_copy(s), false);
			buf_addf(b, "%s%s", n++ ? ", " : label, text);
			free(text);
		}
		jv_free(s);
	}
	if (n)
		buf_addch(b, '\n');
}

/* How much of the saved work's diff the prompt shows (~2K tokens, all refs
 * together): enough for an edit or two to be done again; past it the
 * files are named and the agent reads them. */
#define SAVED_DIFF_MAX 8000

/* The patch of one saved ref (forge_git_run_saved()'s entry, borrowed),
 * cut at a line within *left bytes, for the prompt. */
static void saved_patch(struct buf *b, struct impl *im, jv e, size_t *left)
{
	char *patch = NULL;

	if (forge_git_diff_revs(&patch, NULL, im->g, json_get_str(e, "from"), json_get_str(e, "ref")) < 0) {
		buf_addf(b, "(its diff cannot be read: %s)\n", forge_last_error());
		return;
	}
	size_t n = strlen(patch), keep = n;

	if (n > *left) {
		keep = *left;
		while (keep > 0 && patch[keep - 1] != '\n')
			keep--;
	}
	buf_adds(b, "```diff\n");
	buf_add(b, patch, keep);
	buf_adds(b, "```\n");
	if (keep < n)
		buf_addf(b, "(cut here: %zu more bytes of the diff are not shown; read the files named above and "
			    "do again what the task needs)\n", n - keep);
	*left -= keep;
	free(patch);
}

/* What an interrupted attempt had changed, kept on a saved ref when its
 * run was resumed (or this phase started again on a worktree with changes
 * its state lacked) and reset away: its ref, files, diffstat and diff, so
 * that the agent can do it again rather than start from nothing (before:
 * the prompt never said, the agent finished with "no change" and gc
 * deleted the ref).  Only what the worktree's HEAD does not hold
 * (forge_git_run_saved). */
static void saved_text(struct buf *b, struct impl *im)
{
	char *head = NULL;
	jv saved = jv_invalid(), ev = jv_array();
	size_t left = SAVED_DIFF_MAX;

	if (forge_git_worktree_head(&head, im->wt) < 0 || !head ||
	    forge_git_run_saved(&saved, im->g, forge_git_worktree_trace(im->wt), head) < 0 ||
	    jv_array_length(jv_copy(saved)) == 0)
		goto out;
	buf_adds(b, "# Work saved from an interrupted attempt\n\n"
		    "An earlier attempt of this phase was interrupted before it finished (its provider "
		    "failed, it was stopped or killed), or the worktree held changes this run's state did "
		    "not have. What it had changed was kept on a git ref and the worktree was reset, so "
		    "none of it is in your worktree now. It may be partial or wrong: re-apply what the task "
		    "still needs of it (with the file tools), and leave out the rest.\n\n");
	jv_array_foreach(saved, i, e) {
		jv files = json_get(e, "files");

		buf_addf(b, "## %s\n\nFiles (from commit %.12s):\n", json_get_str(e, "ref"), json_get_str(e, "from"));
		jv_array_foreach(files, k, f) {
			buf_adds(b, "- ");
			json_path_add_shown(b, json_get_str(f, "path"));
			buf_addf(b, " (%s, +%.0f -%.0f)\n", json_get_str(f, "action"), json_get_num(f, "additions", 0),
				 json_get_num(f, "deletions", 0));
			jv_free(f);
			(void)k;
		}
		buf_addch(b, '\n');
		saved_patch(b, im, e, &left);
		buf_addch(b, '\n');
		ev = jv_array_append(ev, json_set(json_set(jv_object(), "ref", json_get(e, "ref")), "files",
						  jv_number(jv_array_length(files))));
		jv_free(e);
		(void)i;
	}
	phase_emit(im->ph, "implement.saved_work", json_set(jv_object(), "saved", jv_copy(ev)));
out:
	jv_free(ev);
	jv_free(saved);
	free(head);
}

/* The plan as markdown for the prompt. */
static char *plan_text(jv plan)
{
	struct buf b = BUF_INIT;
	const char *summary = json_get_str(plan, "summary");
	jv risk = json_get(plan, "risk"), tasks = json_get(plan, "tasks");
	jv arch = json_get(plan, "architecture");
	const char *level = json_get_str(risk, "level");

	buf_addf(&b, "Summary: %s\n", summary ? summary : "");
	if (level)
		buf_addf(&b, "Risk: %s\n", level);
	if (jv_get_kind(arch) == JV_KIND_OBJECT) {
		jv c = json_get(arch, "components"), i = json_get(arch, "interfaces"), d = json_get(arch, "decisions");
		strings_list(&b, "Components: ", c);
		strings_list(&b, "Interfaces: ", i);
		strings_list(&b, "Decisions: ", d);
		jv_free(c);
		jv_free(i);
		jv_free(d);
	}
	buf_adds(&b, "\nTasks, in order:\n");
	if (jv_get_kind(tasks) == JV_KIND_ARRAY) {
		jv_array_foreach(tasks, k, t) {
			const char *id = json_get_str(t, "id"), *title = json_get_str(t, "title");
			const char *desc = json_get_str(t, "description");
			jv files = json_get(t, "files"), deps = json_get(t, "depends_on"), acc = json_get(t, "acceptance");
			buf_addf(&b, "%d. [%s] %s\n", k + 1, id ? id : "?", title ? title : "");
			if (desc && *desc)
				buf_addf(&b, "   %s\n", desc);
			strings_list(&b, "   Files: ", files);
			strings_list(&b, "   After: ", deps);
			strings_list(&b, "   Acceptance: ", acc);
			jv_free(files);
			jv_free(deps);
			jv_free(acc);
			jv_free(t);
		}
	}
	jv_free(risk);
	jv_free(tasks);
	jv_free(arch);
	return buf_detach(&b, NULL);
}

/* The first message of every agent run: fixes first, then the perceived
 * context (task, plan, worktree, commands, memories, skills). */
static void build_context(struct impl *im, const char *build_cmd, const char *test_cmd)
{
	struct phase *ph = im->ph;
	struct buf b = BUF_INIT, w = BUF_INIT;
	jv plan = json_get(ph->state, "plan");
	char *ptext = plan_text(plan);
	char *perceived = NULL;
	jv env = jv_object();
	jv files = jv_null();

	bounce_text(&b, im);
	saved_text(&b, im);
	reflection_text(&b, ph);
	env = json_set(env, "plan", jv_string(ptext));
	buf_addf(&w, "You work in the run's git worktree on branch %s (base commit %.12s); this is "
		     "attempt %d.\nBuild command: %s\nTest command: %s\n",
		 forge_git_worktree_branch(im->wt), forge_git_worktree_base(im->wt), im->attempt,
		 build_cmd ? build_cmd : "(none detected)", test_cmd ? test_cmd : "(none detected)");
	if (forge_git_diff(NULL, &files, im->wt, NULL) == 0 && jv_get_kind(files) == JV_KIND_ARRAY &&
	    jv_array_length(jv_copy(files)) > 0) {
		buf_adds(&w, "Already changed on this branch (earlier attempts):\n");
		jv_array_foreach(files, i, f) {
			/* one a line: a name holding a newline quoted, as git does */
			buf_adds(&w, "- ");
			json_path_add_shown(&w, json_get_str(f, "path"));
			buf_addf(&w, " (%s)\n", json_get_str(f, "action"));
			jv_free(f);
		}
	}
	jv_free(files);
	env = json_set(env, "worktree", jv_string(w.buf));
	phase_perceive(&perceived, ph, env);
	if (b.len)
		buf_adds(&b, "# The task\n\n");
	buf_adds(&b, perceived);
	im->context = buf_detach(&b, NULL);
	buf_release(&w);
	free(perceived);
	free(ptext);
	jv_free(plan);
}

/* ---- tools and the agent -------------------------------------------------- */

/* s without leading and trailing blanks equals t. */
static bool same_command(const char *s, const char *t)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
		n--;
	return strlen(t) == n && strncmp(s, t, n) == 0;
}

static void forget_built(struct impl *im)
{
	free(im->built_tree);
	im->built_tree = NULL;
}

static void forget_tested(struct impl *im)
{
	free(im->tested_tree);
	im->tested_tree = NULL;
	jv_free(im->tested);
	im->tested = jv_null();
}

/*
 * After a run_command: remember the worktree's tree when the agent ran the
 * test command (in the worktree's root) and it passed; forget it when the
 * test command failed or another command succeeded after it, so only the
 * agent's last successful command counts (a failed other command changes
 * nothing it could not change on the tree, which validation compares).
 * The build command's successful run is remembered so too, and still
 * counts when the test command ran after it.
 */
static void note_command(struct impl *im, jv input, const struct agent_tool_outcome *out)
{
	jv cmd = json_get(input, "command"), dir = json_get(input, "workdir");
	const char *wd = jv_get_kind(dir) == JV_KIND_STRING ? jv_string_value(dir) : "";
	bool in_root = jv_get_kind(cmd) == JV_KIND_STRING &&
		       (!*wd || strcmp(wd, ".") == 0 || strcmp(wd, "./") == 0);
	bool is_test = in_root && im->test_cmd && same_command(jv_string_value(cmd), im->test_cmd);
	bool is_build = in_root && !is_test && im->build_cmd &&
			same_command(jv_string_value(cmd), im->build_cmd);

	if (is_build) {
		char *tree = NULL;
		forget_tested(im);
		forget_built(im);
		if (out->ok && forge_git_worktree_tree(&tree, im->wt) == 0)
			im->built_tree = tree;
	} else if (is_test && out->ok) {
		char *tree = NULL;
		forget_tested(im);
		if (forge_git_worktree_tree(&tree, im->wt) == 0) {
			im->tested_tree = tree;
			im->tested_call = im->tool_calls;
			im->tested = json_set(jv_object(), "command", jv_string(im->test_cmd));
			im->tested = json_set(im->tested, "output", tail_text(out->text ? out->text : "",
					      out->text ? strlen(out->text) : 0, OUTPUT_MAX));
		}
	} else if (is_test || out->ok) {
		forget_tested(im);
		if (!is_test)
			forget_built(im);
	}
	jv_free(cmd);
	jv_free(dir);
}

static int exec_edit(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct impl *im = payload;

	for (size_t i = 0; edit_tools[i]; i++)
		if (strcmp(name, edit_tools[i]) == 0) {
			im->tool_calls++;
			int rc = tools_agent_exec(out, name, input, &im->ctx);
			if (rc == 0 && strcmp(name, "run_command") == 0)
				note_command(im, input, out);
			return rc;
		}
	memset(out, 0, sizeof *out);
	out->text = xstrdup("this tool is not available to the implementer");
	out->event = json_set(jv_object(), "kind", jv_string("denied"));
	return 0;
}

/* One agent run from `lead` (may be NULL) followed by the context. */
static const char *run_agent(struct impl *im, const char *lead)
{
	struct agent_config cfg = { 0 };
	struct agent_result res;
	struct buf prompt = BUF_INIT;

	if (lead)
		buf_addf(&prompt, "%s\n\n", lead);
	buf_adds(&prompt, im->context);
	cfg.system_prompt = im->system;
	cfg.tools = tool_specs(edit_tools);
	/* the finish input is checked against it: one that does not match
	 * ({"summary": 42}) goes back to the model, which calls finish again
	 * (before: taken as it was, hunt68 #4) */
	cfg.result_schema = schema_for_model("state.schema.json", "implement_result");
	cfg.result_schema_name = "state.schema.json";
	cfg.result_schema_def = "implement_result";
	const char *status = phase_run_agent(&res, im->ph, &cfg, prompt.buf, exec_edit, im);
	/* what the agent says it did: the run's memories say what fixed a bounce */
	if (res.outcome == AGENT_DONE && json_get_str(res.result, "summary")) {
		jv ev = json_set(jv_object(), "attempt", jv_number(im->attempt));
		ev = json_set(ev, "summary", json_get(res.result, "summary"));
		ev = json_set(ev, "files", json_get(res.result, "files"));
		phase_emit(im->ph, "implement.summary", ev);
	}
	agent_result_release(&res);
	buf_release(&prompt);
	return status;
}

/* ---- git ------------------------------------------------------------------ */

/* A repository a command made inside the worktree (a test fixture, a
 * scaffold) is not committed (git.h: forge_git_commit_all()): say so, with
 * the paths, rather than leave the files in it out in silence. */
static void note_nested_repos(struct impl *im)
{
	jv status, nested;

	if (forge_git_status(&status, im->wt) < 0)
		return;
	nested = jv_array();
	jv_array_foreach(status, i, e) {
		const char *path = json_get_str(e, "path"), *word = json_get_str(e, "status");
		size_t n = path ? strlen(path) : 0;
		if (word && strcmp(word, "untracked") == 0 && n && path[n - 1] == '/') {
			nested = jv_array_append(nested, jv_string(path));
			phase_progress(im->ph, "warning: %s is a git repository of its own; its files are not "
				       "committed", path);
		}
		jv_free(e);
	}
	jv_free(status);
	if (jv_array_length(jv_copy(nested)) > 0)
		phase_emit(im->ph, "commit.nested_repos_skipped", json_set(jv_object(), "paths", nested));
	else
		jv_free(nested);
}

/* Commit the worktree; `what` tags the message ("tests", "fix 1") or NULL. */
static int commit(struct impl *im, const char *what)
{
	struct buf msg = BUF_INIT;
	char *sha = NULL;

	buf_addf(&msg, "forge: %s (attempt %d%s%s)\n", im->summary, im->attempt, what ? ", " : "",
		 what ? what : "");
	jv redacted;
	note_nested_repos(im);
	int rc = forge_git_commit_all_redacted(&sha, &redacted, im->wt, msg.buf);
	if (jv_array_length(jv_copy(redacted)) > 0)
		phase_emit(im->ph, "secret.redacted", json_set(jv_object(), "files", redacted));
	else
		jv_free(redacted);
	if (rc < 0) {
		phase_reason(im->ph, "cannot commit on %s: %s", forge_git_worktree_branch(im->wt),
			     forge_last_error());
		buf_release(&msg);
		return -1;
	}
	buf_truncate(&msg, msg.len - 1);
	if (rc == FORGE_GIT_NOTHING) {
		phase_emit(im->ph, "commit.skipped", json_set(json_set(jv_object(), "reason",
			   jv_string("nothing to commit")), "message", jv_string(msg.buf)));
	} else {
		jv ev = json_set(jv_object(), "commit", jv_string(sha));
		ev = json_set(ev, "branch", jv_string(forge_git_worktree_branch(im->wt)));
		ev = json_set(ev, "message", jv_string(msg.buf));
		phase_emit(im->ph, "commit.created", ev);
		phase_progress(im->ph, "committed %.12s: %s", sha, msg.buf);
		im->commits++;
	}
	free(sha);
	buf_release(&msg);
	return 0;
}

/* ---- validation ----------------------------------------------------------- */

/* The time limit of a validation step: implement.validation_timeout_s,
 * and the test command's also forge-test's -- tools.test_timeout_s, else
 * safety.time_s.test -- when that is shorter (before: a test command that
 * hangs ran 900 s here though forge-test stops it at tools.test_timeout_s,
 * hunt68). */
static double step_timeout_s(struct impl *im, const char *name)
{
	double limit = config_get_num(im->ph->cfg, "implement.validation_timeout_s");
	double test = config_get_num(im->ph->cfg, "tools.test_timeout_s");

	if (strcmp(name, "test") != 0)
		return limit;
	if (test <= 0)
		test = config_get_num(im->ph->cfg, "safety.time_s.test");
	return test > 0 && test < limit ? test : limit;
}

/* Run one command in the worktree under the sandbox; *out_step gets
 * {name, command, exit_status, timed_out, duration_ms, output, and
 * removed: the untracked files it made, when there were any}.  Returns its
 * exit status (-1 when it could not start).
 * What a command Forge ran left behind is not the model's work: untracked
 * files that were not there before -- __pycache__, a built binary -- are
 * removed (forge_git_clean_new()), so the next commit takes only what the
 * model's tools made.  The model's own runs of the same command are its
 * work and are committed as git would add them; a file it makes again
 * after this is its own too. */
static int run_step(jv *out_step, struct impl *im, const char *name, const char *command)
{
	struct proc_result r;
	struct sandbox_cmd cmd = {
		.command = command,
		.root = forge_git_worktree_path(im->wt),
		.tmp = im->tmp,
		.timeout_ms = (long)(step_timeout_s(im, name) * 1000),
	};
	jv step = json_set(json_set(jv_object(), "name", jv_string(name)), "command", jv_string(command));
	int status;
	jv before = phase_command_before(im->ph, forge_git_worktree_path(im->wt)), removed;

	phase_progress(im->ph, "validating: %s", command);
	if (sandbox_run(&r, NULL, im->policy, &cmd) < 0) {
		status = -1;
		step = json_set(step, "exit_status", jv_null());
		step = json_set(step, "output", jv_string(forge_last_error()));
	} else {
		status = r.exit_code;
		step = json_set(step, "exit_status", jv_number(r.exit_code));
		step = json_set(step, "timed_out", jv_bool(r.timed_out));
		step = json_set(step, "duration_ms", jv_number((double)r.duration_ms));
		step = json_set(step, "output", tail_text(r.out.buf, r.out.len, OUTPUT_MAX));
	}
	proc_result_release(&r);
	removed = phase_command_after(im->ph, forge_git_worktree_path(im->wt), before, "a validation command");
	if (jv_array_length(jv_copy(removed)) > 0) {
		phase_emit(im->ph, "validation.cleaned", json_set(json_set(jv_object(), "command",
			   jv_string(command)), "removed", jv_copy(removed)));
		step = json_set(step, "removed", removed);
	} else {
		jv_free(removed);
	}
	*out_step = step;
	return status;
}

/*
 * Build, then test, in the worktree.  Sets im->validated and
 * im->validation {command, exit_status, output, steps}: command/exit_status/
 * output are the step that decided (the first that failed, else the last).
 */
static void validate(struct impl *im, const char *build_cmd, const char *test_cmd)
{
	jv steps = jv_array(), decisive = jv_null();
	bool ok = true;

	if (build_cmd) {
		jv step;
		ok = run_step(&step, im, "build", build_cmd) == 0;
		steps = jv_array_append(steps, jv_copy(step));
		jv_free(decisive);
		decisive = step;
	}
	if (ok && test_cmd) {
		jv step;
		ok = run_step(&step, im, "test", test_cmd) == 0;
		steps = jv_array_append(steps, jv_copy(step));
		jv_free(decisive);
		decisive = step;
	}
	jv v = jv_object();
	if (jv_get_kind(decisive) == JV_KIND_OBJECT) {
		v = json_set(v, "command", json_get(decisive, "command"));
		v = json_set(v, "exit_status", json_get(decisive, "exit_status"));
		v = json_set(v, "output", json_get(decisive, "output"));
	} else {
		ok = false;
		v = json_set(v, "command", jv_null());
		v = json_set(v, "exit_status", jv_null());
		v = json_set(v, "output", jv_string("no build or test command configured (tools.*_command) "
						    "or detected: nothing to validate with"));
	}
	v = json_set(v, "steps", steps);
	jv_free(decisive);
	jv ev = json_set(jv_object(), "validated", jv_bool(ok));
	ev = json_set(ev, "command", json_get(v, "command"));
	ev = json_set(ev, "exit_status", json_get(v, "exit_status"));
	phase_emit(im->ph, "validation.completed", ev);
	jv_free(im->validation);
	im->validation = v;
	im->validated = ok;
}

/*
 * Validation is not run again when the agent's last successful run_command
 * was the test command and the worktree's tree is still the one it passed
 * on (the commit since then changes no file unless it redacted a key, and
 * then the tree differs), and the build step is covered too: there is no
 * build command, or it is the test command, or the agent's successful run
 * of it just before was on the same tree.  Sets im->validation {command, exit_status: 0,
 * output: the agent's run's, steps: [], skipped: true, reason, tree,
 * tool_call} and returns true; false when validation must run.
 */
static bool tests_passed(struct impl *im)
{
	char *now = NULL;
	bool same;

	if (!im->tested_tree)
		return false;
	/* (called right after commit(): HEAD's tree is the worktree's, and
	 * staging it all again to learn so cost a session ~0.4M instructions) */
	same = forge_git_worktree_head_tree(&now, im->wt) == 0 && strcmp(now, im->tested_tree) == 0;
	if (!same) {
		phase_emit(im->ph, "validation.rerun", json_set(json_set(jv_object(), "reason",
			   jv_string(now ? "the worktree changed after the agent's last test run"
					 : forge_last_error())), "tree", json_str_or_null(now)));
		free(now);
		forget_tested(im);
		return false;
	}
	if (im->build_cmd && !same_command(im->build_cmd, im->test_cmd) &&
	    !(im->built_tree && strcmp(im->built_tree, now) == 0)) {
		struct buf why = BUF_INIT;
		buf_addf(&why, "the agent's test run did not cover the build: `%s` did not run on this tree",
			 im->build_cmd);
		phase_emit(im->ph, "validation.rerun", json_set(json_set(jv_object(), "reason",
			   jv_string(why.buf)), "tree", jv_string(now)));
		buf_release(&why);
		free(now);
		forget_tested(im);
		return false;
	}
	char why[160];
	snprintf(why, sizeof why, "tests passed on tree %.12s at tool call %d", now, im->tested_call);
	jv v = json_set(jv_object(), "command", jv_string(im->test_cmd));
	v = json_set(v, "exit_status", jv_number(0));
	v = json_set(v, "output", json_get(im->tested, "output"));
	v = json_set(v, "steps", jv_array());
	v = json_set(v, "skipped", jv_bool(true));
	v = json_set(v, "reason", jv_string(why));
	v = json_set(v, "tree", jv_string(now));
	v = json_set(v, "tool_call", jv_number(im->tested_call));
	jv ev = json_set(jv_object(), "validated", jv_bool(true));
	ev = json_set(ev, "command", jv_string(im->test_cmd));
	ev = json_set(ev, "exit_status", jv_number(0));
	ev = json_set(ev, "skipped", jv_bool(true));
	ev = json_set(ev, "reason", jv_string(why));
	ev = json_set(ev, "tree", jv_string(now));
	ev = json_set(ev, "tool_call", jv_number(im->tested_call));
	phase_emit(im->ph, "validation.completed", ev);
	phase_progress(im->ph, "validation skipped: %s", why);
	jv_free(im->validation);
	im->validation = v;
	im->validated = true;
	free(now);
	forget_tested(im);
	return true;
}

/* "The build failed: …" for the model, from the last validation. */
static char *validation_lead(struct impl *im, const char *intro)
{
	struct buf b = BUF_INIT;
	const char *cmd = json_get_str(im->validation, "command");
	const char *out = json_get_str(im->validation, "output");

	buf_addf(&b, "# %s\n\n`%s` exited with status %.0f. Its output (the end):\n\n```\n%s\n```\n",
		 intro, cmd ? cmd : "(none)", json_get_num(im->validation, "exit_status", -1),
		 out ? out : "");
	return buf_detach(&b, NULL);
}

/* ---- the changes ---------------------------------------------------------- */

/* Set the state's changes from the branch: base_commit..commit, what the
 * commits hold (work a phase that failed could not commit is not in them:
 * a rerun keeps it on a saved ref, recover_worktree()); with `summarise`,
 * the reason says what they are.  Returns whether they are empty. */
static bool set_changes(struct impl *im, bool summarise)
{
	char *patch = NULL, *head = NULL;
	jv files = jv_null();
	jv changes = jv_object();
	const char *base = forge_git_worktree_base(im->wt);
	bool diffed = true;

	if (forge_git_worktree_head(&head, im->wt) < 0)
		head = NULL;
	if ((head ? forge_git_diff_revs(&patch, &files, im->g, base, head)
		  : forge_git_diff(&patch, &files, im->wt, NULL)) < 0) {
		phase_emit(im->ph, "implement.diff_failed", json_set(jv_object(), "error",
			   jv_string(forge_last_error())));
		jv_free(files);
		files = jv_array();
		diffed = false;
	}
	jv tests = jv_array();
	int adds = 0, dels = 0;
	jv_array_foreach(files, i, f) {
		const char *path = json_get_str(f, "path"), *action = json_get_str(f, "action");
		if (path && action && strcmp(action, "delete") != 0 &&
		    (is_test_path(path) || adds_rust_test(patch, path)))
			tests = jv_array_append(tests, jv_string(path));
		adds += (int)json_get_num(f, "additions", 0);
		dels += (int)json_get_num(f, "deletions", 0);
		jv_free(f);
	}
	int nfiles = jv_array_length(jv_copy(files));
	changes = json_set(changes, "files", files);
	size_t plen = patch ? strlen(patch) : 0;
	if (plen > DIFF_MAX) {
		/* Cut between files, not inside a hunk, so the text stays a diff a
		 * reader can parse; the files left out are named at its end (and
		 * forge-review diffs base_commit..commit itself when it can). */
		char *cut = diff_cut(patch, plen, DIFF_MAX);
		jv e = json_set(jv_object(), "bytes", jv_number((double)plen));
		e = json_set(e, "kept_bytes", jv_number((double)strlen(cut)));
		e = json_set(e, "max_bytes", jv_number(DIFF_MAX));
		phase_emit(im->ph, "implement.diff_cut", e);
		changes = json_set(changes, "diff", jv_string(cut));
		free(cut);
	} else {
		changes = json_set(changes, "diff", jv_string(patch ? patch : ""));
	}
	changes = json_set(changes, "commit", json_str_or_null(head));
	changes = json_set(changes, "base_commit", jv_string(base));
	changes = json_set(changes, "tests_added", tests);
	changes = json_set(changes, "validated", jv_bool(im->validated));
	changes = json_set(changes, "validation", jv_copy(im->validation));
	changes = json_set(changes, "attempt", jv_number(im->attempt));
	/* The branch as it started (the agent changed no file -- the task
	 * needed none? -- or its commits undo each other): said, so that
	 * review, test, deploy, forge merge and forge show do not take it for
	 * a change (before: deployed "healthy", and forge merge said it was
	 * "merged outside forge") */
	bool empty = diffed && nfiles == 0;
	if (empty)
		changes = json_set(changes, "empty", jv_true());
	phase_set(im->ph, "changes", changes);
	if (summarise && empty) {
		bool committed = head && strcmp(head, base) != 0;
		jv ev = json_set(jv_object(), "attempt", jv_number(im->attempt));

		ev = json_set(json_set(ev, "commit", json_str_or_null(head)), "base_commit", jv_string(base));
		ev = json_set(ev, "reason", jv_string(committed ? "the attempts' commits change no file"
								: "the agent finished without changing a file"));
		phase_emit(im->ph, "implement.no_change", ev);
		if (committed)
			phase_reason(im->ph, "attempt %d: no change: the commits on %s change no file against its "
				     "base %.12s, %s", im->attempt, forge_git_worktree_branch(im->wt), base,
				     im->validated ? "validated" : "not validated");
		else
			phase_reason(im->ph, "attempt %d: no change: the agent finished without changing a file "
				     "(%s is at its base %.12s), %s", im->attempt, forge_git_worktree_branch(im->wt),
				     base, im->validated ? "validated" : "not validated");
	} else if (summarise) {
		phase_reason(im->ph, "attempt %d: %d file%s changed (+%d -%d) on %s, %s", im->attempt, nfiles,
			     nfiles == 1 ? "" : "s", adds, dels, forge_git_worktree_branch(im->wt),
			     im->validated ? "validated" : "not validated");
	}
	free(patch);
	free(head);
	return empty;
}

/* ---- the runs --------------------------------------------------------------- */

/* The ordinary run: implement, commit, validate; fix rounds on failure. */
static const char *implement(struct impl *im, const char *build_cmd, const char *test_cmd,
			     const char *lead)
{
	const char *status = run_agent(im, lead);
	int rounds = (int)config_get_num(im->ph->cfg, "implement.fix_rounds");
	bool check = config_get_bool(im->ph->cfg, "implement.validate");

	for (int round = 0;; round++) {
		if (state_status_of(status) != STATE_OK)
			return status;
		char tag[32];
		snprintf(tag, sizeof tag, "fix %d", round);
		if (commit(im, round ? tag : NULL) < 0)
			return "failed";
		if (!check)
			return "ok";
		if (tests_passed(im))
			return "ok";
		phase_leave_if_output_gone(im->ph);	/* (the attempt is committed) */
		validate(im, build_cmd, test_cmd);
		if (im->validated || round >= rounds || !json_get_str(im->validation, "command"))
			return "ok";
		char *fix = validation_lead(im, "Self-validation failed: fix this first");
		status = run_agent(im, fix);
		free(fix);
	}
}

/* ---- the TDD guard -------------------------------------------------------- */

/* path of the worktree into b, as the file tools read: beneath the
 * worktree only (a symlink the model put there to a file outside is not
 * followed out).  -1 when it cannot be read so. */
static int read_in_worktree(struct buf *b, struct impl *im, const char *path)
{
	struct sandbox_root *root;
	char *name = buf_path_unquoted(path);   /* (git diff's name: json_path()) */
	int rc;

	if (sandbox_root_open(&root, forge_git_worktree_path(im->wt)) < 0) {
		free(name);
		return -1;
	}
	rc = sandbox_read_file(b, root, name, TDD_TEST_MAX) < 0 ? -1 : 0;
	free(name);
	sandbox_root_free(root);
	return rc;
}

/* The files the red step committed (changed since `before`), {path: content}. */
static jv red_tests(struct impl *im, const char *before)
{
	jv files = jv_null(), out = jv_object();

	if (forge_git_diff(NULL, &files, im->wt, before) < 0) {
		jv_free(files);
		return out;
	}
	jv_array_foreach(files, i, f) {
		const char *path = json_get_str(f, "path"), *action = json_get_str(f, "action");
		struct buf b = BUF_INIT;

		if (path && action && strcmp(action, "delete") && !json_get_bool(f, "binary", false) &&
		    read_in_worktree(&b, im, path) == 0)
			out = json_set(out, path, jv_string_sized(b.buf, (int)b.len));
		buf_release(&b);
		jv_free(f);
		(void)i;
	}
	jv_free(files);
	return out;
}

/* The red tests the worktree no longer holds as committed: [{path, change}]. */
static jv red_tests_changed(struct impl *im, jv red)
{
	jv out = jv_array();

	jv_object_foreach(red, path, content) {
		struct buf b = BUF_INIT;
		const char *change = NULL;

		if (read_in_worktree(&b, im, jv_string_value(path)) < 0)
			change = "deleted";
		else if (b.len != (size_t)jv_string_length_bytes(jv_copy(content)) ||
			 memcmp(b.buf, jv_string_value(content), b.len))
			change = "modified";
		if (change)
			out = jv_array_append(out, json_set(json_set(jv_object(), "path", jv_copy(path)),
							    "change", jv_string(change)));
		buf_release(&b);
		jv_free(path);
		jv_free(content);
	}
	return out;
}

/* Put the red tests back as they were committed; -1 with a message.  As
 * the file tools write (a transaction beneath the worktree): the model
 * may have put a symlink where a test or its directory was, and this
 * process is not confined -- a write through it would land anywhere. */
static int red_tests_restore(struct impl *im, jv red)
{
	struct sandbox_root *root;
	struct sandbox_txn *t;
	int rc;

	if (sandbox_root_open(&root, forge_git_worktree_path(im->wt)) < 0)
		return -1;
	t = sandbox_txn_new(root);
	jv_object_foreach(red, path, content) {
		sandbox_txn_write(t, jv_string_value(path), jv_string_value(content),
				  (size_t)jv_string_length_bytes(jv_copy(content)));
		jv_free(path);
		jv_free(content);
	}
	rc = sandbox_txn_commit(t) < 0 ? forge_error_prefix("cannot restore the red tests") : 0;
	sandbox_txn_free(t);
	sandbox_root_free(root);
	return rc;
}

/* The finding a green attempt that changed the red tests gets. */
static jv tests_changed_finding(jv changed)
{
	struct buf b = BUF_INIT;
	jv first = jv_array_get(jv_copy(changed), 0);

	buf_adds(&b, "the implementation step changed tests the red step committed:");
	jv_array_foreach(changed, i, c) {
		buf_addf(&b, "%s ", i ? "," : "");
		json_path_add_shown(&b, json_get_str(c, "path"));
		buf_addf(&b, " (%s)", json_get_str(c, "change"));
		jv_free(c);
	}
	buf_adds(&b, "; they are restored: make them pass by changing the implementation, not the tests");
	jv f = json_set(jv_object(), "severity", jv_string("error"));
	f = json_set(f, "category", jv_string("correctness"));
	f = json_set(f, "rule", jv_string("tdd-tests-changed"));
	f = json_set(f, "file", json_get(first, "path"));
	f = json_set(f, "message", jv_string(b.buf));
	jv_free(first);
	buf_release(&b);
	return f;
}

/* The green step: implement until the tests pass, holding the red tests. */
static const char *tdd_green(struct impl *im, const char *build_cmd, const char *test_cmd, jv red,
			     const char *lead)
{
	jv plan = json_get(im->ph->state, "plan");
	bool tests_wrong = json_get_bool(plan, "tests_wrong", false);
	char *next = xstrdup(lead);
	const char *status;

	jv_free(plan);
	for (int tries = 1;; tries++) {
		status = implement(im, build_cmd, test_cmd, next);
		free(next);
		next = NULL;
		if (state_status_of(status) != STATE_OK || tests_wrong)
			break;
		jv changed = red_tests_changed(im, red);
		if (jv_array_length(jv_copy(changed)) == 0) {
			jv_free(changed);
			break;
		}
		jv finding = tests_changed_finding(changed);
		struct buf b = BUF_INIT;

		buf_addf(&b, "# Finding: the tests were changed\n\n%s.\n\n%s", json_get_str(finding, "message"), lead);
		next = buf_detach(&b, NULL);
		phase_emit(im->ph, "tdd.tests_changed", json_set(json_set(json_set(jv_object(),
			"files", changed), "try", jv_number(tries)), "finding", finding));
		if (red_tests_restore(im, red) < 0 || commit(im, "tests restored") < 0) {
			phase_reason(im->ph, "TDD: %s", forge_last_error());
			status = "failed";
			break;
		}
		if (tries >= TDD_GREEN_TRIES) {
			phase_reason(im->ph, "TDD: the implementation changed the tests the red step committed "
				     "(%d times; restored): rejected. If the tests themselves are wrong, replan "
				     "with plan.tests_wrong", tries);
			status = "rejected";
			break;
		}
	}
	free(next);
	return status;
}

/* TDD: tests first, confirmed red, then the implementation until green. */
static const char *tdd(struct impl *im, const char *build_cmd, const char *test_cmd)
{
	static const char red_intro[] =
		"# Test-driven: write the tests first\n\n"
		"This run is test-driven. Write ONLY the tests for the plan now, where the project keeps "
		"its tests: tests that check the new or changed behaviour and therefore FAIL on the "
		"current code. Do not implement the change yet. Call `finish` when the tests are written; "
		"Forge then runs them to confirm they fail.";
	const char *status;
	char *lead = xstrdup(red_intro), *before = NULL;

	if (!test_cmd) {
		free(lead);
		phase_emit(im->ph, "tdd.red", json_set(json_set(jv_object(), "confirmed", jv_bool(false)),
			   "reason", jv_string("no test command configured or detected")));
		phase_reason(im->ph, "TDD needs a test command: set tools.test_command");
		return "rejected";
	}
	if (forge_git_worktree_head(&before, im->wt) < 0)
		before = NULL;	/* then the red tests are the changes since the run's base */
	for (int tries = 1;; tries++) {
		status = run_agent(im, lead);
		free(lead);
		lead = NULL;
		if (state_status_of(status) != STATE_OK) {
			free(before);
			return status;
		}
		jv step;
		int rc = run_step(&step, im, "test", test_cmd);
		if (rc < 0) {
			phase_reason(im->ph, "TDD: cannot run `%s`: %s", test_cmd, json_get_str(step, "output"));
			jv_free(step);
			free(before);
			return "failed";
		}
		jv ev = jv_object();
		ev = json_set(ev, "command", jv_string(test_cmd));
		ev = json_set(ev, "exit_status", json_get(step, "exit_status"));
		ev = json_set(ev, "failing", jv_bool(rc != 0));
		ev = json_set(ev, "try", jv_number(tries));
		jv_free(im->validation);
		im->validation = step;
		if (rc != 0) {
			phase_emit(im->ph, "tdd.red", json_set(ev, "confirmed", jv_bool(true)));
			break;
		}
		phase_emit(im->ph, "tdd.red", json_set(ev, "confirmed", jv_bool(false)));
		if (tries >= TDD_RED_TRIES) {
			phase_reason(im->ph, "TDD: the new tests pass before any implementation (`%s` exited 0 "
				     "%d times); they do not test the change", test_cmd, tries);
			free(before);
			if (commit(im, "tests") < 0)
				return "failed";
			return "rejected";
		}
		struct buf b = BUF_INIT;
		char *why = validation_lead(im, "The tests pass already: they must fail first");
		buf_addf(&b, "%s\nThe tests you wrote pass on the current code, so they do not test the "
			     "change yet. Write tests that fail until the plan is implemented, without "
			     "implementing it, then call `finish`.\n\n%s", why, red_intro);
		free(why);
		lead = buf_detach(&b, NULL);
	}
	if (commit(im, "tests") < 0) {
		free(before);
		return "failed";
	}
	jv held = red_tests(im, before);
	free(before);
	char *red = validation_lead(im, "Test-driven: now implement until the tests pass");
	struct buf b = BUF_INIT;
	buf_addf(&b, "%s\nThe tests written for this plan are committed and fail as they should (output "
		     "above). Now implement the plan until they pass. Do not weaken or delete the tests.",
		 red);
	free(red);
	status = tdd_green(im, build_cmd, test_cmd, held, b.buf);
	buf_release(&b);
	jv_free(held);
	if (state_status_of(status) == STATE_OK) {
		if (!config_get_bool(im->ph->cfg, "implement.validate")) {
			/* green is checked even when self-validation is off */
			jv step;
			int rc = run_step(&step, im, "test", test_cmd);
			jv_free(im->validation);
			im->validation = step;
			im->validated = rc == 0;
		}
		jv ev = jv_object();
		ev = json_set(ev, "command", jv_string(test_cmd));
		ev = json_set(ev, "exit_status", json_get(im->validation, "exit_status"));
		ev = json_set(ev, "passing", jv_bool(im->validated));
		phase_emit(im->ph, "tdd.green", ev);
	}
	return status;
}

/* ---- the phase ------------------------------------------------------------ */

static const char *guard(struct phase *ph)
{
	jv plan = json_get(ph->state, "plan");
	bool ok = jv_get_kind(plan) == JV_KIND_OBJECT;

	jv_free(plan);
	return ok ? NULL : "no plan in the state: forge-implement needs a plan (pipe forge-plan's output)";
}

/*
 * With git.push_remote set, run alone (forge-supervisor pushes at each
 * checkpoint itself): push the run's branch, so that the next phase can run
 * in another clone (a later CI job).  A push that fails is a warning, as in
 * forge-supervisor: the commits are here and the phase's result stands.
 */
static void share_branch(struct impl *im)
{
	const char *remote = config_get_str(im->ph->cfg, "git.push_remote");
	const char *sup = getenv("FORGE_SUPERVISOR_PID");
	jv ev;

	if (!remote || !*remote || (sup && *sup) || !im->wt)
		return;
	if (runshare_push(&ev, forge_git_root(im->g), remote, forge_git_worktree_trace(im->wt)) == 0) {
		phase_emit(im->ph, "run.pushed", ev);
		return;
	}
	if (im->ph->common.verbosity >= 0)
		phase_say(im->ph, "warning: cannot push the run's branch to '%s': %s",   /* (the remote's words) */
			  json_get_str(ev, "remote"), json_get_str(ev, "error"));
	phase_emit(im->ph, "run.push_failed", ev);
}

/*
 * A reopened worktree that is not at the state's commit (changes.commit,
 * else the task's base), or has changes: an earlier forge-implement of
 * this state was interrupted or killed mid-edit.  What it left is kept on
 * refs/forge/TRACE/saved/N and the worktree reset, as `forge resume`
 * does, so that this run starts from the state and not from half an edit.
 * task: borrowed.  0, or -1 with a message when that save failed: the
 * phase must not go on from what was left (it would commit it).
 */
static int recover_worktree(struct impl *im, jv task)
{
	jv changes = json_get(im->ph->state, "changes");
	const char *commit = json_get_str(changes, "commit");
	char *saved = NULL;
	int rc;

	if (!commit)
		commit = json_get_str(task, "base_commit");
	if (!commit)
		commit = forge_git_worktree_base(im->wt);
	/* what a validation cut short made is no work to keep (run_step) */
	if (phase_command_recover(im->ph, forge_git_worktree_path(im->wt)) < 0) {
		jv_free(changes);
		return forge_error_prefix("cannot remove what a stopped command left in the run's worktree");
	}
	rc = forge_git_save_and_reset(&saved, im->wt, commit);
	if (rc < 0)
		forge_error_prefix("cannot save the run's worktree before the phase starts again (the worktree "
				   "was left as it is)");
	if (rc == 0 && saved) {
		phase_emit(im->ph, "worktree.recovered", json_set(json_set(jv_object(), "saved_ref", jv_string(saved)),
								   "reset_to", jv_string(commit)));
		if (im->ph->common.verbosity >= 0)
			fprintf(stderr, "forge-implement: the run's worktree had changes its state does not have "
					"(an earlier run of the phase was stopped?): kept on %s; starting again from "
					"%.12s\n", saved, commit);
	}
	free(saved);
	jv_free(changes);
	return rc < 0 ? -1 : 0;
}

/* What the worktree made here lacks (submodules, filter drivers: git.h,
 * forge_git_worktree_limits): a warning line each (unless -q) and a
 * worktree.limits event, as forge run says it when it makes the worktree
 * (a run's is made by the supervisor, and reopened here). */
static void warn_limits(struct impl *im)
{
	jv notes;

	forge_git_worktree_limits(&notes, im->wt);
	if (jv_array_length(jv_copy(notes)) == 0) {
		jv_free(notes);
		return;
	}
	jv_array_foreach(notes, i, n) {
		if (im->ph->common.verbosity >= 0)
			fprintf(stderr, "forge-implement: warning: %s\n", jv_string_value(n));
		jv_free(n);
	}
	phase_emit(im->ph, "worktree.limits", json_set(jv_object(), "notes", notes));
}

/* Open (or reopen) the run's worktree and record it in the state's task.
 * 0, -1 with a message, or 1 with a message when its base cannot be
 * worked from (forge_git_base_check: no commits yet, files in the checkout,
 * a branch named "forge") or the repository cannot hold it (FORGE_GIT_SETUP:
 * .forge is a file, the repository's path is too long) or be opened
 * (another user's, a format libgit2 cannot open). */
static int open_worktree(struct impl *im, const char *root)
{
	struct phase *ph = im->ph;
	jv task = json_get(ph->state, "task");
	const char *trace = json_get_str(ph->state, "trace_id");
	const char *base = json_get_str(task, "base_ref");
	int rc = -1;

	if ((rc = forge_git_open(&im->g, root)) < 0) {
		/* another user's, a format libgit2 cannot open: theirs to change */
		rc = rc < -1 ? 1 : -1;
		goto out;
	}
	/* A new worktree only: one already made has its base. */
	int usable = json_get_str(task, "worktree") ? 0 : forge_git_base_check(im->g, base, trace);
	if (usable != 0) {
		rc = usable;
		goto out;
	}
	if ((rc = forge_git_worktree_open(&im->wt, im->g, trace, base)) < 0) {
		/* the repository as the person set it up: theirs to change */
		rc = rc == FORGE_GIT_SETUP ? 1 : -1;
		goto out;
	}
	/* the repository and its worktree name one clone (--repo may be another
	 * than the state's task.repo: a CI job's own) */
	task = json_set(task, "repo", jv_string(forge_git_root(im->g)));
	task = json_set(task, "worktree", jv_string(forge_git_worktree_path(im->wt)));
	task = json_set(task, "branch", jv_string(forge_git_worktree_branch(im->wt)));
	phase_set(ph, "task", jv_copy(task));
	phase_note_left(ph);	/* (run by hand, a Ctrl-C names them: no run holds them) */
	jv ev = jv_object();
	ev = json_set(ev, "path", jv_string(forge_git_worktree_path(im->wt)));
	ev = json_set(ev, "branch", jv_string(forge_git_worktree_branch(im->wt)));
	ev = json_set(ev, "base_commit", jv_string(forge_git_worktree_base(im->wt)));
	ev = json_set(ev, "reopened", jv_bool(forge_git_worktree_reopened(im->wt)));
	phase_emit(ph, "worktree.opened", ev);
	if (forge_git_worktree_reopened(im->wt)) {
		if ((rc = recover_worktree(im, task)) < 0)
			goto out;
	} else {
		warn_limits(im);
	}
	rc = 0;
out:
	jv_free(task);
	return rc;
}

static const char *implement_run(struct phase *ph)
{
	struct options *opt = ph->payload;
	struct impl im = { .ph = ph, .validation = jv_null(), .tested = jv_null() };
	char *root = phase_repo(ph), *build_cmd = NULL, *test_cmd = NULL;
	const char *status = "failed";
	jv task = json_get(ph->state, "task");
	const char *desc = json_get_str(task, "description");

	im.attempt = phase_previous_runs(ph) + 1;
	im.summary = first_line(desc ? desc : "changes", 60);
	jv_free(task);
	if (!root) {
		phase_reason(ph, "no repository: run in a git repository or pass --repo");
		goto out;
	}
	int opened = open_worktree(&im, root);
	if (opened > 0) {
		/* what the user gave cannot be worked from: exit 2, before any model call */
		phase_reason(ph, "%s", forge_last_error());
		status = "bad_input";
		goto out;
	}
	if (opened < 0 || sandbox_policy_from_config(&im.policy, ph->cfg) < 0 ||
	    phase_system_prompt(&im.system, ph, root, "implement") < 0) {
		phase_reason(ph, "%s", forge_last_error());
		goto out;
	}
	if (tmpdir_make(&im.tmp, "forge-implement") < 0) {
		phase_reason(ph, "%s", forge_last_error());
		goto out;
	}
	im.ctx.root = forge_git_worktree_path(im.wt);
	im.ctx.tmp_dir = im.tmp;
	im.ctx.policy = im.policy;
	build_cmd = project_command(im.ctx.root, ph->cfg, "build");
	test_cmd = project_command(im.ctx.root, ph->cfg, "test");
	im.test_cmd = config_get_bool(ph->cfg, "implement.validate") ? test_cmd : NULL;
	im.build_cmd = im.test_cmd ? build_cmd : NULL;
	build_context(&im, build_cmd, test_cmd);
	phase_progress(ph, "attempt %d in %s", im.attempt, im.ctx.root);

	bool use_tdd = opt->tdd || config_get_bool(ph->cfg, "implement.tdd");
	status = use_tdd ? tdd(&im, build_cmd, test_cmd) : implement(&im, build_cmd, test_cmd, NULL);
	/* A phase that waits for a human keeps its work as a commit: the
	 * answer's run goes on from it (a dirty reopened worktree is an
	 * interrupted run's, reset by recover_worktree()), and an approval
	 * that takes this result gives review a commit holding its diff. */
	if (state_status_of(status) == STATE_ESCALATED && commit(&im, "before a human's answer") < 0)
		status = "failed";
	/* (a breaker's stop commits nothing: a resume starts the phase again
	 * from its base, the work left is kept on a saved ref when the
	 * worktree is opened again, and `changes` says what is committed) */
	bool empty = set_changes(&im, state_status_of(status) == STATE_OK);
	if (state_status_of(status) == STATE_OK && !im.validated && config_get_bool(ph->cfg, "implement.validate")) {
		const char *cmd = json_get_str(im.validation, "command");
		size_t n = strlen(ph->reason);
		snprintf(ph->reason + n, sizeof ph->reason - n, " (%s%s%s)", cmd ? "`" : "",
			 cmd ? cmd : "no build or test command", cmd ? "` failed" : "");
		/* run by hand: which command, its status, its output's end
		 * (before: nothing on stderr; the state alone said it) */
		if (ph->report)
			human_validation(stderr, ph->spec->program, im.validation, human_colour(stderr));
	}
	if (im.commits == 0 && !empty && state_status_of(status) == STATE_OK) {
		size_t n = strlen(ph->reason);
		snprintf(ph->reason + n, sizeof ph->reason - n, "; nothing new to commit");
	}
	phase_progress(ph, "%s", ph->reason);
	share_branch(&im);
out:
	jv_free(im.validation);
	forget_tested(&im);
	forget_built(&im);
	tmpdir_remove(im.tmp);
	free(im.system);
	free(im.context);
	free(im.summary);
	free(build_cmd);
	free(test_cmd);
	sandbox_policy_free(im.policy);
	forge_git_worktree_free(im.wt);
	forge_git_free(im.g);
	free(root);
	return status;
}

static int on_option(struct phase *ph, int id, const char *arg)
{
	struct options *opt = ph->payload;

	(void)arg;
	if (id == OPT_TDD) {
		opt->tdd = true;
		return 0;
	}
	return forge_error("unknown option");
}

static const struct cli_option options[] = {
	{ "tdd", 0, NULL, "test-driven: tests first (confirmed failing), then the implementation", OPT_TDD },
	{ NULL, 0, NULL, NULL, 0 },
};

static const struct phase_spec spec = {
	.name = "implement",
	.program = "forge-implement",
	.synopsis = "[OPTIONS] [--tdd] < state-with-plan",
	.description = "Carry out the state's plan in the run's own git worktree (branch forge/TRACE; "
		       "the checkout is never touched), commit each attempt, and validate it with the "
		       "project's real build and test commands (not a second time when the agent's last "
		       "successful command ran the test command on the same tree: validation.skipped "
		       "says so). On a bounce the review's findings or "
		       "the fixable test failures come first in the prompt. Output: the events, then "
		       "the state with `changes`.",
	.extra_help = "Exit status: 0 implemented, 1 no plan in the input (skipped) or TDD tests that "
		      "do not fail, 2 bad input, 3 breaker, 4 human needed, 5 model or git failed.\n\n"
		      "Example:\n  forge-plan --task 'add a mul operation' | forge-implement | forge-review\n",
	.options = options,
	.on_option = on_option,
	.needs_input = true,
	.needs_repo = true,
	.model_options = true,
	.guard = guard,
	.lease = true,
	.run = implement_run,
};

int main(int argc, char **argv)
{
	struct options opt = { 0 };

	return phase_main(&spec, argc, argv, &opt);
}
