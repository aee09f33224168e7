/*
 * forge-review - the review phase (DESIGN.md §3): changes, or any unified
 * diff, → review {findings, risk, decision}.
 *
 *   git diff main | forge-review                 a diff on stdin
 *   forge-review --base main --no-input          what the branch changed since main
 *   forge-review --commit HEAD --sarif out.sarif one commit, SARIF for code scanning
 *                                                (--no-input when stdin is not a terminal)
 *   forge-implement … | forge-review             the state's changes
 *
 * Layers: 1 static (configured lint command, else the installed linters for
 * the diff's languages), 2 security (secrets, insecure patterns, flawfinder/
 * bandit), 3 AI (one structured model call, only when the risk reaches
 * review.ai_min_risk).  Synthesis dedupes, scores the risk and decides:
 * approve (exit 0), request_changes (1), require_human (4).
 */
#include "git/diff.h"
#include "core/buf.h"
#include "data/config.h"
#include "engine/pipeline.h"
#include "core/forge.h"
#include "git/git.h"
#include "core/json.h"
#include "core/secret.h"
#include "core/tokens.h"
#include "llm/llm.h"
#include "memory/memory.h"
#include "app/human.h"
#include "app/phase.h"
#include "app/term.h"
#include "os/proc.h"
#include "review/github.h"
#include "review/review.h"
#include "review/sarif.h"
#include "store/findings.h"
#include "store/store.h"
#include "data/stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_BASE = 256, OPT_COMMIT, OPT_SARIF, OPT_PR, OPT_DRY_RUN };

struct review_args {
	char *raw;                      /* a diff from stdin (validated) */
	const char *base, *commit, *sarif;
	int pr;                         /* --pr N (0: none) */
	bool dry_run;
	struct github gh;               /* --pr: the API client (open when gh.api) */
	char *pr_head;                  /* --pr: the head commit */
	jv skipped;                     /* run(): the files review_prepare skipped, [{path, reason}] */
	char *unreadable;               /* diff_source(): why the change's files cannot be read here */
	char why[768];                  /* the guard's reason */
};

static const struct cli_option options[] = {
	{ "base", 0, "REF", "review what the working tree changed since it branched from REF: the diff "
	  "from the merge base of REF and HEAD, uncommitted changes included (git diff REF...HEAD, as a "
	  "pull request shows it)", OPT_BASE },
	{ "commit", 0, "SHA", "review one commit (against its first parent)", OPT_COMMIT },
	{ "sarif", 0, "FILE", "also write the findings as SARIF 2.1.0 to FILE", OPT_SARIF },
	{ "pr", 0, "N", "review GitHub pull request N and post the result as one PR review", OPT_PR },
	{ "dry-run", 0, NULL, "with --pr: print the requests that would post the review; send no write request", OPT_DRY_RUN },
	{ NULL, 0, NULL, NULL, 0 },
};

static struct phase_spec spec;

static int on_option(struct phase *ph, int id, const char *arg)
{
	struct review_args *a = ph->payload;

	switch (id) {
	case OPT_BASE:
		a->base = arg;
		spec.needs_input = false;	/* the repository is the input */
		return 0;
	case OPT_COMMIT:
		a->commit = arg;
		spec.needs_input = false;
		return 0;
	case OPT_SARIF:
		a->sarif = arg;
		return 0;
	case OPT_PR: {
		char *end = NULL;
		errno = 0;
		long n = strtol(arg, &end, 10);
		if (errno || !end || *end || n <= 0 || n > 1000000000)
			return forge_error("--pr wants a pull request number, not '%s'", arg);
		a->pr = (int)n;
		spec.needs_input = false;
		return 0;
	}
	case OPT_DRY_RUN:
		a->dry_run = true;
		return 0;
	}
	return forge_error("unknown option");
}

/* Claim a unified diff on stdin; anything else that is not JSON is bad input. */
static int raw_hook(const char *text, size_t len, void *payload)
{
	struct review_args *a = payload;
	struct diff *d = NULL;

	if (!diff_looks_like(text, len)) {
		/* git diff --color=always, or color.ui=always in a pipe */
		if (memmem(text, len, "\033[", 2))
			return forge_error("not a unified diff: it has terminal colour codes (ESC[…m); "
					   "make it with `git diff --no-color`");
		return forge_error("not a unified diff (forge-review reads a diff, a state or {\"task\": …})");
	}
	int rc = diff_parse(&d, text, len);
	if (rc < 0)	/* -2: well formed, but no one change (diff.h) */
		return forge_error_prefix(rc == -2 ? "cannot review this diff" : "malformed diff");
	diff_free(d);
	a->raw = xstrndup(text, len);
	return 1;
}

static jv changes_of(struct phase *ph)
{
	return json_get(ph->state, "changes");
}

static const char *guard(struct phase *ph)
{
	struct review_args *a = ph->payload;
	jv ch = changes_of(ph);
	bool own = a->raw || a->base || a->commit || a->pr;   /* not the state's changes */
	bool ok = own || json_get_str(ch, "diff") || (json_get_str(ch, "commit") && json_get_str(ch, "base_commit"));
	char why[512];

	jv_free(ch);
	if (!ok)
		return "no changes to review: pipe a unified diff or a state with changes, "
		       "or use --base REF / --commit SHA";
	/* an implement that failed may have committed a change that does not
	 * build: reviewing (and approving) it would send it on to deploy */
	if (!own && phase_input_unfinished(ph, why, sizeof why)) {
		snprintf(a->why, sizeof a->why, "%s: nothing to review; run that phase again first", why);
		return a->why;
	}
	return NULL;
}

/* The line on stderr for a file not linted: its name (the model's, maybe
 * with escape sequences) without control characters (term.h). */
static void skipped_warning(struct phase *ph, const char *file, const char *reason)
{
	char *shown = xstrdup(file ? file : "");

	term_clean(shown, strlen(shown));
	fprintf(stderr, "%s: warning: %s was not linted or scanned: %s (review it with --commit, or "
		"a diff of the working tree)\n", ph->spec->program, shown, reason ? reason : "");
	free(shown);
}

static void emit_cb(void *payload, const char *type, jv data)
{
	struct phase *ph = payload;
	struct review_args *a = ph->payload;

	/* a file the linters and scanners never saw is said where a person
	 * looks, not in an event alone (before: the review approved and said
	 * nothing, e.g. for a diff of an older commit piped in); run() puts
	 * it in not_reviewed */
	if (strcmp(type, "review.file_skipped") == 0) {
		a->skipped = jv_array_append(a->skipped, jv_copy(data));
		if (ph->common.verbosity >= 0)
			skipped_warning(ph, json_get_str(data, "file"), json_get_str(data, "reason"));
	}
	phase_emit(ph, type, data);
}

static bool is_dir(const char *p)
{
	struct stat st;

	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The options of every diff this reads, whatever the user's and the
 * repository's git config say (diff.context, diff.interHunkContext,
 * diff.renames, diff.algorithm, diff.relative, diff.noprefix, ...): the
 * hunks GitHub shows for a pull request, so an inline comment lands on a
 * line its diff has (before: diff.context=10 put one 7 lines off, GitHub
 * answered 422 and the whole review was lost, hunt37 #1). */
#define DIFF_OPTS "--no-color", "--no-ext-diff", "--no-textconv", "-U3", "--inter-hunk-context=0", "-M", \
		  "--diff-algorithm=myers", "--indent-heuristic", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/"

/* Run git in root; *out its stdout.  -1 with git's message.  The
 * repository may be a run's worktree, whose files a model wrote: git runs
 * as forge_git_guard says (callers pass --no-textconv and --no-ext-diff). */
static int git_out(char **out, const char *root, const char *const *args)
{
	char *git = review_which("git");
	const char *argv[24];
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char **env = NULL;
	size_t n = 0;
	int rc = -1;

	*out = NULL;
	if (!git)
		return forge_error("'git' is not installed");
	argv[n++] = git;
	for (const char *const *s = forge_git_guard; *s; s++) {
		argv[n++] = "-c";
		argv[n++] = *s;
	}
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	env = llm_environ_scrubbed();
	o.argv = argv;
	o.envp = env;
	o.cwd = root;
	o.timeout_ms = 120000;
	if (proc_run(&r, &o) < 0)
		goto out;
	if (r.exit_code != 0) {
		char *msg = xstrdup(r.err.buf);
		size_t k = strlen(msg);
		while (k && (msg[k - 1] == '\n' || msg[k - 1] == '\r'))
			msg[--k] = '\0';
		forge_error("git %s failed: %s", args[0], *msg ? msg : "unknown error");
		free(msg);
		goto out;
	}
	*out = xstrdup(r.out.buf);
	rc = 0;
out:
	proc_result_release(&r);
	free(env);
	free(git);
	return rc;
}

/* The token from GITHUB_TOKEN, else GH_TOKEN; NULL when neither is set. */
static const char *github_token(void)
{
	const char *t = getenv("GITHUB_TOKEN");

	return t && *t ? t : getenv("GH_TOKEN") && *getenv("GH_TOKEN") ? getenv("GH_TOKEN") : NULL;
}

/* The commit sha, fetching ref from origin into local when it is not in
 * the repository yet.  *out the full SHA. */
static int have_commit(char **out, struct phase *ph, struct forge_git *g, const char *sha,
		       const char *ref, const char *local)
{
	struct buf refspec = BUF_INIT;
	int rc;

	if (forge_git_resolve(out, g, sha) == 0)
		return 0;
	buf_addf(&refspec, "+%s:%s", ref, local);
	phase_progress(ph, "fetching %s from origin", ref);
	rc = forge_git_fetch(g, "origin", refspec.buf);
	if (rc == 0) {
		phase_emit(ph, "review.github.fetched", json_set(json_set(jv_object(), "ref", jv_string(ref)),
								"commit", jv_string(sha)));
		rc = forge_git_resolve(out, g, sha);
		if (rc < 0)
			forge_error("origin's %s does not hold commit %s", ref, sha);
	}
	buf_release(&refspec);
	return rc;
}

/*
 * --pr N: the API client, the pull request's base and head (the head
 * fetched as refs/pull/N/head when absent), and the diff base...head.
 * -2 for bad input (no token, no repository), -1 otherwise.
 */
static int pr_source(char **text, char **commit, struct phase *ph, const char *root)
{
	struct review_args *a = ph->payload;
	const char *token = github_token(), *env_repo = getenv("GITHUB_REPOSITORY");
	struct forge_git *g = NULL;
	char *slug = NULL, *url = NULL, *head = NULL, *base = NULL, *mb = NULL;
	struct buf path = BUF_INIT, ref = BUF_INIT, local = BUF_INIT;
	jv pull = jv_null();
	int rc = -2;

	if (!token) {
		forge_error("--pr needs a GitHub token in GITHUB_TOKEN or GH_TOKEN");
		goto out;
	}
	if (forge_git_open(&g, root) < 0) {
		rc = -1;
		goto out;
	}
	if (env_repo && *env_repo)
		slug = xstrdup(env_repo);
	else if (forge_git_remote_url(&url, g, "origin") < 0 || github_repo_from_url(&slug, url) < 0)
		goto out;
	if (github_open(&a->gh, getenv("GITHUB_API_URL"), slug, token,
			config_get_num(ph->cfg, "review.github.max_wait_s")) < 0)
		goto out;
	rc = -1;
	buf_addf(&path, "/repos/%s/pulls/%d", slug, a->pr);
	phase_progress(ph, "reading pull request #%d of %s", a->pr, slug);
	if (github_call(&pull, NULL, &a->gh, "GET", path.buf, jv_invalid()) < 0)
		goto out;
	jv hs = json_get_path(pull, "head.sha"), bs = json_get_path(pull, "base.sha"),
	   bref = json_get_path(pull, "base.ref");
	if (jv_get_kind(hs) != JV_KIND_STRING || jv_get_kind(bs) != JV_KIND_STRING) {
		forge_error("GitHub GET %s: no head.sha or base.sha in the answer", path.buf);
		jv_free(hs);
		jv_free(bs);
		jv_free(bref);
		goto out;
	}
	buf_addf(&ref, "refs/pull/%d/head", a->pr);
	buf_addf(&local, "refs/forge/pull/%d/head", a->pr);
	int h = have_commit(&head, ph, g, jv_string_value(hs), ref.buf, local.buf);
	buf_reset(&ref);
	buf_reset(&local);
	buf_addf(&ref, "refs/heads/%s", jv_get_kind(bref) == JV_KIND_STRING ? jv_string_value(bref) : "main");
	buf_addf(&local, "refs/forge/pull/%d/base", a->pr);
	int b = h < 0 ? -1 : have_commit(&base, ph, g, jv_string_value(bs), ref.buf, local.buf);
	jv e = json_set(json_set(jv_object(), "number", jv_number(a->pr)), "repository", jv_string(slug));
	e = json_set(json_set(e, "head", hs), "base", bs);
	phase_emit(ph, "review.github.pull", e);
	jv_free(bref);
	if (h < 0 || b < 0 || forge_git_merge_base(&mb, g, base, head) < 0)
		goto out;
	const char *args[] = { "diff", DIFF_OPTS, mb, head, NULL };
	rc = git_out(text, root, args);
	if (rc == 0) {
		*commit = xstrdup(head);
		a->pr_head = xstrdup(head);
	}
out:
	jv_free(pull);
	forge_git_free(g);
	buf_release(&path);
	buf_release(&ref);
	buf_release(&local);
	free(slug);
	free(url);
	free(head);
	free(base);
	free(mb);
	return rc;
}

/* An event for each earlier review that requested changes and was
 * dismissed, and for each GitHub refused to dismiss (403, 422: the token may
 * not dismiss, branch protection) with a warning: the review is posted, the
 * old request for changes stays for a person to dismiss.  Borrows report. */
static void pr_dismissals(struct phase *ph, jv report)
{
	struct review_args *a = ph->payload;
	jv done = json_get(report, "dismissed"), failed = json_get(report, "dismiss_failed");

	jv_array_foreach(done, i, id) {
		jv e = json_set(json_set(jv_object(), "number", jv_number(a->pr)), "review_id", id);
		e = json_set(e, "commit", jv_string(a->pr_head));
		phase_emit(ph, "review.github.dismissed", json_set(e, "dry_run", jv_bool(a->dry_run)));
	}
	jv_array_foreach(failed, i, f) {
		phase_say(ph, "warning: the earlier review %.0f that requested changes is not dismissed: %s",
			  json_get_num(f, "review_id", 0), json_get_str(f, "error"));   /* (GitHub's words) */
		phase_emit(ph, "review.github.dismiss_failed", json_set(f, "number", jv_number(a->pr)));
	}
	jv_free(done);
	jv_free(failed);
}

/* Post the review to the pull request (or, with --dry-run, print what would
 * be posted).  -1 with a message when GitHub refused. */
static int pr_publish(struct phase *ph, jv all, const struct diff *d, const char *decision,
		      const char *verdict)
{
	struct review_args *a = ph->payload;
	struct buf key = BUF_INIT, summary = BUF_INIT;
	struct github_review rv = { .pr = a->pr, .commit = a->pr_head, .findings = all, .diff = d,
				    .dry_run = a->dry_run };
	jv report = jv_null();
	int rc;

	buf_addf(&key, "review.github.event.%s", decision);
	rv.event = config_get_str(ph->cfg, key.buf);
	if (!rv.event)
		rv.event = !strcmp(decision, "request_changes") ? "REQUEST_CHANGES" : "COMMENT";
	buf_addf(&summary, "**%s**: %s", decision, verdict);
	rv.summary = summary.buf;
	phase_progress(ph, "posting the review to pull request #%d", a->pr);
	rc = github_review_publish(&report, &a->gh, &rv);
	if (rc == 0) {
		report = json_set(report, "number", jv_number(a->pr));
		report = json_set(report, "dry_run", jv_bool(a->dry_run));
		report = json_set(report, "rate_limit_waits", jv_number(a->gh.waits));
		if (a->dry_run && ph->common.verbosity >= 0) {
			jv reqs = json_get(report, "requests");
			fprintf(stderr, "%s: --dry-run: would send to %s:\n", ph->spec->program, a->gh.api);
			json_write_pretty(stderr, reqs);
		}
		pr_dismissals(ph, report);
		if (json_get_str(report, "inline_refused") && ph->common.verbosity >= 0)
			phase_say(ph, "warning: GitHub refused the review's inline comments (%s); they are "
				  "listed in the review's summary instead", json_get_str(report, "inline_refused"));
		phase_emit(ph, "review.github.posted", report);
	} else {
		jv_free(report);
	}
	buf_release(&key);
	buf_release(&summary);
	return rc;
}

/* Without a run's worktree: the working tree the person is in, a linked
 * worktree of theirs included (its index and HEAD are what --base and
 * --commit mean there; git/git.h), else the repository. */
static char *checkout_dir(struct phase *ph)
{
	struct forge_git *g = NULL;
	char *dir = forge_git_open(&g, ph->common.repo) == 0 ? xstrdup(forge_git_checkout(g)) : NULL;

	forge_git_free(g);
	return dir ? dir : xstrdup(ph->repo ? ph->repo : ".");
}

/*
 * The state's change as git has it, base_commit..commit in the repository
 * at root (libgit2, as forge-implement made its diff): for a state whose
 * diff text was cut to keep the state line small.  -1 when the repository
 * or either commit is not there.
 */
static int changes_from_git(char **text, const char *root, jv ch)
{
	const char *base = json_get_str(ch, "base_commit"), *head = json_get_str(ch, "commit");
	struct forge_git *g = NULL;
	int rc = -1;

	*text = NULL;
	if (!base || !head)
		return forge_error("the state's changes name no base_commit and commit");
	if (forge_git_open(&g, root) == 0)
		rc = forge_git_diff_revs(text, NULL, g, base, head);
	forge_git_free(g);
	return rc;
}

/*
 * A run's state whose worktree wt is gone: adopt_run() found neither its
 * branch nor its commit here (else it made the worktree again), so the
 * state's text is all there is to review, and the checkout's files are
 * not the change's (hunt25): no root, and a->unreadable says why each
 * file goes unlinted.
 */
static void worktree_gone(char **root, struct phase *ph, const char *wt)
{
	struct review_args *a = ph->payload;
	struct buf why = BUF_INIT;

	free(*root);
	*root = NULL;
	buf_addf(&why, "the run's worktree %s is gone and its commits are not in this repository "
		 "(%s)", wt, ph->repo ? ph->repo : ".");
	free(a->unreadable);
	a->unreadable = buf_detach(&why, NULL);
}

/*
 * --base REF: what to diff the working tree from -- the merge base of REF
 * (resolved: sha) and HEAD, so that the review is of what this branch
 * changed since it left REF, as `git diff REF...HEAD` and a pull request
 * show it (with the working tree's uncommitted changes too).  Diffing
 * from REF itself (before) blamed a branch behind REF for every change
 * merged there after it branched, reversed: the CI gate failed on files
 * the branch never touched.  A HEAD with no commit yet has no history to
 * part from: REF itself.  A review.base event {ref, commit, merge_base}
 * says which.  0, or -2 (bad input) when REF and HEAD share no history
 * (or none a shallow clone holds: the message says to fetch more).
 */
static int base_from(char **out, struct phase *ph, struct forge_git *g, const char *ref, const char *sha)
{
	char *head = NULL;
	jv e = json_set(json_set(jv_object(), "ref", jv_string(ref)), "commit", jv_string(sha));

	*out = NULL;
	if (forge_git_resolve(&head, g, "HEAD") < 0) {
		*out = xstrdup(sha);	/* an unborn HEAD */
		e = json_set(e, "merge_base", jv_null());
	} else if (forge_git_merge_base(out, g, sha, head) < 0) {
		if (forge_git_is_shallow(g))	/* (the CI default: a clone of one commit) */
			forge_error("--base '%s' and HEAD (%.12s) have no common commit in the history of this "
				    "shallow clone: fetch enough of it to reach where the branch left %s (git fetch "
				    "--deepen=N, or --unshallow; in CI: fetch-depth 0, GIT_DEPTH 0)", ref, head, ref);
		else
			forge_error("--base '%s' and HEAD (%.12s) have no history in common: nothing tells what "
				    "this branch changed; give a commit HEAD descends from, or review a diff: git "
				    "diff %s | forge-review", ref, head, ref);
		free(head);
		jv_free(e);
		return -2;
	} else {
		e = json_set(e, "merge_base", jv_string(*out));
	}
	free(head);
	phase_emit(ph, "review.base", e);
	return 0;
}

/* The diff to review, the directory of its post-image and, when the
 * post-image is a commit, that commit; *source says where the diff came
 * from (the review's "source"). */
static int diff_source(char **text, char **root, char **commit, const char **source, struct phase *ph)
{
	struct review_args *a = ph->payload;
	jv task = json_get(ph->state, "task"), ch = changes_of(ph);
	const char *wt = json_get_str(task, "worktree");
	int rc = -1;

	*text = *commit = NULL;
	*root = wt && is_dir(wt) ? xstrdup(wt) : checkout_dir(ph);
	*source = a->pr ? "pull_request" : a->commit ? "commit" : a->base ? "base" : a->raw ? "stdin" : "state";
	if (a->pr) {
		rc = pr_source(text, commit, ph, *root);
		goto out;
	}
	if (a->commit || a->base) {
		struct forge_git *g = NULL;
		char *sha = NULL;

		if (forge_git_open(&g, *root) < 0) {
			/* --base/--commit outside a repository: a usage error,
			 * as --repo naming no repository is */
			forge_git_free(g);
			rc = -2;
			goto out;
		}
		if (forge_git_resolve(&sha, g, a->commit ? a->commit : a->base) < 0) {
			forge_git_free(g);
			rc = -2;	/* a ref that does not resolve is bad input */
			goto out;
		}
		if (a->commit) {
			forge_git_free(g);
			const char *args[] = { "show", "--format=", DIFF_OPTS, "-m", "--first-parent", sha, NULL };
			rc = git_out(text, *root, args);
			*commit = sha;
		} else {
			char *from = NULL;

			rc = base_from(&from, ph, g, a->base, sha);
			forge_git_free(g);
			if (rc == 0) {
				const char *args[] = { "diff", DIFF_OPTS, from, NULL };
				rc = git_out(text, *root, args);
			}
			free(from);
			free(sha);
		}
		goto out;
	}
	if (a->raw) {
		*text = xstrdup(a->raw);
		rc = 0;
		goto out;
	}
	const char *diff = json_get_str(ch, "diff");
	if (diff) {
		if (json_get_str(ch, "commit"))
			*commit = xstrdup(json_get_str(ch, "commit"));
		rc = 0;
		if (wt && !is_dir(wt))
			worktree_gone(root, ph, wt);
		if (!diff_is_cut(diff, strlen(diff))) {
			*text = xstrdup(diff);
			goto out;
		}
		/* The text was cut (a lock file, a generated file): the commits
		 * hold the whole change, so review that when they are here. */
		jv e = json_set(jv_object(), "base_commit", json_get(ch, "base_commit"));
		e = json_set(e, "commit", json_get(ch, "commit"));
		e = json_set(e, "state_bytes", jv_number((double)strlen(diff)));
		if (a->unreadable)
			forge_error("%s", a->unreadable);
		if (!a->unreadable && changes_from_git(text, *root, ch) == 0) {
			*source = "git";
			e = json_set(e, "bytes", jv_number((double)strlen(*text)));
			phase_emit(ph, "review.full_diff", e);
		} else {
			/* no repository here (another machine): the cut text, and
			 * what it left out reported as not reviewed */
			e = json_set(e, "error", jv_string(forge_last_error()));
			phase_emit(ph, "review.full_diff_unavailable", e);
			*text = xstrdup(diff);
		}
		goto out;
	}
	*source = "git";
	const char *args[] = { "diff", DIFF_OPTS, json_get_str(ch, "base_commit"), json_get_str(ch, "commit"),
			       NULL };
	rc = git_out(text, *root, args);
	*commit = xstrdup(json_get_str(ch, "commit"));
out:
	jv_free(task);
	jv_free(ch);
	return rc;
}

/* Texts of the memories of dismissed findings that may concern this diff. */
static jv dismissed_memories(struct phase *ph, const struct diff *d, jv findings)
{
	struct store *st = phase_store(ph);
	struct memory_options opt;
	struct memory *m = NULL;
	struct memory_query q;
	static const char *const tags[] = { "dismissal" };
	struct buf text = BUF_INIT;
	jv hits = jv_null(), out = jv_array();

	if (!st)
		return out;
	memory_options_init(&opt);
	memory_options_from_config(&opt, ph->cfg);
	if (memory_open(&m, st, &opt) < 0)
		goto done;
	buf_adds(&text, "review finding dismissed");
	for (size_t i = 0; i < d->nfiles && i < 50; i++)
		buf_addf(&text, " %s", d->files[i].path);
	jv_array_foreach(findings, i, f) {
		(void)i;
		if (json_get_str(f, "rule"))
			buf_addf(&text, " %s", json_get_str(f, "rule"));
		jv_free(f);
	}
	memory_query_init(&q, text.buf);
	q.filter.tags = tags;
	q.filter.ntags = 1;
	q.filter.limit = (int)config_get_num(ph->cfg, "memory.recall_limit");
	if (memory_recall(&hits, m, &q) == 0) {
		jv_array_foreach(hits, i, h) {
			(void)i;
			jv mem = json_get(h, "memory");
			if (json_get_str(mem, "content"))
				out = jv_array_append(out, jv_string(json_get_str(mem, "content")));
			jv_free(mem);
			jv_free(h);
		}
	} else {
		phase_emit(ph, "memory.unavailable", json_set(jv_object(), "error", jv_string(forge_last_error())));
	}
	jv_free(hits);
done:
	memory_free(m);
	buf_release(&text);
	if (jv_array_length(jv_copy(out)) > 0)
		phase_emit(ph, "memory.recalled", json_set(json_set(jv_object(), "count",
				jv_number(jv_array_length(jv_copy(out)))), "kind", jv_string("dismissed findings")));
	return out;
}

/* Drop the findings a human dismissed before (same rule, file and message):
 * the dismissed ones of every trace (on a shared database, every machine's),
 * not the newest findings, among which an old dismissal would be lost. */
static jv drop_dismissed(struct phase *ph, jv findings)
{
	struct store *st = phase_store(ph);
	jv all = jv_null(), out;

	if (!st || findings_list_dismissed(&all, st, 5000) < 0) {
		jv_free(all);
		return findings;
	}
	out = jv_array();
	jv_array_foreach(findings, i, f) {
		(void)i;
		bool gone = false;

		jv_array_foreach(all, j, old) {
			(void)j;
			if (!gone && json_get_bool(old, "dismissed", false)) {
				const char *keys[] = { "rule", "file", "message" };
				bool same = true;
				for (int k = 0; k < 3; k++) {
					const char *x = json_get_str(f, keys[k]), *y = json_get_str(old, keys[k]);
					same = same && ((!x && !y) || (x && y && strcmp(x, y) == 0));
				}
				gone = same;
			}
			jv_free(old);
		}
		if (gone)
			phase_emit(ph, "finding.suppressed", json_set(jv_copy(f), "reason",
						jv_string("dismissed by a human before")));
		else
			out = jv_array_append(out, jv_copy(f));
		jv_free(f);
	}
	jv_free(findings);
	jv_free(all);
	return out;
}

static jv concat(jv a, jv b)
{
	jv_array_foreach(b, i, x) {
		(void)i;
		a = jv_array_append(a, x);
	}
	jv_free(b);
	return a;
}

static void layer_event(struct phase *ph, const char *layer, jv findings, long long ms)
{
	jv e = json_set(jv_object(), "layer", jv_string(layer));

	e = json_set(e, "findings", jv_number(jv_array_length(jv_copy(findings))));
	e = json_set(e, "duration_ms", jv_number((double)ms));
	phase_emit(ph, "review.layer", e);
	jv_free(findings);
}

/*
 * The static and security tools that would have run but are not installed
 * (ctx->missing, borrowed): one review.tools_missing event
 * {"tools":["ruff",…],"missing":[{"tool","layer","language"},…]} and one
 * line on stderr (unless -q) naming them by language.  Nothing when none is.
 */
static void tools_missing(struct phase *ph, const struct review_ctx *ctx)
{
	jv tools = jv_array(), langs = jv_array();
	struct buf line = BUF_INIT;

	if (jv_get_kind(ctx->missing) != JV_KIND_ARRAY || jv_array_length(jv_copy(ctx->missing)) == 0)
		goto out;
	jv_array_foreach(ctx->missing, i, m) {
		(void)i;
		jv lang = json_get(m, "language");
		bool seen = false;
		tools = jv_array_append(tools, json_get(m, "tool"));
		jv_array_foreach(langs, k, l) {
			(void)k;
			seen = seen || json_equal(l, lang);
			jv_free(l);
		}
		if (!seen && jv_get_kind(lang) == JV_KIND_STRING)
			langs = jv_array_append(langs, jv_copy(lang));
		jv_free(lang);
		jv_free(m);
	}
	/* "cppcheck, clang-tidy (c); ruff, flake8, bandit (python)" */
	jv_array_foreach(langs, i, lang) {
		int n = 0;
		jv_array_foreach(ctx->missing, j, m) {
			(void)j;
			const char *l = json_get_str(m, "language");
			if (l && !strcmp(l, jv_string_value(lang)))
				buf_addf(&line, "%s%s", n++ ? ", " : i ? "; " : "", json_get_str(m, "tool"));
			jv_free(m);
		}
		buf_addf(&line, " (%s)", jv_string_value(lang));
		jv_free(lang);
	}
	phase_emit(ph, "review.tools_missing", json_set(json_set(jv_object(), "tools", jv_copy(tools)),
							"missing", jv_copy(ctx->missing)));
	if (ph->common.verbosity >= 0)
		fprintf(stderr, "%s: warning: not installed, so not run: %s\n", ph->spec->program, line.buf);
out:
	jv_free(tools);
	jv_free(langs);
	buf_release(&line);
}

/*
 * What a cut diff did not show: a warning finding (forge/not-reviewed) for
 * each file it left out or showed only in part, and one for the files it
 * left out without naming them, so a reviewer never passes over them in
 * silence; *list the review's not_reviewed [{path, bytes} | {path, part:
 * true} | {more: N}], and a line on stderr (unless -q).  An empty array
 * when the diff was whole.
 */
/* Whether path names a file of text by its name: source, scripts, build
 * and configuration files (never an image, an archive, a font). */
static bool text_by_name(const char *path)
{
	static const char *const exts[] = {
		"c", "h", "cc", "cpp", "cxx", "hh", "hpp", "py", "js", "mjs", "cjs", "ts", "tsx", "jsx",
		"go", "rs", "java", "kt", "kts", "scala", "rb", "php", "pl", "pm", "sh", "bash", "zsh",
		"cs", "swift", "m", "mm", "lua", "sql", "r", "ex", "exs", "erl", "hs", "ml", "clj",
		"json", "yaml", "yml", "toml", "ini", "cfg", "conf", "xml", "html", "htm", "css", "scss",
		"md", "txt", "rst", "mk", "cmake", "gradle", "tf", "nix", "vue", "svelte", "dart", NULL,
	};
	static const char *const names[] = {
		"Makefile", "GNUmakefile", "Dockerfile", "Containerfile", "Jenkinsfile", "Rakefile",
		"Gemfile", "CMakeLists.txt", "BUILD", "WORKSPACE", NULL,
	};
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	for (size_t i = 0; names[i]; i++)
		if (!strcmp(base, names[i]))
			return true;
	dot = strrchr(base, '.');
	for (size_t i = 0; dot && exts[i]; i++)
		if (!strcasecmp(dot + 1, exts[i]))
			return true;
	return false;
}

/* A forge/not-reviewed warning for each file review_prepare skipped
 * (skipped: [{file, reason}], consumed), each also appended to *list as
 * {path, reason}: a file no linter or scanner saw is in the review itself,
 * not only on stderr (before: a name git quotes with \v was "not in" the
 * commit, and not_reviewed stayed empty, hunt27 #5). */
static jv skipped_files(jv *list, jv skipped)
{
	jv out = jv_array();
	struct buf msg = BUF_INIT;

	jv_array_foreach(skipped, i, s) {
		const char *file = json_get_str(s, "file"), *reason = json_get_str(s, "reason");

		(void)i;
		buf_reset(&msg);
		buf_addf(&msg, "not linted or scanned: %s; only the diff's lines were searched for "
			 "secrets, review the file yourself", reason ? reason : "skipped");
		out = jv_array_append(out, review_finding("static", "warning", "correctness", "forge/not-reviewed",
							  file, 0, msg.buf));
		*list = jv_array_append(*list, json_set(json_set(jv_object(), "path", json_str_or_null(file)),
							"reason", json_str_or_null(reason)));
		jv_free(s);
	}
	jv_free(skipped);
	buf_release(&msg);
	return out;
}

static jv not_reviewed(jv *list, struct phase *ph, const struct diff *d)
{
	jv out = jv_array();
	struct buf msg = BUF_INIT;
	size_t n = 0;

	*list = jv_array();
	/* A file of text that git reads as binary (one NUL byte does it) was
	 * seen by no layer: said as an error, not passed over as an image
	 * would be (before: approve, 0 findings, for a backdoor so hidden) */
	for (size_t i = 0; i < d->nfiles; i++) {
		const struct diff_file *f = &d->files[i];

		if (!f->binary || f->deleted || !text_by_name(f->path))
			continue;
		out = jv_array_append(out, review_finding("static", "error", "security", "forge/not-reviewed",
							  f->path, 0, "not reviewed: git reads this file of text as "
							  "binary (a NUL byte in it?), so no layer saw its content; "
							  "look at it yourself (git diff --text) or remove what makes "
							  "it binary"));
		*list = jv_array_append(*list, json_set(json_set(jv_object(), "path", jv_string(f->path)),
							"binary", jv_true()));
	}
	if (!d->cut)
		return out;
	for (size_t i = 0; i < d->nomitted; i++, n++) {
		buf_reset(&msg);
		buf_addf(&msg, "not reviewed: the diff was cut to keep the state small and this file's part "
			 "(%zu bytes) was left out; review the commits themselves (forge-review --commit, or "
			 "in the run's repository)", d->omitted[i].bytes);
		out = jv_array_append(out, review_finding("static", "warning", "correctness", "forge/not-reviewed",
							  d->omitted[i].path, 0, msg.buf));
		*list = jv_array_append(*list, json_set(json_set(jv_object(), "path", jv_string(d->omitted[i].path)),
							"bytes", jv_number((double)d->omitted[i].bytes)));
	}
	for (size_t i = 0; i < d->nfiles; i++) {
		if (!d->files[i].cut)
			continue;
		out = jv_array_append(out, review_finding("static", "warning", "correctness", "forge/not-reviewed",
							  d->files[i].path, 0,
							  "reviewed only in part: the diff was cut inside this file"));
		*list = jv_array_append(*list, json_set(json_set(jv_object(), "path", jv_string(d->files[i].path)),
							"part", jv_true()));
		n++;
	}
	if (d->omitted_total > d->nomitted) {
		size_t more = d->omitted_total - d->nomitted;
		buf_reset(&msg);
		buf_addf(&msg, "%zu more file%s not reviewed: the diff was cut before them and does not name them "
			 "(the state's changes.files lists every file)", more, more == 1 ? "" : "s");
		out = jv_array_append(out, review_finding("static", "warning", "correctness", "forge/not-reviewed",
							  NULL, 0, msg.buf));
		*list = jv_array_append(*list, json_set(jv_object(), "more", jv_number((double)more)));
		n += more;
	}
	if (n == 0) {
		/* a cut that names nothing (an older one between hunks) */
		out = jv_array_append(out, review_finding("static", "warning", "correctness", "forge/not-reviewed",
							  NULL, 0, "the diff was cut: what came after the cut was not reviewed"));
		*list = jv_array_append(*list, json_set(jv_object(), "more", jv_null()));
	}
	if (ph->common.verbosity >= 0) {
		if (n)
			fprintf(stderr, "%s: warning: the diff was cut: %zu file%s not reviewed (see the not-reviewed findings)\n",
				ph->spec->program, n, n == 1 ? "" : "s");
		else
			fprintf(stderr, "%s: warning: the diff was cut: what came after the cut was not reviewed\n",
				ph->spec->program);
	}
	buf_release(&msg);
	return out;
}

/* The files the model was not shown, its window being too small for them
 * (consumes not_shown): an event and a line on stderr.  The other layers
 * saw them; the model's silence on them is not an approval. */
static void ai_not_shown(struct phase *ph, jv not_shown, long budget)
{
	int n = jv_get_kind(not_shown) == JV_KIND_ARRAY ? jv_array_length(jv_copy(not_shown)) : 0;

	if (n > 0) {
		if (ph->common.verbosity >= 0)
			fprintf(stderr, "%s: warning: the AI review did not see %d file%s (too large for the "
					"model's context window: %ld tokens for the diff); the other layers did\n",
				ph->spec->program, n, n == 1 ? "" : "s", budget);
		phase_emit(ph, "review.ai_not_shown", json_set(json_set(jv_object(), "files", jv_copy(not_shown)),
							       "diff_tokens", jv_number((double)budget)));
	}
	jv_free(not_shown);
}

struct ai_call {
	struct phase *ph;
	const struct llm_client *llm;
};

/* Each billed call of the AI review has its llm.called. */
static void ai_called(void *arg, const struct llm_response *resp)
{
	struct ai_call *c = arg;

	phase_llm_called(c->ph, c->llm, resp);
}

/* The AI layer did not run: the review.ai_skipped event {reason, …}
 * (consumes e), and the same in *skipped, for the review's record. */
static void ai_skip(jv *skipped, struct phase *ph, jv e)
{
	jv_free(*skipped);
	*skipped = jv_copy(e);
	phase_emit(ph, "review.ai_skipped", e);
}

/* review_ai() made no call: the prompt would have held no line of code
 * (every file too large for the window, or binary files and renames
 * alone).  Said as skipped, naming the files, not as a review that found
 * nothing (consumes not_shown). */
static void ai_no_code(jv *skipped, struct phase *ph, jv not_shown, long budget)
{
	int n = jv_array_length(jv_copy(not_shown));
	struct buf why = BUF_INIT;

	if (n > 0) {
		buf_addf(&why, "no file of the diff fits the model's context window (%ld tokens for the diff): ",
			 budget);
		jv_array_foreach(not_shown, i, p) {
			buf_addf(&why, "%s%s", i ? ", " : "", jv_string_value(p));
			jv_free(p);
		}
	} else {
		buf_adds(&why, "the diff holds no line of code to show the model (binary files, renames or "
			       "mode changes alone)");
	}
	if (ph->common.verbosity >= 0)
		phase_say(ph, "warning: the AI review was not run: %s; the other layers did run",
			  why.buf);   /* (a provider's words) */
	jv e = json_set(jv_object(), "reason", jv_string(why.buf));
	if (n > 0) {
		e = json_set(e, "files", not_shown);
		e = json_set(e, "diff_tokens", jv_number((double)budget));
	} else {
		jv_free(not_shown);
	}
	ai_skip(skipped, ph, e);
	buf_release(&why);
}

/* The model failed after the static and security layers ran: what they
 * found (a leaked key, say) is not lost with the phase.  An event carries
 * the findings for a pipeline; a person running the review is shown them,
 * and the reason says so. */
static void checks_before_failure(struct phase *ph, jv det)
{
	int n = jv_array_length(jv_copy(det));

	if (n == 0)
		return;
	phase_emit(ph, "review.checks_found", json_set(json_set(jv_object(), "findings", jv_copy(det)),
		   "note", jv_string("found by the static and security layers before the AI layer failed; "
				     "the review did not finish")));
	if (ph->report)
		human_findings(stderr, ph->spec->program, det, human_colour(stderr));
	size_t len = strlen(ph->reason);
	snprintf(ph->reason + len, sizeof ph->reason - len, " (the static and security layers found %d finding%s%s)",
		 n, n == 1 ? "" : "s", ph->report ? ", listed above" : ": event review.checks_found");
}

/* Layer 3.  0; -1 when the model call failed (the phase fails); 1 when the
 * model answered with no review, a refusal or no report_findings call (the
 * phase escalates: a human is needed, as for a refusal in plan or
 * implement).  When it did not run, *skipped says why (jv_null() when it
 * ran). */
static int ai_layer(jv *out, jv *skipped, struct phase *ph, const struct diff *d, jv det)
{
	struct llm_client *llm = NULL;
	struct review_ai_input in = { 0 };
	struct review_ai_result res;
	char *system = NULL;
	jv task = json_get(ph->state, "task");
	long long t0 = monotonic_ms();
	int rc = 0;

	*out = jv_array();
	if (phase_money_spent(skipped, ph, "review.ai_skipped", "the AI review"))
		goto out;
	if (phase_llm(&llm, ph, true) < 0) {
		ai_skip(skipped, ph, json_set(jv_object(), "reason", jv_string(forge_last_error())));
		goto out;
	}
	if (phase_system_prompt(&system, ph, NULL, "review") < 0) {
		rc = -1;
		goto out;
	}
	in.system = system;
	in.task = json_get_str(task, "description");
	in.findings = det;
	in.dismissed = dismissed_memories(ph, d, det);
	in.max_tokens = (int)config_get_num(ph->cfg, "llm.max_tokens");
	in.temperature = llm_temperature(ph->cfg, ph->spec->name);
	/* the window less the answer, the system prompt and the tool: what
	 * the message may take, findings and all (review_ai shares it out;
	 * before, only the diff was fitted and 3000 linter findings made a
	 * request of 276K tokens for a 200K window, hunt58 #2) */
	long window = (long)phase_context_window(ph, llm);
	long rest = in.max_tokens + (long)tokens_estimate_str(system) + 2000;
	in.max_prompt_tokens = window > rest + 2000 ? window - rest : 2000;
	struct ai_call call = { ph, llm };
	in.on_call = ai_called;
	in.on_call_arg = &call;
	jv_free(*out);
	phase_progress(ph, "AI review (%s)", llm_client_model(llm));
	rc = review_ai(out, &res, llm, d, &in);
	/* (what the calls cost counts also when the answer was no use) */
	ph->cost_usd += res.cost_usd;
	ph->tokens += res.tokens;
	if (!res.cost_known)
		ph->cost_known = false;
	if (rc < 0) {
		*out = jv_array();
		rc = forge_error_prefix("AI review");
		if (res.human)
			rc = 1;
	} else if (res.skipped) {
		ai_no_code(skipped, ph, res.not_shown, res.diff_tokens);
		res.not_shown = jv_null();
	} else {
		jv e = json_set(jv_object(), "layer", jv_string("ai"));
		e = json_set(e, "findings", jv_number(jv_array_length(jv_copy(*out))));
		e = json_set(e, "dropped", jv_number(res.dropped));
		if (res.findings_left_out > 0)
			e = json_set(e, "findings_not_listed", jv_number(res.findings_left_out));
		if (res.attempts > 1)
			e = json_set(e, "attempts", jv_number(res.attempts));
		e = json_set(e, "model", jv_string(llm_client_model(llm)));
		/* (the cost is on the calls' llm.called events: summed once) */
		stream_emit_full(&ph->out, "review.layer", e, jv_null(), monotonic_ms() - t0);
	}
	ai_not_shown(ph, res.not_shown, res.diff_tokens);
	jv_free(in.dismissed);
out:
	free(system);
	llm_client_free(llm);
	jv_free(task);
	return rc;
}

static jv risk_json(const struct review_risk *r)
{
	jv o = json_set(jv_object(), "score", jv_number(r->score));

	o = json_set(o, "level", jv_string(review_level_name(r->level)));
	return json_set(o, "reasons", jv_copy(r->reasons));
}

/* Give each finding its id, store it, announce it. */
static jv record(struct phase *ph, jv findings)
{
	struct store *st = phase_store(ph);
	const char *trace = json_get_str(ph->state, "trace_id");
	jv out = jv_array();
	bool warned = false;

	jv_array_foreach(findings, i, f) {
		(void)i;
		char id[ULID_LEN + 1];

		ulid_new(id);
		f = json_set(f, "id", jv_string(id));
		if (st) {
			jv row = json_set(json_set(jv_copy(f), "phase", jv_string("review")), "trace_id",
					  json_str_or_null(trace));
			/* Found before in this trace (a bounce): the stored row's id. */
			if (findings_put(id, st, row) == 0)
				f = json_set(f, "id", jv_string(id));
			else if (!warned) {
				phase_emit(ph, "findings.not_stored", json_set(jv_object(), "error",
					   jv_string(forge_last_error())));
				warned = true;
			}
		} else if (!warned) {
			phase_emit(ph, "findings.not_stored", json_set(jv_object(), "error",
				   jv_string("no database to store findings in")));
			warned = true;
		}
		phase_emit(ph, "finding.detected", jv_copy(f));
		out = jv_array_append(out, f);
	}
	jv_free(findings);
	return out;
}

/* The current directory as a path of root ("sub/dir"; malloc'd), or NULL
 * when it is root or not inside it. */
static char *cwd_prefix(const char *root)
{
	char *cwd = realpath(".", NULL), *top = root ? realpath(root, NULL) : NULL, *rel = NULL;
	size_t n = top ? strlen(top) : 0;

	if (cwd && top && strncmp(cwd, top, n) == 0 && (cwd[n] == '/' || n == 1) && cwd[n + (n > 1)])
		rel = xstrdup(cwd + n + (n > 1));
	free(cwd);
	free(top);
	return rel;
}

/*
 * A diff piped in from a subdirectory whose paths are that directory's
 * (git diff --relative, diff.relative): read as the repository's, and
 * said (before: each file was looked for at the repository's top, another
 * file of the same name there reviewed or none, and the findings named by
 * the wrong paths, hunt60 #7).
 */
static void relative_paths(struct phase *ph, struct diff *d, const char *root)
{
	char *prefix = cwd_prefix(root);

	if (prefix && review_diff_relative(d, root, prefix) == 1) {
		jv e = json_set(jv_object(), "prefix", jv_string(prefix));

		if (ph->common.verbosity >= 0)
			phase_say(ph, "the diff's paths are relative to %s/ (git diff --relative, or "
				  "diff.relative): reviewed as the repository's %s/…", prefix, prefix);
		phase_emit(ph, "review.diff_relative", e);
	}
	free(prefix);
}

/*
 * review_lint(); when its lint command runs in the run's worktree (the
 * state's task.worktree, not a checkout of the person's), what the command
 * leaves there untracked -- an .eslintcache, __pycache__/, a build -- is
 * taken out after it (a review.cleaned event {removed}), as after
 * forge-test's tests (app/phase.h, phase_command_before): before, the next
 * commit or a resume's saved ref took the files for the run's work.  What
 * such a command left when the process that ran it died is moved out
 * first (worktree.cleaned).
 */
static void lint_layer(jv *out, struct phase *ph, struct review_ctx *ctx)
{
	jv task = json_get(ph->state, "task"), before = jv_null(), removed;
	const char *wt = json_get_str(task, "worktree");

	if (review_lint_in_root(ctx) && wt && !strcmp(wt, ctx->root)) {
		if (phase_command_recover(ph, ctx->root) < 0)
			phase_say(ph, "warning: what a stopped command left in the worktree was not removed: %s",
				  forge_last_error());
		before = phase_command_before(ph, ctx->root);
	}
	review_lint(out, ctx);
	removed = phase_command_after(ph, ctx->root, before, "the lint command");
	if (jv_array_length(jv_copy(removed)) > 0)
		phase_emit(ph, "review.cleaned", json_set(jv_object(), "removed", removed));
	else
		jv_free(removed);
	jv_free(task);
}

static const char *run(struct phase *ph)
{
	struct review_args *a = ph->payload;
	struct review_ctx ctx = { .checked = jv_null(), .missing = jv_null() };
	struct review_risk risk = { .reasons = jv_null() };
	struct diff *d = NULL;
	char *text = NULL, *root = NULL, *commit = NULL;
	const char *source = "state";
	jv unreviewed = jv_null();	/* not_reviewed() makes it */
	jv ai_skipped = jv_null();	/* why the AI layer did not run (ai_skip()) */
	enum review_level ai_min = REVIEW_MEDIUM, human_min = REVIEW_HIGH;
	double min_conf = config_get_num(ph->cfg, "review.min_confidence");
	const char *status = "failed", *decision, *why;
	jv det = jv_null(), all = jv_null(), plan_risk = json_get_path(ph->state, "plan.risk");
	long long t0;

	review_level_parse(&ai_min, config_get_str(ph->cfg, "review.ai_min_risk"));
	review_level_parse(&human_min, config_get_str(ph->cfg, "review.human_min_risk"));
	/* findings are stored (DESIGN §3): a database that cannot take them
	 * fails the review before it starts, as it fails a plan */
	struct store *st;

	if (phase_store_needed(&st, ph) < 0) {
		phase_reason(ph, "cannot store findings: %s", forge_last_error());
		goto out;
	}
	int src = diff_source(&text, &root, &commit, &source, ph), prc;
	if (src < 0) {
		phase_reason(ph, "%s", forge_last_error());
		if (src == -2)
			status = "bad_input";
		goto out;
	}
	const char *s = text;
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	/* The run made no change (changes.empty, engine/pipeline.h): nothing to
	 * lint, scan, or ask a model or a human about -- the plan's risk alone
	 * sent an empty diff to the AI layer and, when high, to a human */
	bool no_change = !*s && (!strcmp(source, "state") || !strcmp(source, "git")) &&
			 pipeline_changes_empty(ph->state);
	if (!*s) {
		phase_emit(ph, "review.empty", json_set(jv_object(), "reason",
			   jv_string(no_change ? "the run made no change (changes.empty): nothing to review"
					       : "the diff is empty")));
		d = xcalloc(1, sizeof *d);
	} else if ((prc = diff_parse(&d, text, strlen(text))) < 0) {
		phase_reason(ph, "%s: %s", prc == -2 ? "cannot review this diff" : "malformed diff",
			     forge_last_error());
		goto out;
	}
	if (!strcmp(source, "stdin"))
		relative_paths(ph, d, root);
	jv started = json_set(jv_object(), "files", jv_number((double)d->nfiles));
	started = json_set(started, "additions", jv_number(d->additions));
	started = json_set(started, "deletions", jv_number(d->deletions));
	started = json_set(started, "source", jv_string(source));
	jv cut_findings = not_reviewed(&unreviewed, ph, d);
	if (jv_array_length(jv_copy(unreviewed)) > 0)
		started = json_set(started, "not_reviewed", jv_copy(unreviewed));
	phase_emit(ph, "review.diff", started);

	ctx.diff = d;
	ctx.cfg = ph->cfg;
	ctx.root = root;
	ctx.commit = commit;
	ctx.unreadable = a->unreadable;
	ctx.timeout_ms = (long)(config_get_num(ph->cfg, "sandbox.command_timeout_s") * 1000);
	ctx.emit = emit_cb;
	ctx.emit_payload = ph;
	a->skipped = jv_array();
	if (review_prepare(&ctx) < 0)
		phase_emit(ph, "review.prepare_failed", json_set(jv_object(), "error", jv_string(forge_last_error())));
	/* Files to lint and scan, and not one could be read (a hand-made
	 * state's files not here, a run's worktree gone): the static and
	 * security layers saw nothing, so their silence approves nothing
	 * (below).  A diff piped in by hand is the person's own quick look --
	 * `git diff | forge-review`, outside a repository too -- where the
	 * files are read when they are here and each one that is not is said
	 * on stderr: that stays a review of the diff's text. */
	bool none_read = strcmp(source, "stdin") != 0 && jv_array_length(jv_copy(a->skipped)) > 0 &&
			 jv_get_kind(ctx.checked) == JV_KIND_ARRAY && jv_array_length(jv_copy(ctx.checked)) == 0;
	cut_findings = concat(cut_findings, skipped_files(&unreviewed, a->skipped));
	a->skipped = jv_null();

	/* layer 1 */
	jv lint, sec, scan;
	phase_leave_if_output_gone(ph);
	t0 = monotonic_ms();
	phase_progress(ph, "static analysis");
	lint_layer(&lint, ph, &ctx);
	lint = concat(lint, cut_findings);
	layer_event(ph, "static", jv_copy(lint), monotonic_ms() - t0);
	phase_leave_if_output_gone(ph);	/* (no scanner for a review none can read) */
	/* layer 2 */
	t0 = monotonic_ms();
	phase_progress(ph, "security scan");
	if (review_secrets(&sec, d) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		jv_free(lint);
		goto out;
	}
	review_scan(&scan, &ctx);
	sec = concat(sec, scan);
	layer_event(ph, "security", jv_copy(sec), monotonic_ms() - t0);
	tools_missing(ph, &ctx);
	det = review_synthesize(concat(lint, sec), d, min_conf);
	det = drop_dismissed(ph, det);

	review_risk(&risk, d, det, plan_risk);
	phase_emit(ph, "review.risk", risk_json(&risk));

	/* layer 3 */
	jv ai = jv_array();
	if (no_change) {
		ai_skip(&ai_skipped, ph, json_set(jv_object(), "reason", jv_string("the run made no change")));
	} else if (risk.level >= ai_min) {
		jv_free(ai);
		int ai_rc = ai_layer(&ai, &ai_skipped, ph, d, det);
		if (ai_rc != 0) {
			phase_reason(ph, "%s", forge_last_error());
			jv_free(ai);
			checks_before_failure(ph, det);
			if (ai_rc > 0)
				status = "escalated";
			goto out;
		}
	} else {
		jv e = json_set(jv_object(), "reason", jv_string("risk below review.ai_min_risk"));
		e = json_set(e, "risk", jv_string(review_level_name(risk.level)));
		e = json_set(e, "ai_min_risk", jv_string(review_level_name(ai_min)));
		ai_skip(&ai_skipped, ph, e);
	}

	/* synthesis */
	all = review_synthesize(concat(jv_copy(det), ai), d, min_conf);
	all = drop_dismissed(ph, all);
	jv_free(risk.reasons);
	review_risk(&risk, d, all, plan_risk);
	if (no_change) {
		/* (no line changed: the plan's risk is not this diff's) */
		jv_free(risk.reasons);
		risk = (struct review_risk){ .score = 0, .level = REVIEW_LOW,
					     .reasons = jv_array_append(jv_array(), jv_string("no change")) };
	}
	decision = review_decide(&why, all, risk.level, human_min);
	if (no_change && !strcmp(decision, "approve"))
		why = "nothing to review: the run made no change";
	/* (before: approve, exit 0, with a warning for each file: a review
	 * that read none of the change's files passed it on to test and
	 * deploy) */
	if (none_read && !strcmp(decision, "approve")) {
		decision = "require_human";
		why = "no file of the change could be read to lint or scan (its forge/not-reviewed findings say "
		      "why): a person must review it, or review it where its files are (--commit, --base, the "
		      "run's repository)";
	}
	all = record(ph, all);

	/* A report that cannot be written is said, and the review stands (as
	 * forge-test's --junit): its decision is not a dependency's failure. */
	if (a->sarif && sarif_write(a->sarif, all, FORGE_VERSION) < 0) {
		fprintf(stderr, "%s: warning: %s\n", ph->spec->program, forge_last_error());
		phase_emit(ph, "review.sarif_failed", json_set(json_set(jv_object(), "file", jv_string(a->sarif)),
							       "error", jv_string(forge_last_error())));
	}
	int counts[4] = { 0 };
	jv_array_foreach(all, i, f) {
		(void)i;
		const char *sv = json_get_str(f, "severity");
		counts[sv && !strcmp(sv, "critical") ? 3 : sv && !strcmp(sv, "error") ? 2 :
		       sv && !strcmp(sv, "warning") ? 1 : 0]++;
		jv_free(f);
	}
	jv review = json_set(jv_object(), "findings", jv_copy(all));
	review = json_set(review, "risk", risk_json(&risk));
	review = json_set(review, "decision", jv_string(decision));
	jv summary = json_set(jv_object(), "critical", jv_number(counts[3]));
	summary = json_set(summary, "error", jv_number(counts[2]));
	summary = json_set(summary, "warning", jv_number(counts[1]));
	summary = json_set(summary, "info", jv_number(counts[0]));
	review = json_set(review, "summary", summary);
	review = json_set(review, "files", jv_number((double)d->nfiles));
	/* which diff was reviewed, and what of the change it did not show */
	review = json_set(review, "source", jv_string(source));
	/* the commit reviewed, so that forge-test and forge-deploy can tell a
	 * review of these changes from one of an earlier implement's */
	jv ch = changes_of(ph);
	if ((!strcmp(source, "state") || !strcmp(source, "git")) && json_get_str(ch, "commit"))
		review = json_set(review, "commit", json_get(ch, "commit"));
	jv_free(ch);
	if (jv_array_length(jv_copy(unreviewed)) > 0)
		review = json_set(review, "not_reviewed", jv_copy(unreviewed));
	/* the AI layer that did not run, and why: its silence is no approval */
	if (jv_get_kind(ai_skipped) == JV_KIND_OBJECT)
		review = json_set(review, "ai_skipped", jv_copy(ai_skipped));
	phase_set(ph, "review", review);
	char verdict[sizeof ph->reason];
	snprintf(verdict, sizeof verdict, "%s (risk %s; %d critical, %d error, %d warning)", why,
		 review_level_name(risk.level), counts[3], counts[2], counts[1]);
	if (a->pr && pr_publish(ph, all, d, decision, verdict) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		goto out;
	}
	phase_reason(ph, "%s: %s", decision, verdict);
	if (ph->report) {
		/* run alone: what a person (or a CI log) reads, beside the JSON */
		bool colour = human_colour(stderr);
		human_findings(stderr, ph->spec->program, all, colour);
		human_decision(stderr, ph->spec->program, decision, verdict, colour);
		ph->reported = true;
	}
	status = strcmp(decision, "approve") == 0 ? "ok" :
		 strcmp(decision, "request_changes") == 0 ? "rejected" : "escalated";
out:
	review_ctx_release(&ctx);
	jv_free(ai_skipped);
	jv_free(unreviewed);
	jv_free(risk.reasons);
	jv_free(det);
	jv_free(all);
	jv_free(plan_risk);
	diff_free(d);
	free(text);
	free(root);
	free(commit);
	return status;
}

int main(int argc, char **argv)
{
	struct review_args args = { 0 };
	int rc;

	spec = (struct phase_spec){
		.name = "review",
		.program = "forge-review",
		.synopsis = "[--sarif FILE] [OPTION]... < diff-or-state\n"
			    "(--base REF | --commit SHA) --no-input [--sarif FILE] [OPTION]...\n"
			    "--pr N [--dry-run] [--sarif FILE] [OPTION]...",
		.description = "Review changes: the state's changes, a unified diff on stdin (a series too: "
			       "git format-patch --stdout, git log -p, diffs one after another; a file in "
			       "several of its sections is reviewed as the one change they make), what the "
			       "working tree changed since it branched from --base (from their merge base, "
			       "as a pull request), or one --commit (with --no-input, or on a terminal: an "
			       "empty stdin is bad input).  Layer 1 runs linters, layer 2 scans for "
			       "secrets and insecure code, layer 3 asks a model when the risk is above low.  "
			       "Exit 0 approve, 1 request_changes, 4 require_human.  Run alone (not by "
			       "forge-supervisor) and without -q it also prints each finding on stderr as "
			       "`file:line: severity: message [rule]`, then the decision on one line; stdout "
			       "is the JSON lines alone.  --pr N reviews GitHub pull request N "
			       "(GITHUB_TOKEN or GH_TOKEN; GITHUB_API_URL; GITHUB_REPOSITORY, else the "
			       "origin remote) and posts one PR review with inline comments; a run "
			       "again updates Forge's comments instead of adding more.",
		.extra_help = "Examples:\n  git diff main | forge-review\n  git format-patch -3 --stdout | forge-review\n"
			      "  forge-review --base main --no-input --sarif review.sarif\n"
			      "  GITHUB_TOKEN=… forge-review --pr 42 --no-input\n",
		.options = options,
		.on_option = on_option,
		.raw_hook = raw_hook,
		.raw_what = "a diff",
		.raw_hint = "review the change from git instead, with --commit SHA (a commit) or --base REF "
			    "(the working tree against REF), which read a diff of any size",
		.needs_input = true,
		/* `git diff | forge-review` with nothing changed */
		.empty_input = "empty input: the diff is empty, nothing to review (git diff shows no change?); "
			       "pipe a state or a unified diff, or use --base REF / --commit SHA",
		/* stdin a terminal, no --base or --commit: a task is no change to
		 * review (forge-review --task is skipped), so it is not offered */
		.tty_input = "no input: pipe a unified diff or a state (git diff main | forge-review), "
			     "or use --base REF / --commit SHA",
		/* --no-input without --base, --commit or --pr */
		.no_input = "--no-input without --base, --commit or --pr: nothing to review; with --no-input, "
			    "name the change with --base REF (the working tree against REF), --commit SHA "
			    "(one commit) or --pr N (a GitHub pull request), or drop --no-input and pipe a "
			    "unified diff or a state (git diff main | forge-review)",
		.runs_alone = true,	/* with --base or --commit */
		.needs_repo = true,	/* but not for a diff on stdin */
		.model_options = true,
		.guard = guard,
		.state_text = true,	/* the state's diff, its files said unlinted */
		.run = run,
	};
	rc = phase_main(&spec, argc, argv, &args);
	free(args.raw);
	free(args.pr_head);
	free(args.unreadable);
	if (args.gh.api)
		github_close(&args.gh);
	return rc;
}
