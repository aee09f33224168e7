/*
 * git_share.c - a run's branch through a shared remote (git.h): pushed by
 * the clone that works on the run, fetched by another clone (another
 * machine, a later CI job) that carries it on.  Two refs make a run:
 * forge/NAME and refs/forge/NAME/base (where it started, which the
 * worktree's diff and `forge diff` are taken against); NAME is the
 * trace's forge_git_run_name().
 */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/forge.h"

#include <string.h>

int forge_git_run_push(struct forge_git *g, const char *remote, const char *trace)
{
	struct buf base = BUF_INIT, branch = BUF_INIT, what = BUF_INIT;
	char name[FORGE_GIT_RUN_NAME_SIZE];
	int rc = -1;

	if (forge_git_run_name(name, trace) < 0)
		goto out;
	/* forced: a resume may reset the branch to its checkpoint's commit */
	buf_addf(&base, "+refs/forge/%s/base:refs/forge/%s/base", name, name);
	buf_addf(&branch, "+refs/heads/forge/%s:refs/heads/forge/%s", name, name);
	buf_addf(&what, "forge/%s", name);
	const char *specs[] = { base.buf, branch.buf };
	rc = forge_git_push_refspecs(g, remote, specs, 2, what.buf);
out:
	buf_release(&base);
	buf_release(&branch);
	buf_release(&what);
	return rc;
}

/* 1 when `name` is a ref of the repository, 0 when not, -1 on an error. */
static int has_ref(git_repository *repo, const char *name)
{
	git_oid id;
	int e = git_reference_name_to_id(&id, repo, name);

	if (e == 0)
		return 1;
	if (e == GIT_ENOTFOUND)
		return 0;
	return forge_git_fail("cannot read '%s'", name);
}

int forge_git_run_fetch(struct forge_git *g, const char *remote, const char *trace)
{
	struct buf branch = BUF_INIT, spec = BUF_INIT;
	char name[FORGE_GIT_RUN_NAME_SIZE];
	int rc = -1;

	if (forge_git_run_name(name, trace) < 0)
		goto out;
	buf_addf(&branch, "refs/heads/forge/%s", name);
	if ((rc = has_ref(g->repo, branch.buf)) != 0) {
		rc = rc > 0 ? 0 : -1;
		goto out;
	}
	buf_addf(&spec, "+refs/forge/%s/base:refs/forge/%s/base", name, name);
	rc = -1;
	if (forge_git_fetch(g, remote, spec.buf) < 0)
		goto out;
	buf_reset(&spec);
	buf_addf(&spec, "+%s:%s", branch.buf, branch.buf);
	if (forge_git_fetch(g, remote, spec.buf) < 0)
		goto out;
	rc = has_ref(g->repo, branch.buf);
	rc = rc > 0 ? 0 : rc == 0 ? 1 : -1;
out:
	buf_release(&branch);
	buf_release(&spec);
	return rc;
}
