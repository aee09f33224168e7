/*
 * runshare.h - a run carried on in another clone (another machine, a later
 * CI job): the run's branch shared through the remote `git.push_remote`
 * names (README "Runs on several machines").  Used by forge-supervisor
 * (push after each checkpoint, fetch before a resume) and by the phase
 * filters (app/phase.c: fetch before a phase given a state made elsewhere;
 * forge-implement run alone pushes after its commits).
 */
#ifndef FORGE_RUNSHARE_H
#define FORGE_RUNSHARE_H

#include <jv.h>
#include <stdbool.h>

/*
 * Push the run's branch forge/TRACE and refs/forge/TRACE/base of the
 * repository at `repo` to `remote`.  *event (set on success and on failure)
 * gets the payload of run.pushed {remote, branch, commit} or of
 * run.push_failed {remote, branch, error}.  Returns 0, or -1 with a message.
 */
int runshare_push(jv *event, const char *repo, const char *remote, const char *trace);

/*
 * Make the run of *state workable in the repository `repo`: when it lacks
 * the branch forge/TRACE, fetch it (and the run's base) from `remote`; then
 * open the run's worktree there and point task.repo and task.worktree at
 * this clone's (*state is replaced; the other task fields stay).  The
 * worktree is at the commit the state names (changes.commit, when it has
 * one): a branch that went on past it is put back at it (the later commits
 * kept on refs/forge/TRACE/saved/N of this clone); a branch that no longer
 * holds it (rewritten since: the state is stale) is -2.  *event gets the payload of run.adopted {remote,
 * branch, commit (the one worked on), fetched, repo, worktree, was: {repo,
 * worktree}, and when the branch was put back: branch_tip, saved_ref}
 * (jv_null() when nothing was done).  Returns 0, 1 when the branch is
 * neither here nor on the remote (the state is left as it was), -1 or -2
 * (the state is stale) with a message.  remote NULL: the branch must be here (a repository moved or
 * copied, a worktree removed), or the commit the state names (the branch
 * is then made again at it).
 */
int runshare_adopt(jv *state, jv *event, const char *repo, const char *remote);

/*
 * Before a resume: when forge/TRACE is here and the remote's is ahead of it
 * (the run moved on in another clone), fetch it and fast-forward the branch
 * and the run's worktree to it (forge_git_save_and_reset: uncommitted files
 * are kept on refs/forge/TRACE/saved/N).  *event gets {remote, from, to,
 * saved_ref} when it moved, else jv_null().  Returns 0 (also when the
 * branch is not here, is the remote's, or is ahead of it), 2 when the two
 * have diverged (a message says so; nothing changed), -1 with a message
 * when the remote cannot be read.
 */
int runshare_catch_up(jv *event, const char *repo, const char *remote, const char *trace);

/* True when `path` is a directory (NULL: false). */
bool runshare_is_dir(const char *path);

/* True when `path` is a run's worktree that is there with its repository:
 * a directory whose .git is a directory, or a file naming a git directory
 * that is there.  A worktree out of the checkout (git.h
 * forge_git_runs_dir) outlives a clone removed by hand (rm -rf, a CI
 * runner's cleanup): then false. */
bool runshare_worktree_there(const char *path);

#endif
