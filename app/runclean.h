/*
 * runclean.h - removing what a run leaves in the repository: its worktree
 * (forge_git_runs_dir()/TRACE), its branch forge/TRACE and its refs
 * everything under refs/forge/TRACE/ (base, saved/N), TRACE the run's name
 * in git (forge_git_run_name).  Used by `forge gc` and `forge cancel`
 * (runclean.c).
 */
#ifndef FORGE_RUNCLEAN_H
#define FORGE_RUNCLEAN_H

#include <stdbool.h>
#include <stdio.h>

struct forge_git;

enum runclean_mode {
	/* gc: the worktree (uncommitted changes and all), the branch, every ref */
	RUNCLEAN_ALL,
	/* cancel: uncommitted changes are first kept on refs/forge/TRACE/saved/N,
	 * then the worktree goes; the branch and refs stay when the branch has
	 * commits beyond the run's base (there is work to look at: forge diff),
	 * else the branch and its base ref go too */
	RUNCLEAN_CANCEL,
};

/*
 * Clean run `trace` in g as mode says, printing one line a thing to out
 * ("removed worktree PATH", "deleted ref NAME", "kept branch B: ..."), or
 * with dry_run only what would go ("would remove worktree PATH", ...).
 * *n_removed (may be NULL) gets how many things went (would go).
 * What the person is using stays, with a line saying so and how to let it
 * go: a worktree they locked (git worktree lock) keeps the whole run; a
 * branch checked out in a checkout (not the run's own worktree) keeps the
 * branch and the run's refs.  Returns 0, 1 when something was kept so, or
 * -1 with forge_error() (what was done before stays done).
 */
int runclean(struct forge_git *g, const char *trace, enum runclean_mode mode, bool dry_run, FILE *out,
	     int *n_removed);

#endif
