/*
 * git_push_local.c - a push to a repository on this machine (a path or a
 * file:// URL) through `git send-pack` (git_internal.h), so that the
 * remote's `git receive-pack` takes it as it takes `git push`: its
 * pre-receive, update and post-receive hooks run (and may decline) and its
 * receive.* settings (denyNonFastForwards, denyCurrentBranch, ...) hold.
 * libgit2's local transport writes the objects and refs itself and runs
 * none of them.
 */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/secret.h"
#include "os/proc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What send-pack's output may fill: its status lines and git's messages. */
#define PUSH_OUT_CAP 65536
/* At most this much of what the remote said goes into a message. */
#define REMOTE_SAID_MAX 1024

bool forge_git_url_local(const char *url)
{
	struct stat st;

	if (strncmp(url, "file://", 7) == 0)
		return true;
	/* libgit2's own choice on Unix: a ':' makes it ssh ("host:path"),
	 * else an existing directory is a local repository */
	return !strchr(url, ':') && stat(url, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Variables that point git at a repository other than g's (git clears the
 * same ones for the receive-pack it starts): libgit2 reads none of them. */
static bool repo_var(const char *entry)
{
	static const char *const names[] = {
		"GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_INDEX_FILE",
		"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR",
		"GIT_NAMESPACE", "GIT_PREFIX", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
		"GIT_CONFIG_COUNT", "GIT_GRAFT_FILE", "GIT_NO_REPLACE_OBJECTS",
		"GIT_REPLACE_REF_BASE", "GIT_SHALLOW_FILE", NULL
	};

	for (const char *const *n = names; *n; n++) {
		size_t len = strlen(*n);
		if (strncmp(entry, *n, len) == 0 && entry[len] == '=')
			return true;
	}
	return false;
}

/* The caller's environment (its strings borrowed: free the array alone)
 * without the model keys -- the remote's hooks run in it -- nor the
 * variables repo_var() names. */
static char **push_env(void)
{
	extern char **environ;
	size_t n = 0, w = 0;

	while (environ && environ[n])
		n++;
	char **env = xcalloc(n + 1, sizeof *env);
	for (size_t i = 0; i < n; i++)
		if (!repo_var(environ[i]))
			env[w++] = environ[i];
	env[w] = NULL;
	llm_scrub_env(env);
	return env;
}

/* "'REF' rejected: REASON" for each "error REF REASON" line of send-pack's
 * --helper-status output, ", "-joined into why; "no match" is a ref of
 * the remote that no refspec names, no rejection. */
static void add_rejections(struct buf *why, const char *out)
{
	for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		size_t len = strcspn(p, "\n");

		if (len < 6 || strncmp(p, "error ", 6) != 0)
			continue;
		const char *ref = p + 6;
		size_t rn = strcspn(ref, " \n");
		const char *reason = ref[rn] == ' ' ? ref + rn + 1 : "rejected";
		size_t reason_n = ref[rn] == ' ' ? strcspn(reason, "\n") : strlen(reason);

		if (reason_n == 8 && strncmp(reason, "no match", 8) == 0)
			continue;
		if (why->len)
			buf_adds(why, ", ");
		buf_addf(why, "'%.*s' rejected: %.*s", (int)rn, ref, (int)reason_n, reason);
	}
}

/* The remote's lines of err ("remote: ...": its hooks' and receive-pack's
 * messages) into said, "; "-joined, git's trailing padding cut. */
static void add_remote_said(struct buf *said, const char *err)
{
	for (const char *p = err; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		size_t len = strcspn(p, "\n");

		if (len < 8 || strncmp(p, "remote: ", 8) != 0)
			continue;
		const char *s = p + 8;
		size_t n = len - 8;
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\r' || s[n - 1] == '\t'))
			n--;
		if (!n || said->len >= REMOTE_SAID_MAX)
			continue;
		if (said->len)
			buf_adds(said, "; ");
		buf_add(said, s, n);
	}
}

/* The first "fatal: "/"error: " line of err, else its first line. */
static void first_complaint(struct buf *b, const char *err)
{
	const char *line = err && *err ? err : "no message";

	for (const char *p = err; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, "fatal: ", 7) == 0 || strncmp(p, "error: ", 7) == 0) {
			line = p;
			break;
		}
	buf_add(b, line, strcspn(line, "\n"));
}

/* The failure's message (forge_error) for send-pack's result r. */
static int push_failed(const struct proc_result *r, const char *what, const char *shown)
{
	struct buf why = BUF_INIT, said = BUF_INIT;

	add_rejections(&why, r->out.buf);
	add_remote_said(&said, r->err.buf);
	if (why.len)
		forge_error("push of '%s' to '%s' failed: %s%s%s%s", what, shown, why.buf,
			    said.len ? " (the remote said: " : "", said.len ? said.buf : "", said.len ? ")" : "");
	else if (r->exit_code == 127 && !r->out_bytes)
		forge_error("cannot push '%s' to '%s': git is not on PATH (a push to a repository on "
			    "this machine goes through git receive-pack, which runs its hooks)", what, shown);
	else {
		first_complaint(&why, r->err.buf);
		forge_error("cannot push '%s' to '%s': git send-pack exited %d: %s", what, shown,
			    r->exit_code, why.buf);
	}
	buf_release(&why);
	buf_release(&said);
	return -1;
}

int forge_git_push_local(struct forge_git *g, const char *url, const char *const *specs, size_t n,
			 const char *what, const char *shown)
{
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	struct buf gitdir = BUF_INIT;
	/* a plain path as libgit2 takes it: from this process's directory */
	char *abs = strncmp(url, "file://", 7) == 0 ? NULL : realpath(url, NULL);
	const char **argv = xcalloc(n + 7, sizeof *argv);
	char **env = push_env();
	size_t k = 0;
	int rc = -1;

	buf_addf(&gitdir, "--git-dir=%s", git_repository_path(g->repo));
	argv[k++] = "/usr/bin/env";
	argv[k++] = "git";
	argv[k++] = gitdir.buf;
	argv[k++] = "send-pack";
	argv[k++] = "--helper-status";  /* "ok REF" / "error REF REASON" on stdout */
	argv[k++] = abs ? abs : url;
	for (size_t i = 0; i < n; i++)
		argv[k++] = specs[i];
	argv[k] = NULL;
	o.argv = argv;
	o.envp = env;
	o.cwd = g->root;
	o.out_cap = PUSH_OUT_CAP;
	/* as `git push` from a shell: ^C reaches it, and what a post-receive
	 * hook leaves running (a deployed service) is not killed with it */
	o.keep_pgrp = true;
	if (proc_run(&r, &o) < 0) {
		forge_error_prefix("cannot push '%s' to '%s': cannot run git", what, shown);
		goto out;
	}
	rc = r.exit_code == 0 ? 0 : push_failed(&r, what, shown);
out:
	proc_result_release(&r);
	buf_release(&gitdir);
	free(argv);
	free(env);
	free(abs);
	return rc;
}
