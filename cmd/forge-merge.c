/*
 * forge-merge - bring a completed run's branch into the branch the user's
 * checkout is on: a fast-forward, or a merge commit with --no-ff.
 *
 *   forge merge TRACE [--no-ff]
 */
#include "app/cli.h"
#include "app/runview.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/stream.h"
#include "git/git.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_NO_FF = 256 };

static const struct cli_option options[] = {
	{ "no-ff", 0, NULL, "make a merge commit even when a fast-forward would do (needed when the "
			    "base branch moved since the run started)", OPT_NO_FF },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-merge",
	.synopsis = "TRACE [--no-ff]",
	.description = "Merge the branch forge/TRACE of a completed run into its base branch: the\n"
		       "branch the run started from (--base BRANCH, or the branch HEAD was on), or,\n"
		       "when it started from a detached HEAD or a commit, the branch the checkout is\n"
		       "on, which must contain the run's base commit.  That branch must be checked\n"
		       "out and the checkout must have no uncommitted changes to tracked files; its\n"
		       "files are updated.  A fast-forward by default; --no-ff makes a merge commit\n"
		       "(authored by user.name/user.email; refused when git would sign it,\n"
		       "commit.gpgsign, or run a commit hook on it: merge with git then).  The merge\n"
		       "is recorded as a run.merged event: status and show say merged, and `forge gc`\n"
		       "may then remove the run's worktree and branch.  TRACE may be any unique\n"
		       "prefix of a trace id.",
	.options = options,
	.extra_help = "Exit status: 0 merged (or merged already, or the run made no change: nothing\n"
		      "to merge), 1 the changes conflict (nothing changed: merge it with git, then\n"
		      "forge merge TRACE records it), 2 no such run (a trace of phases run by hand,\n"
		      "a shell pipeline, is none: git merge forge/TRACE merges it), not completed,\n"
		      "the checkout is dirty, on another branch or detached, the base branch moved\n"
		      "and --no-ff was not given (or moved while it merged: merge again), or the\n"
		      "merge commit is git's to make; 5 git or the database failed.\n",
};

struct target {
	char *branch;       /* the base branch to merge into */
	char *run_branch;   /* forge/TRACE */
	char *base_commit;
	bool unborn;        /* the branch has no commit yet (an empty repository) */
};

/* The run's base branch `branch` is not the one this checkout is on (head,
 * NULL when detached) and another checkout of the person's has it (the
 * main one, a linked worktree), where `git switch` cannot take it ("already
 * checked out at …"): true after saying to merge it there; false when no
 * checkout has it. */
static bool said_elsewhere(struct forge_git *g, const char *branch, const char *head, const char *trace)
{
	struct buf ref = BUF_INIT, cd = BUF_INIT;
	char *there = NULL;
	bool said = false;

	buf_addf(&ref, "refs/heads/%s", branch);
	if (forge_git_checked_out_in(&there, g, ref.buf) == 0 && there) {
		said = true;
		buf_add_shell_quoted(&cd, there);
		fprintf(stderr, "forge-merge: the run's base branch '%s' is checked out in '%s', not here (%s%s%s): "
				"merge it there: cd %s && forge merge %s\n", branch, there,
			head ? "this checkout is on '" : "HEAD is detached here", head ? head : "", head ? "'" : "",
			cd.buf, trace);
	}
	buf_release(&ref);
	buf_release(&cd);
	free(there);
	return said;
}

/* Which branch the run goes into; FORGE_EXIT_USAGE after a message when the
 * checkout is not where it must be. */
static int find_target(struct target *t, struct forge_git *g, jv task, const char *trace)
{
	/* base_branch: the branch HEAD was on when the run started from HEAD. */
	const char *base_ref = json_get_str(task, "base_branch");
	char *head = NULL, *sha = NULL;
	struct buf ref = BUF_INIT;
	bool ok = false;
	int rc = FORGE_EXIT_USAGE;

	if (!base_ref)
		base_ref = json_get_str(task, "base_ref");

	buf_addf(&ref, "refs/heads/%s", base_ref ? base_ref : "");
	if (forge_git_head_branch(&head, g) < 0) {
		char *why = xstrdup(forge_last_error());

		if (!(base_ref && strcmp(base_ref, "HEAD") != 0 && forge_git_resolve(&sha, g, ref.buf) == 0 &&
		      said_elsewhere(g, base_ref, NULL, trace)))
			fprintf(stderr, "forge-merge: %s; switch to the branch the run should go into "
					"(git switch BRANCH), then run forge merge %s again\n", why, trace);
		free(why);
		goto out;
	}
	if (base_ref && strcmp(base_ref, "HEAD") != 0 && forge_git_resolve(&sha, g, ref.buf) == 0)
		t->branch = xstrdup(base_ref);  /* the run started from a branch: that one */
	else
		t->branch = xstrdup(head);
	if (strcmp(t->branch, head) != 0) {
		if (!said_elsewhere(g, t->branch, head, trace))
			fprintf(stderr, "forge-merge: the run's base branch '%s' is not checked out (the checkout "
					"is on '%s'): git switch %s, then forge merge %s\n", t->branch, head, t->branch,
				trace);
		goto out;
	}
	free(sha);
	sha = NULL;
	if (forge_git_resolve(&sha, g, t->branch) < 0) {
		/* checked out and no commit: the unborn branch of an empty
		 * repository, which the run's empty base commit stands for */
		bool moved = true;

		t->unborn = t->base_commit && forge_git_base_moved(&moved, g, t->branch, t->base_commit) == 0 &&
			    !moved;
	}
	if (t->base_commit && !t->unborn &&
	    (forge_git_contains(&ok, g, t->branch, t->base_commit) < 0 || !ok)) {
		fprintf(stderr, "forge-merge: branch '%s' does not contain the commit run %s started from "
				"(%.12s): switch to the branch it started from\n", t->branch, trace, t->base_commit);
		goto out;
	}
	rc = 0;
out:
	buf_release(&ref);
	free(head);
	free(sha);
	return rc;
}

/* Store event `type` of trace with payload p (consumed): -1 with
 * forge_error() when it was not stored. */
static int put_event(struct store *st, const char *trace, const char *type, jv p)
{
	struct stream_out out;
	int rc;

	stream_out_init(&out, stdout, "forge-merge", NULL);
	stream_out_set_trace(&out, trace);
	jv ev = stream_event_new(&out, type, p);
	rc = store_event_put(st, ev, NULL, 0, NULL);
	jv_free(ev);
	return rc;
}

/* Record run.merged {branch, commit, how, run_branch}. */
static void record(struct store *st, const char *trace, const struct target *t, const char *commit, const char *how)
{
	jv p = json_set(json_set(jv_object(), "branch", jv_string(t->branch)), "commit", jv_string(commit));

	p = json_set(json_set(p, "how", jv_string(how)), "run_branch", jv_string(t->run_branch));
	if (put_event(st, trace, "run.merged", p) < 0)
		fprintf(stderr, "forge-merge: merged, but the event was not stored: %s\n", forge_last_error());
}

/* The merge commit conflicted (why: git's "the changes conflict in FILES"):
 * said with what to do -- git merges it, the person resolves it, and forge
 * merge then finds the run in the branch -- and recorded as
 * run.merge_conflict {branch, run_branch, reason}, so that forge show's
 * next step is that merge, not this one again (runview_next). */
static void conflicted(struct store *st, const char *trace, const struct target *t, const char *why)
{
	jv p = json_set(json_set(jv_object(), "branch", jv_string(t->branch)), "run_branch", jv_string(t->run_branch));

	fprintf(stderr, "forge-merge: %s (nothing changed): merge it by hand on '%s': git merge %s, resolve the "
			"conflicts, git commit; then forge merge %s records the run as merged\n", why, t->branch,
		t->run_branch, trace);
	if (put_event(st, trace, "run.merge_conflict", json_set(p, "reason", jv_string(why))) < 0)
		fprintf(stderr, "forge-merge: the conflict was not recorded: %s\n", forge_last_error());
}

/*
 * Why run `trace` has no branch in g when forge gc did not remove it, said
 * on stderr with what to do: a dry run makes none (before: "has no branch
 * ... (removed by forge gc?)"); a run made in another repository -- a
 * database several share, --db or FORGE_DB -- has its branch there.  True
 * when one of them was said.  Borrows task.
 */
static bool no_branch_why(struct store *st, struct forge_git *g, const char *trace, jv task)
{
	jv started = jv_null();
	const char *repo = json_get_str(task, "repo");
	char *theirs = NULL, *ours = NULL;
	struct buf cmd = BUF_INIT;
	bool said = false;

	store_event_last(&started, st, trace, "run.started");
	jv dry = json_get_path(started, "payload.dry_run");
	if (jv_get_kind(dry) == JV_KIND_TRUE) {
		fprintf(stderr, "forge-merge: run %s was a dry run (forge run --dry-run): it planned only, and made "
				"no branch or change to merge; forge run without --dry-run makes them\n", trace);
		said = true;
		goto out;
	}
	if (!repo || *repo != '/')
		goto out;
	theirs = realpath(repo, NULL);
	ours = realpath(forge_git_root(g), NULL);
	if (!ours || strcmp(theirs ? theirs : repo, ours) == 0)
		goto out;
	buf_adds(&cmd, "forge merge --repo ");
	buf_add_shell_quoted(&cmd, theirs ? theirs : repo);
	buf_addf(&cmd, " %s", trace);
	fprintf(stderr, "forge-merge: run %s was made in the repository '%s'%s, not in this one ('%s'): its branch "
			"is there; merge it there: %s\n", trace, theirs ? theirs : repo,
		theirs ? "" : " (not found now)", ours, cmd.buf);
	said = true;
out:
	buf_release(&cmd);
	jv_free(dry);
	jv_free(started);
	free(theirs);
	free(ours);
	return said;
}

static int merge(struct store *st, struct forge_git *g, const char *trace, bool no_ff)
{
	jv run = jv_null(), cp = jv_null(), merged = jv_null(), task;
	struct target t = { 0 };
	char *commit = NULL;
	bool ff = false, locked = false;
	int rc = FORGE_EXIT_USAGE, e;

	store_run_get(&run, st, trace);
	store_checkpoint_latest(&cp, st, trace);
	store_event_last(&merged, st, trace, "run.merged");
	task = json_get(cp, "task");
	if (jv_get_kind(merged) == JV_KIND_OBJECT) {
		printf("run %s is merged already\n", trace);
		rc = FORGE_EXIT_OK;
		goto out;
	}
	/* a trace of phases run by hand: git merges its branch (before: "is
	 * unknown, not completed; see forge show", which said forge resume) */
	if (runview_pipeline(st, trace)) {
		jv place = runview_pipeline_place(g, trace);
		const char *branch = json_get_str(place, "branch");

		fprintf(stderr, "forge-merge: %s is not a forge run but a trace of phases run by hand (a shell "
				"pipeline): ", trace);
		if (branch)
			fprintf(stderr, "merge its branch with git: git merge %s (forge show %s says how to remove "
					"it after)\n", branch, trace);
		else
			fprintf(stderr, "it has no branch to merge (forge show %s says what is left of it)\n", trace);
		jv_free(place);
		goto out;
	}
	/* (a run whose merge deploy refused to land it is mergeable too:
	 * runview.h) */
	if (!runview_mergeable(st, trace)) {
		fprintf(stderr, "forge-merge: run %s is %s, not completed; see forge show %s\n", trace,
			json_get_str(run, "status") ? json_get_str(run, "status") : "unknown", trace);
		goto out;
	}
	runview_refs(&t.run_branch, &t.base_commit, st, trace);
	if (forge_git_resolve(&commit, g, t.run_branch) < 0) {
		if (!no_branch_why(st, g, trace, task))
			fprintf(stderr, "forge-merge: run %s has no branch %s (removed by forge gc?)\n", trace,
				t.run_branch);
		goto out;
	}
	/* A run whose branch holds no change against its base (the agent
	 * changed no file: changes.empty) has nothing to merge, and is not
	 * recorded as merged (before: "in BRANCH already (merged outside
	 * forge)", its branch being its base, which BRANCH contains). */
	jv files = jv_null();
	bool none = t.base_commit && forge_git_diff_revs(NULL, &files, g, t.base_commit, commit) == 0 &&
		    jv_get_kind(files) == JV_KIND_ARRAY && jv_array_length(jv_copy(files)) == 0;

	jv_free(files);
	if (none) {
		printf("run %s made no change; nothing to merge (forge gc removes its worktree and branch)\n", trace);
		rc = FORGE_EXIT_OK;
		goto out;
	}
	free(commit);
	commit = NULL;
	if ((rc = find_target(&t, g, task, trace)) != 0)
		goto out;
	/* Another merge into this repository (forge merge, a merge deploy)
	 * is done before this one looks at the checkout and the branch, and
	 * none starts until this one has moved it (before: one's half-written
	 * checkout was "uncommitted changes" to the other, and the one whose
	 * branch move lost left its files staged on the other's commit). */
	if (forge_git_merge_lock(g) < 0) {
		fprintf(stderr, "forge-merge: %s\n", forge_last_error());
		rc = FORGE_EXIT_DEPENDENCY;
		goto out;
	}
	locked = true;
	rc = FORGE_EXIT_USAGE;
	e = forge_git_checkout_dirty(g);
	/* the run's own change, wholly or partly written, with the branch not
	 * moved: a merge interrupted (killed) in the middle; the fast-forward
	 * below ends it (before: "stash them", which stashed the run's change) */
	int holds = e > 0 ? forge_git_checkout_midway(g, t.run_branch) : 0;
	if (holds == 1 && !no_ff) {
		fprintf(stderr, "forge-merge: '%s' holds run %s's change already, '%s' not moved yet "
				"(a merge of it was interrupted): finishing it\n", forge_git_checkout(g), trace,
			t.branch);
		e = 0;
	}
	if (e != 0) {
		if (holds == 1)
			fprintf(stderr, "forge-merge: '%s' holds run %s's change already, '%s' not moved yet (a "
					"merge of it was interrupted): forge merge %s (without --no-ff) finishes it, "
					"git reset --hard undoes it\n", forge_git_checkout(g), trace, t.branch, trace);
		else if (e > 0)
			fprintf(stderr, "forge-merge: '%s' has uncommitted changes to tracked files: commit or "
					"stash them (git stash), then forge merge %s\n", forge_git_checkout(g), trace);
		else
			fprintf(stderr, "forge-merge: %s\n", forge_last_error());
		rc = e > 0 ? FORGE_EXIT_USAGE : FORGE_EXIT_DEPENDENCY;
		goto out;
	}
	bool inside = false;

	/* an unborn branch is created at the run's commit: a fast-forward
	 * from nothing (forge_git_merge_ff), --no-ff or not */
	if (t.unborn) {
		ff = true;
		no_ff = false;
	} else if (forge_git_contains(&inside, g, t.branch, t.run_branch) < 0 ||
		   forge_git_contains(&ff, g, t.run_branch, t.branch) < 0) {
		fprintf(stderr, "forge-merge: %s\n", forge_last_error());
		rc = FORGE_EXIT_DEPENDENCY;
		goto out;
	}
	/* merged by hand (git merge forge/TRACE), with commits since: the run
	 * is in the branch, which is all a merge does (before: "has moved",
	 * and --no-ff recorded a merge it did not make) */
	if (inside) {
		forge_git_resolve(&commit, g, t.branch);
		record(st, trace, &t, commit ? commit : "", "already");
		printf("run %s is in %s already (merged outside forge); recorded as merged\n", trace, t.branch);
		rc = FORGE_EXIT_OK;
		goto out;
	}
	if (!ff && !no_ff) {
		fprintf(stderr, "forge-merge: '%s' has moved since run %s started: a fast-forward is not "
				"possible; forge merge --no-ff %s makes a merge commit\n", t.branch, trace, trace);
		goto out;
	}
	/* a merge commit git would sign or run hooks on is git's to make:
	 * Forge's would be unsigned and unchecked on the person's branch */
	char *by_git = NULL;

	if (no_ff && forge_git_commit_by_git(&by_git, g) < 0) {
		fprintf(stderr, "forge-merge: %s\n", forge_last_error());
		rc = FORGE_EXIT_DEPENDENCY;
		goto out;
	}
	if (by_git) {
		fprintf(stderr, "forge-merge: cannot make the merge commit: %s, and Forge makes commits without "
				"(unsigned, no hooks); nothing changed.  Merge with git instead: git merge --no-ff %s, "
				"then forge merge %s records the run as merged\n", by_git, t.run_branch, trace);
		free(by_git);
		goto out;
	}
	struct buf msg = BUF_INIT;
	buf_addf(&msg, "Merge %s: %s\n", t.run_branch, json_get_str(run, "task") ? json_get_str(run, "task") : "");
	e = no_ff ? forge_git_merge_commit(&commit, g, t.branch, t.run_branch, msg.buf)
		  : forge_git_merge_ff(&commit, g, t.branch, t.run_branch);
	buf_release(&msg);
	if (e == FORGE_GIT_MOVED) {
		/* (a git command moved it after the look above: as when it had
		 * moved before, the person decides again) */
		fprintf(stderr, "forge-merge: %s; forge merge %s again sees where '%s' is now\n",
			forge_last_error(), trace, t.branch);
		rc = FORGE_EXIT_USAGE;
		goto out;
	}
	if (e == FORGE_GIT_CONFLICT) {
		char *why = xstrdup(forge_last_error());

		conflicted(st, trace, &t, why);
		free(why);
		rc = FORGE_EXIT_REJECTED;
		goto out;
	}
	if (e < 0 || e == FORGE_GIT_BLOCKED) {
		fprintf(stderr, "forge-merge: %s\n", forge_last_error());
		rc = e == FORGE_GIT_BLOCKED ? FORGE_EXIT_USAGE : FORGE_EXIT_DEPENDENCY;
		goto out;
	}
	if (!commit)
		forge_git_resolve(&commit, g, t.branch);
	record(st, trace, &t, commit ? commit : "", no_ff ? "merge" : "fast-forward");
	printf("merged %s into %s (%s) at %.12s\n", t.run_branch, t.branch,
	       e == FORGE_GIT_NOTHING ? "already there" : no_ff ? "merge commit" : "fast-forward", commit ? commit : "?");
	rc = FORGE_EXIT_OK;
out:
	if (locked)
		forge_git_merge_unlock(g);
	free(commit);
	free(t.branch);
	free(t.run_branch);
	free(t.base_commit);
	jv_free(task);
	jv_free(run);
	jv_free(cp);
	jv_free(merged);
	return rc;
}

static int on_option(int id, const char *arg, void *payload)
{
	(void)arg;
	if (id == OPT_NO_FF) {
		*(bool *)payload = true;
		return 0;
	}
	return forge_error("unhandled option");
}

int main(int argc, char **argv)
{
	struct cli_common common;
	bool no_ff = false;
	int first = cli_parse(&common, &spec, argc, argv, on_option, &no_ff);
	struct session ses;
	struct forge_git *g = NULL;
	char *trace = NULL;
	int status;

	if (argc - first != 1)
		cli_usage_error(&spec, "one trace id is needed");
	status = session_open(&ses, &common, SESSION_CONFIG | SESSION_STORE | SESSION_NEED_REPO |
			      SESSION_EXISTING, jv_null());
	if (status) {
		fprintf(stderr, "forge-merge: %s\n", forge_last_error());
		return cli_finish("forge-merge", status);
	}
	status = runview_resolve(&trace, ses.store, "forge-merge", argv[first]);
	if (status)
		goto out;
	/* the checkout named or the one here: a linked worktree's branch and
	 * files are its own (git/git.h) */
	if (forge_git_open(&g, common.repo) < 0) {
		fprintf(stderr, "forge-merge: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
		goto out;
	}
	status = merge(ses.store, g, trace, no_ff);
out:
	forge_git_free(g);
	free(trace);
	session_close(&ses);
	return cli_finish("forge-merge", status);
}
