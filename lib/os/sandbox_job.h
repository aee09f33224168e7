/*
 * sandbox_job.h - run a command that executes code from the worktree (a
 * test suite, a build, a linter, a deploy script from the branch) in the
 * same sandbox as the run_command tool: sandbox_run() of sandbox.h with the
 * configured policy, the same environment scrub (sandbox_build_env: no
 * keys, only PATH, LANG, LC_*, TZ, USER, LOGNAME, sandbox.env and the names
 * the caller passes), Landlock confining writes to `root`, a temporary
 * directory of its own (HOME and TMPDIR, removed afterwards) and
 * sandbox.writable, and the network cut as sandbox.network says.
 *
 * Forge's own work (git through libgit2, `git show` of a commit, the
 * health check over libcurl, the phase programs the supervisor starts)
 * does not run worktree code and does not come here.
 *
 * Per command kind (DESIGN.md §3):
 *   tests (forge-test), validation (forge-implement), linters
 *   (forge-review; root is the post-image copy), build_command
 *                        network as configured (cut by default)
 *   deploy_command, rollback_command
 *                        allow_network: a deploy pushes and uploads; writes
 *                        stay confined (add targets to sandbox.writable)
 */
#ifndef FORGE_SANDBOX_JOB_H
#define FORGE_SANDBOX_JOB_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "os/proc.h"

struct sandbox_policy;

struct sandbox_job {
	const struct sandbox_policy *policy;  /* NULL: the built-in defaults */
	const char *command;            /* run as /bin/sh -c command */
	const char *root;               /* writable: the worktree (or a copy) */
	const char *cwd;                /* where to run; NULL = root */
	const char *tmp;                /* HOME and TMPDIR (writable); NULL = a new one
	                                   for this command, removed afterwards */
	char *const *base_env;          /* NULL = environ; scrubbed either way */
	const char *const *pass_env;    /* further variable names passed from base_env
	                                   (NULL-terminated; may be NULL) */
	long timeout_ms;                /* 0 = the policy's */
	size_t output_cap;              /* 0 = the policy's */
	bool (*cut_count)(const char *line, size_t len); /* proc_opts.cut_count; may be NULL */
	bool allow_network;             /* keep the network whatever sandbox.network says */
	bool untranslated;              /* messages untranslated, the rest of the locale
	                                   kept (sandbox_env_untranslated): Forge reads
	                                   the output */
};

/*
 * Run job->command under the sandbox (sandbox_run()).  *out as proc_run's:
 * always initialised, release it with proc_result_release().  *unconfined
 * (may be NULL) gets what confinement was missing, or jv_null().  -1 with
 * a message when it could not run: no temp dir, a required confinement
 * missing, the shell could not start.
 */
int sandbox_job_run(struct proc_result *out, jv *unconfined, const struct sandbox_job *job);

/* Append argv to b as one shell command line, every word single-quoted
 * ('it'\''s'), so a program and its arguments can go through /bin/sh -c. */
void sandbox_shell_join(struct buf *b, const char *const *argv);

#endif
