/*
 * git_internal.h - what lib/git*.c share; not part of the contract (git.h).
 */
#ifndef FORGE_GIT_INTERNAL_H
#define FORGE_GIT_INTERNAL_H

#include "core/buf.h"
#include "git/git.h"

#include <git2.h>
#include <stdbool.h>

struct forge_git {
	git_repository *repo;   /* opened on the checkout: HEAD, index and files are its */
	char *root;             /* the main working tree (.forge), no trailing slash */
	char *checkout;         /* the working tree a person is in: root, or a linked
				 * worktree of theirs; no trailing slash */
	char *runs;             /* where runs' worktrees are made (forge_git_runs_dir) */
	char *runs_base;        /* the directory of every repository's runs dir
				 * (core/cachedir.h worktrees_base, its real path
				 * when it is there); NULL: runs is the legacy one */
	int merge_lock_fd;      /* forge_git_merge_lock()'s, while merge_locks > 0 */
	int merge_locks;        /* how many holds of it are not released yet */
};

struct forge_git_worktree {
	git_repository *repo;   /* opened on the worktree */
	char *trace;
	char *name;             /* the run's name in git (forge_git_run_name) */
	char *path;             /* <runs>/NAME, or an older Forge's <root>/.forge/worktrees/NAME */
	char *branch;           /* forge/NAME */
	char *base;             /* the base commit's SHA */
	bool reopened;
	bool safecrlf_off;      /* repo reads core.safecrlf false (git_diff.c) */
};

/* A run's worktree whose branch no longer exists (its HEAD is unborn):
 * the error, naming the branch, the commit it was at (from the worktree's
 * HEAD reflog, else base: the run's base commit, or NULL) and how to
 * resume.  -1. */
int forge_git_branch_gone(git_repository *wt_repo, const char *branch, const char *trace,
			  const char *base);

/*
 * Whether every file of commit `id` (NULL: the empty base) fits in the
 * worktree RUNS/NAME of the run named `name` (forge_git_run_name), runs
 * the directory of runs' worktrees (forge_git_runs_dir): its path there,
 * and the worktree's .git, shorter than PATH_MAX.  0, or FORGE_GIT_SETUP
 * with a message naming the longest and saying what to do (root, the
 * repository's, named in it); -1 when the tree cannot be read.
 */
int forge_git_tree_fits(git_repository *repo, const git_oid *id, const char *runs, const char *root,
			const char *name);

/* An older Forge's directory of runs' worktrees, <root>/.forge/worktrees:
 * those made there are still used where they are.  malloc'd. */
char *forge_git_legacy_runs_dir(const char *root);

/* Whether name (a directory's, no slash) has the shape of a repository's
 * runs dir in the worktrees base: NAME-HEX, 16 hex digits (git.c). */
bool forge_git_runs_key_shaped(const char *name);

/* Whether path is a directory directly in dir (dir/NAME, a trailing slash
 * allowed), by name: nothing is looked at on disk. */
bool forge_git_directly_in(const char *path, const char *dir);

/*
 * Whether the refs of the run named `name` (forge_git_run_name) can be
 * made: no branch "forge" (refs/heads/forge), no ref refs/forge or
 * refs/forge/NAME is there, which git cannot hold beside refs under them.
 * 0; FORGE_GIT_SETUP with a message naming the ref and how to move it;
 * -1 when a ref cannot be read.
 */
int forge_git_run_refs_clear(git_repository *repo, const char *name);

#define FORGE_GIT_EMPTY_BASE_MESSAGE "forge: empty base commit\n"

/* The merge base of a and b in a shallow clone, where libgit2's fails at
 * the cut (and leaks on the way out): the nearest ancestor of b (breadth
 * first) that a has too, as far as the history goes.  -1 with a message
 * when they share none there. */
int forge_git_shallow_merge_base(git_oid *out, git_repository *repo, const git_oid *a, const git_oid *b);

/* forge_error() with ": <libgit2's last message>" appended when there is
 * one (and, when it is a full table of open files, EMFILE or ENFILE, which
 * limit and what to do); returns -1. */
int forge_git_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* forge_git_fail("cannot read the status of worktree 'workdir'") after a
 * failed status; when libgit2 gave up on a directory nested deeper than it
 * walks (a command's mkdir -p), the message names the directory and says
 * to remove it.  Returns -1. */
int forge_git_fail_status(const char *workdir);

/* git_graph_descendant_of() (1 yes, 0 no, <0 error), also in a shallow
 * clone, where libgit2 1.5 fails with "object not found" at the cut in
 * the history: there the walk from commit goes as far as the history
 * goes. */
int forge_git_descendant_of(git_repository *repo, const git_oid *commit, const git_oid *ancestor);

/*
 * Before libgit2 writes tree into repo's working files: what stands there
 * where tree has a directory but is not one, or where tree has a file
 * (not a link) but is neither a file nor a directory -- a symbolic link
 * (made by sandboxed code in a run's worktree, to a directory or a file
 * outside), a FIFO.  libgit2 1.5's checkout writes through such a link,
 * outside the working files (hunt66 #1); git refuses ("beyond a symbolic
 * link") or replaces the link.  The tree is walked from the top with
 * openat(O_NOFOLLOW), no link ever followed, nothing read below a
 * non-directory.  One that keep (may be NULL: the checkout's HEAD tree)
 * has as a file or link at that path is left to the checkout, which
 * replaces it or refuses.  Any other: with `remove` unlinked (never
 * followed; the checkout then writes the directory or file anew), else
 * refused: FORGE_GIT_BLOCKED with a message after `what` naming it,
 * nothing changed.  0 when none is left; -1 with a message when one cannot
 * be read or removed.  Borrows its arguments.
 */
int forge_git_dirs_clear(git_repository *repo, git_tree *tree, git_tree *keep, bool remove, const char *what);

/*
 * Bring the main checkout's files and index to `commit` safely
 * (GIT_CHECKOUT_SAFE).  When files there that git does not track would be
 * overwritten, nothing changes and FORGE_GIT_BLOCKED is returned, with a
 * message naming them (up to 5) after `what` ("cannot fast-forward
 * 'main'"); -1 on another failure, and (nothing written) when the
 * checkout's index.lock exists, the message naming it.
 */
int forge_git_checkout_commit(struct forge_git *g, git_commit *commit, const char *what);

/*
 * An flock(2) on <commondir>/NAME, waited for: the fd (close it to
 * release; the kernel releases it when the process dies, so no lock is
 * ever stale), or -1 with a message.
 */
int forge_git_flock(struct forge_git *g, const char *name);

/*
 * The checkout g is on put back from commit `written` (a merge's, whose
 * files and index were written there) to commit `old` (NULL: an unborn
 * branch, no file), safely: a file changed since it was written stays.
 * For a merge whose branch `branch` moved before it could move it.  0, or
 * -1 with a message.
 */
int forge_git_put_back(struct forge_git *g, const git_oid *old, const git_oid *written, const char *branch);

/* A malloc'd 40-hex copy of id. */
char *forge_git_hex(const git_oid *id);

/* The commit `rev` names in repo.  *out_unborn (may be NULL) is set when
 * rev is "HEAD" or the branch of an unborn HEAD, and then *out is zeroed
 * and 0 is returned. */
int forge_git_peel(git_oid *out, bool *out_unborn, git_repository *repo, const char *rev);

/* The fixed signature "Forge <forge@localhost>", now. */
int forge_git_signature(git_signature **out);

/* A malloc'd "a/b". */
char *forge_git_path(const char *a, const char *b);

/* *out_patch (the unified patch) and *out_files (forge_git_diff()'s file
 * list) of diff; either may be NULL.  On failure *out_files is invalid. */
int forge_git_diff_output(char **out_patch, jv *out_files, git_diff *diff);

/* Push the full refspecs specs[0..n-1] ("+refs/a:refs/b") to `remote` in
 * one connection; messages name `what`.  See forge_git_push(). */
int forge_git_push_refspecs(struct forge_git *g, const char *remote, const char *const *specs, size_t n,
			    const char *what);

/*
 * A push to a repository on this machine (git_push_local.c).  libgit2's
 * local transport writes the objects and refs itself: the remote's hooks
 * (pre-receive, update, post-receive) would not run nor its receive.*
 * settings hold.  So such a push goes through `git send-pack` (git on
 * PATH), whose `git receive-pack` does all that as for `git push`; no git
 * on PATH fails the push (a policy hook must not be bypassed, nor a
 * post-receive deploy skipped).
 * forge_git_url_local: url (a remote's URL or path) is one libgit2 would
 * take with its local transport: file://..., or an existing directory
 * (no ':' in it: "host:path" is ssh).
 * forge_git_push_local: push the full refspecs specs[0..n-1] to url;
 * messages name `what` and the remote as `shown`.  The remote's hooks run
 * in the caller's environment without the model keys.  0, or -1 with a
 * message naming each rejected ref, its reason and what the remote said.
 */
bool forge_git_url_local(const char *url);
int forge_git_push_local(struct forge_git *g, const char *url, const char *const *specs, size_t n,
			 const char *what, const char *shown);

/*
 * Credentials for one push or fetch (git_cred.c): the payload of
 * forge_git_cred_acquire(), libgit2's credential callback.  Over http(s) it
 * asks git's own credential helpers (`git credential fill` run in `dir`,
 * so credential.helper of the repository, the user and the system apply:
 * store, cache, osxkeychain, manager ...; never a terminal prompt), once;
 * called again for the same operation (the server refused them) it tells
 * the helpers (`git credential reject`) and fails.  Over ssh: the agent
 * (SSH_AUTH_SOCK), then ~/.ssh/id_ed25519, id_ecdsa, id_rsa, the URL's
 * user or the local one.  forge_git_cred_done(c, ok) after the operation
 * tells the helpers a credential worked (`git credential approve`).  The
 * password is registered with llm_secret_add() (redacted wherever secrets
 * are) and wiped on release.  `dir` and `remote` are borrowed.
 */
struct forge_git_cred {
	const char *dir;        /* where `git credential` runs; NULL: the caller's */
	const char *remote;     /* as the user named it */
	struct buf desc;        /* protocol=, host=, path=, username= lines */
	char *username, *password;
	int userpass_tries;
	int ssh_step;           /* 0: the agent; 1..3: a key file */
	bool filled;            /* username/password came from the helpers */
	int port;               /* an ssh URL's port (22) */
};

void forge_git_cred_init(struct forge_git_cred *c, const char *dir, const char *remote);
int forge_git_cred_acquire(git_credential **out, const char *url, const char *user, unsigned int allowed,
			   void *payload);
void forge_git_cred_done(struct forge_git_cred *c, bool ok);
/* The URL the remote resolved to: an ssh URL's port, for the host key. */
void forge_git_cred_url(struct forge_git_cred *c, const char *url);
/* libgit2's certificate_check (payload: the same struct forge_git_cred):
 * an ssh host key must be in ~/.ssh/known_hosts or /etc/ssh/ssh_known_hosts
 * (`ssh-keygen -F`, so hashed entries count; "[host]:port" off port 22),
 * as ssh's StrictHostKeyChecking=yes; TLS is left to libgit2. */
int forge_git_cred_check_host(git_cert *cert, int valid, const char *host, void *payload);
void forge_git_cred_release(struct forge_git_cred *c);

#endif
