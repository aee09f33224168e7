/*
 * git.h - the git side of a run (libgit2): the repository, the run's own
 * worktree and branch, status, diff, commit, save-and-reset, merge, push.
 *
 * Layout.  A run with trace id TRACE works in the linked worktree
 * RUNS/TRACE, RUNS = forge_git_runs_dir() (BASE/KEY outside the checkout,
 * BASE ${FORGE_WORKTREES:-${XDG_STATE_HOME:-~/.local/state}/forge/worktrees};
 * libgit2/git worktree name TRACE) on the branch forge/TRACE -- TRACE standing here for the run's name, which is
 * the trace id itself for a ULID and for any id git and a directory can
 * carry as it is (forge_git_run_name).  Refs kept for the run:
 *   refs/forge/TRACE/base      the commit the run started from
 *   refs/forge/TRACE/saved/N   what a reset discarded (N = 1, 2, ...)
 * The first worktree written also creates <root>/.forge/.gitignore
 * (forge_dir_ignore(): the database, vectors, worktrees and logs; when
 * absent, or exactly the "*" an older Forge wrote), so worktrees and the
 * database never show up as untracked files in the user's checkout, while
 * .forge/config.json, skills/ and prompts/ can be committed.
 *
 * Safety.  No function here changes the user's checkout (its HEAD, index or
 * working files), except forge_git_merge_ff(), which is explicit and
 * refuses when that checkout has local changes.  Branches other than
 * forge/TRACE are moved only by forge_git_merge_ff().
 *
 * An empty repository (no commits yet): creating a worktree from its
 * unborn HEAD (or from the branch HEAD names) makes a root commit with an
 * empty tree, message "forge: empty base commit", and puts forge/TRACE on
 * it; the user's branch stays unborn.  That commit is the run's base, so
 * the diff is "everything the run added", and forge_git_merge_ff() can
 * later bring the branch into the still-unborn base branch.
 *
 * Conventions (forge.h): functions return 0 on success and -1 after
 * forge_error(), whose message ends with libgit2's own; output parameters
 * come first; strings returned through `char **out` are malloc'd and the
 * caller's (free(3)); objects returned through `**out` are the caller's and
 * released with their *_free(), which accepts NULL; `const char *` getters
 * are borrowed from their object.  jv values follow json.h (returned jv are
 * new references).  Revisions ("main", "v1.0", "HEAD~1", a full or short
 * SHA) are anything git_revparse accepts and are peeled to a commit.
 *
 * libgit2 is initialised once per process, by the first open object or
 * forge_git_init(), and shut down at exit, so a program need not call
 * git_libgit2_init() itself.  Objects are not shared between threads.
 */
#ifndef FORGE_GIT_H
#define FORGE_GIT_H

#include <jv.h>
#include <stdbool.h>
#include <stdint.h>

/* Returned (instead of 0) when there was nothing to do; not an error. */
#define FORGE_GIT_NOTHING 1
/* Returned by forge_git_merge_commit() when the changes conflict. */
#define FORGE_GIT_CONFLICT 2
/* Returned by the merges when the person's files are in the way: files in
 * the checkout that git does not track, or uncommitted changes to tracked
 * ones; nothing changed, the message says which. */
#define FORGE_GIT_BLOCKED 3
/* Returned by the merges when the base branch moved between the caller's
 * look at it and the merge's move of it (another process moved it: a git
 * command of the person's, or a merge that did not hold
 * forge_git_merge_lock()); the checkout is left as it was, nothing moved;
 * the message says so.  Merging again sees where the branch is now. */
#define FORGE_GIT_MOVED 4
/* Returned (negative: a failure) by forge_git_repo_open() and
 * forge_git_open() when the repository is another user's and
 * safe.directory does not name it; the message says how to trust it. */
#define FORGE_GIT_NOT_OWNED (-2)
/* Returned (negative: a failure) by forge_git_worktree_open() when the
 * repository cannot hold a run's worktree as it is set up -- its .forge is
 * not a directory (forge_dir_check()), a file of the base would be at a
 * path longer than the system allows there, a ref is where the run's
 * branch or refs would go (a branch named "forge") -- and by
 * forge_git_repo_open() and forge_git_open() for a repository in a format
 * libgit2 cannot open, so the person must change it (a usage error, not a
 * failing dependency); the message says what to do, and nothing was made. */
#define FORGE_GIT_SETUP (-3)

/*
 * Initialise libgit2 once per process (later calls cost nothing); it is
 * shut down at exit.  Code that calls libgit2 itself calls this instead of
 * git_libgit2_init() and does not shut it down.  The system CA bundle that
 * libgit2's TLS (mbedtls) reads when it initialises (~140 certificates
 * parsed, several ms) is not read then: forge_git_tls_prepare() reads it
 * before an https remote is used, so local work never pays for it.
 */
void forge_git_init(void);

/* Read the CA bundle whose loading forge_git_init() deferred (nothing when
 * there is none, or it was read already).  -1 with a message when it cannot
 * be read. */
int forge_git_tls_prepare(void);

/* How often the CA bundle was really parsed in this process (for tests). */
int forge_git_ca_loads(void);

/* How often libgit2's TLS set-up (mbedtls: entropy, a seeded random
 * generator, the SSL configuration) ran in this process: 0 until the first
 * TLS stream, then 1; -1 when libgit2 is a shared library, whose set-up
 * runs in forge_git_init() (for tests). */
int forge_git_tls_inits(void);

/*
 * The main working tree of the repository that contains dir (absolute, as
 * realpath(3) gives it), found without libgit2 by walking up from dir the
 * way libgit2 does in the plain cases: the nearest directory with a .git
 * directory that is a valid, non-bare git directory of this user; or with
 * a .git file ("gitdir: PATH", a linked worktree) whose git directory
 * names its common directory (commondir) "DIR/.git": then DIR.
 * GIT_DIR and the other environment variables are not read (forge_git_open
 * does not read them either).  Returns 1 with *out set (malloc'd, no
 * trailing slash), 0 when no directory from dir up to / has a .git or is a
 * git directory, and -1 (no message, *out NULL) when only libgit2 can tell:
 * dir not absolute or not a directory, a .git symbolic link, a .git file
 * without commondir (a submodule) or whose commondir is not named .git (a
 * --separate-git-dir repository), a git directory that is not this user's
 * or that may be bare, dir inside a git directory, a .git on the start's
 * file system in the first directory up past a file system boundary (at
 * a boundary otherwise: 0, as libgit2 stops there).  Costs a few stat(2)
 * calls, no libgit2 initialisation.
 */
int forge_git_find_root(char **out, const char *dir);

/*
 * The repository the linked worktree at dir belongs to: the common git
 * directory (as realpath(3) gives it) that the git directory named by its
 * .git file ("gitdir: PATH") names in its commondir file, when both are
 * this user's and valid.  1 with *out set (malloc'd); 0 (*out NULL) when
 * dir is not such a worktree.  No libgit2: the files are read as git
 * writes them (forge gc, for a worktree it is about to remove).
 */
int forge_git_worktree_common(char **out, const char *dir);

struct git_repository;

/*
 * git_repository_open_ext(out, path, flags) with git's ownership check,
 * which every repository Forge opens goes through (libgit2's own is off:
 * libgit2 1.5 ignores safe.directory '*').  The working tree, a linked
 * worktree's .git file and the git directory must be this user's (for
 * root also root's, or the user's that ran sudo: SUDO_UID), or the working
 * tree (a bare repository: the git directory) must be named by
 * safe.directory in the system or global configuration: '*', or the path
 * itself (~/ expanded; an empty value clears the names before it).  With
 * extensions.worktreeConfig on, the working tree's config.worktree is read
 * over the repository's settings, as git reads it (libgit2 1.5 does not);
 * that extension and preciousObjects, which libgit2 1.5 refuses by
 * itself, are opened.  0; FORGE_GIT_NOT_OWNED after a message naming the
 * repository, its owner and the `git config --global --add
 * safe.directory` that trusts it; FORGE_GIT_SETUP after a message naming
 * what libgit2 cannot open -- a format extension (objectFormat sha256,
 * refStorage reftable, ...) or a format version over 1 -- and what to do;
 * -1 when libgit2 opens no repository (its error is the last one, and
 * there is no message: callers say it in their own words).
 */
int forge_git_repo_open(struct git_repository **out, const char *path, unsigned flags);

struct buf;
struct forge_git;            /* an open repository (its main working tree) */
struct forge_git_worktree;   /* one run's worktree */

/*
 * Open the repository that contains `path` (NULL: the current directory).
 * Its root (forge_git_root) is the main working tree, where .forge is, also
 * from a linked worktree.  A repository with no main working tree git
 * knows of -- a bare one's linked worktrees (git clone --bare; git worktree
 * add), a --separate-git-dir one's -- has the checkout path is in as its
 * root (from a run's worktree of one: ROOT, as the root file of its runs
 * dir, forge_git_runs_dir, names it).
 * Its checkout (forge_git_checkout) is the working tree path is in: HEAD,
 * the index, the files and the branch checked out -- what a run starts
 * from and a merge goes into -- are that worktree's when it is a linked
 * worktree of the person's (`git worktree add`), and the root's from a
 * run's own worktree (forge_git_runs_dir()/TRACE) or the root.  Fails with a
 * clear message (-1) for a path that is not in a repository (or whose
 * repository cannot be opened for want of file descriptors: "too many
 * open files", the limit named) and for a bare
 * repository; FORGE_GIT_NOT_OWNED for another user's, FORGE_GIT_SETUP for
 * one in a format libgit2 cannot open (forge_git_repo_open).
 */
int forge_git_open(struct forge_git **out, const char *path);
void forge_git_free(struct forge_git *g);

/*
 * Make dir (which exists) a new git repository whose HEAD branch has one
 * empty commit with `message`, by the user's user.name/user.email, else
 * Forge's.  -1 with a message naming dir.
 */
int forge_git_init_repo(const char *dir, const char *message);

/*
 * Who commits in the repository at or above dir, as git would say it
 * (user.name and user.email from its configuration: the repository's, the
 * user's, the system's).  *name and *email are the caller's to free.
 * 0, or -1 (no repository, or no identity configured) without an error
 * message.  Shares forge_git_written_paths()'s kept handle of dir's
 * repository (its config read again when its files changed).
 */
int forge_git_identity(char **name, char **email, const char *dir);

/* The main working tree, absolute, without a trailing slash.  Borrowed. */
const char *forge_git_root(const struct forge_git *g);
/* The working tree whose HEAD and files count (see forge_git_open). */
const char *forge_git_checkout(const struct forge_git *g);

/*
 * Where runs' worktrees are made, absolute, without a trailing slash:
 * BASE/KEY, BASE core/cachedir.h worktrees_base() ($FORGE_WORKTREES, else
 * ${XDG_STATE_HOME:-~/.local/state}/forge/worktrees), KEY the checkout's
 * name (at most 32 bytes of [A-Za-z0-9._-], others as '_'), '-' and 16
 * hex digits of the SHA-256 of the real path of the common git directory
 * (and of the root, for a repository with no main working tree); KEY/root
 * holds the root's path.  Out of the checkout, so that the project's test
 * runners, linters and `git clean -x` never meet the runs' copies (and not
 * under .git/, every path of which jest ignores).  With no BASE (no
 * absolute XDG_STATE_HOME or HOME), or when it cannot be made (after a
 * worktree was made: forge_git_worktree_open), ROOT/.forge/worktrees, where
 * an older Forge made them all.  A run's worktree that is elsewhere (made
 * by an older Forge, or before the checkout moved) is used where it is.
 * Borrowed.
 */
const char *forge_git_runs_dir(const struct forge_git *g);

/* Whether dir (absolute, as git_worktree_path gives it) is a run's
 * worktree of g's repository: directly in forge_git_runs_dir(), in another
 * KEY directory of BASE (its checkout moved since), or in an older Forge's
 * ROOT/.forge/worktrees.  By path alone. */
bool forge_git_is_run_worktree(const struct forge_git *g, const char *dir);

/* Whether dir is a run's worktree of any repository, by path alone: a
 * linked worktree (its .git a file) directly in a KEY directory of the
 * worktrees base, or in an older Forge's ROOT/.forge/worktrees.  A
 * sandbox_run_root_fn (os/sandbox.h). */
bool forge_git_is_run_root(const char *dir);

/* The commit `rev` names, as a 40-hex SHA. */
int forge_git_resolve(char **out, struct forge_git *g, const char *rev);

/*
 * Whether the object `sha` (40 hex digits) is in the repository: 1 when it
 * is, 0 when it is not (never made here, or pruned once nothing referred to
 * it: git gc, git prune), -1 with a message when sha is not an object id or
 * the object database cannot be read.
 */
int forge_git_has_object(struct forge_git *g, const char *sha);

/*
 * The bytes of `path` (relative to the repository's root, '/'-separated) in
 * the commit `rev` names, appended to *out: git show REV:PATH without a
 * process.  -1 with a message when rev does not resolve, or path is not a
 * file (a blob) in it; -2 with a message when it is a symbolic link there
 * (its blob is the link's target).
 */
int forge_git_read_blob(struct buf *out, struct forge_git *g, const char *rev, const char *path);

/* The longest trace id (state.schema.json's trace_id). */
#define FORGE_GIT_TRACE_MAX 128
/* The size of a run's name (forge_git_run_name) with its NUL. */
#define FORGE_GIT_RUN_NAME_SIZE 101

/* True when `trace` is a trace id as the schemas have it: 1 to 128
 * letters, digits, '.', '_', ':' and '-' (a ULID, or written by hand). */
bool forge_git_trace_valid(const char *trace);

/*
 * The name of trace's run in git and on disk -- its branch forge/NAME, its
 * refs refs/forge/NAME/..., its worktree RUNS/NAME (forge_git_runs_dir) -- into
 * out: the trace itself when it is letters, digits, '_' and '-' (at most
 * 100, the first a letter or digit: every ULID), else what a ref and a
 * directory can hold: its safe characters (at most 64, unsafe ones as
 * '_') and '.' and 16 hex digits of its SHA-256 ("JIRA-12.1" is
 * JIRA-12_1.2b6f…); a name so made is its own name.  Every place that
 * goes from a trace to its branch, refs or worktree asks this function.
 * 0, or -1 with a message when trace is not a trace id.
 */
int forge_git_run_name(char out[FORGE_GIT_RUN_NAME_SIZE], const char *trace);

/* True when name is a run's name (forge_git_run_name of itself): a
 * worktree directory or branch of a run, not another one. */
bool forge_git_run_name_valid(const char *name);

/*
 * Create the run's worktree, or reopen it when it exists (resume: then
 * `base` is ignored and the recorded base stands; forge_git_worktree_
 * reopened() says so).  `base` (NULL: "HEAD") is where forge/TRACE starts
 * when the branch does not exist yet; an existing forge/TRACE (a worktree
 * removed without its branch) is checked out as it is.  A worktree whose
 * directory was deleted by hand is pruned and made again.  A new worktree
 * that cannot be made leaves nothing behind: its directory and git's entry
 * of it are removed, and so are the branch and base ref made for it.
 * FORGE_GIT_SETUP (see above) when the repository cannot hold it, -1 on
 * another failure; both with a message.
 */
int forge_git_worktree_open(struct forge_git_worktree **out, struct forge_git *g,
			    const char *trace, const char *base);
/*
 * The run's branch forge/TRACE put back at `commit` (the run's last
 * checkpoint's) when it is gone -- deleted by a person, with or without
 * the worktree -- and refs/forge/TRACE/base at base_commit when that is
 * gone too (base_commit may be NULL).  1 when restored, 0 when the branch
 * is there (nothing done), -1 with a message.
 */
int forge_git_run_branch_restore(struct forge_git *g, const char *trace, const char *commit,
				 const char *base_commit);
void forge_git_worktree_free(struct forge_git_worktree *wt);

/* Getters, borrowed from wt: the directory, the trace, the branch
 * ("forge/NAME", NAME the trace's forge_git_run_name), the base commit's
 * SHA. */
const char *forge_git_worktree_path(const struct forge_git_worktree *wt);
const char *forge_git_worktree_trace(const struct forge_git_worktree *wt);
const char *forge_git_worktree_branch(const struct forge_git_worktree *wt);
const char *forge_git_worktree_base(const struct forge_git_worktree *wt);
/* True when forge_git_worktree_open() found the worktree already there. */
bool forge_git_worktree_reopened(const struct forge_git_worktree *wt);

/*
 * What the run's worktree lacks that a checkout made by git has, as one-
 * line notes appended to *out (a new array; empty when nothing): its
 * submodules -- the index's gitlinks (mode 160000), named in .gitmodules
 * or not (a repository added whole: `git add vendor/lib`) -- are not
 * checked out, and a filter driver that
 * the root .gitattributes names and the configuration defines
 * (filter.NAME.clean, .smudge or .process: git-lfs) does not run -- libgit2
 * runs neither, so such files are as stored in git (LFS pointer files) and
 * what the agent writes is committed without the clean filter.
 */
void forge_git_worktree_limits(jv *out, struct forge_git_worktree *wt);

/* The SHA of the worktree's HEAD (the tip of forge/TRACE). */
int forge_git_worktree_head(char **out, struct forge_git_worktree *wt);

/* The SHA of the tree of the worktree's HEAD commit: right after
 * forge_git_commit_all() (committed, or nothing to commit), the tree
 * forge_git_worktree_tree() would stage -- without staging again. */
int forge_git_worktree_head_tree(char **out, struct forge_git_worktree *wt);

/*
 * The SHA of the tree the worktree's files would commit as now: everything
 * staged as forge_git_commit_all() stages it (new, changed and deleted
 * files; not ignored ones), in memory only -- the index on disk is not
 * written, though the blobs go into the object database as `git add` puts
 * them there.  Equal SHAs mean the same tracked and untracked content.
 */
int forge_git_worktree_tree(char **out, struct forge_git_worktree *wt);

/*
 * The worktree's status against its HEAD (index and working files,
 * untracked files one by one, ignored files left out), sorted by path:
 * [{"path":…, "status":"added"|"modified"|"deleted"|"renamed"|"untracked"|
 * "typechange"}], a renamed entry also has "old_path".  A conflicted path
 * is "modified".  Names are json_path()'s: one that is not UTF-8 is quoted
 * (buf_path_unquoted() gives its bytes back), here and in forge_git_diff().
 */
int forge_git_status(jv *out, struct forge_git_worktree *wt);

/*
 * What a command Forge itself runs in a working tree -- implement's
 * validation, forge-test's test command -- leaves there (__pycache__, a
 * built binary, a report) is not the change: take the untracked files
 * before it with forge_git_untracked() and remove the new ones after it
 * with forge_git_clean_new(), so that a commit, or a later
 * forge-implement's check for work its state does not have
 * (forge_git_save_and_reset), takes only what the model made.  A file
 * there before (the model's own, committed or not) is never removed.
 */

/*
 * The untracked files of the working tree at dir (its top: no search
 * upwards), ignored ones left out, one by one as forge_git_status() lists
 * them: *out is an object whose keys are their paths (json_path() names;
 * a nested repository is one key ending in '/').  0, or -1 with a message
 * and *out jv_null().
 */
int forge_git_untracked(jv *out, const char *dir);

/*
 * Remove the untracked files of dir that are not keys of `before`
 * (consumed: forge_git_untracked()'s; not an object -- its listing failed
 * -- removes nothing), and the directories this leaves empty.  Each is
 * removed through directories opened without following a symbolic link,
 * never outside dir; a nested repository (a directory) stays.  *removed
 * gets the paths removed, a new array (empty when none).  0, or -1 with a
 * message when the status cannot be read (nothing removed).
 */
int forge_git_clean_new(jv *removed, const char *dir, jv before);

/*
 * The same around a command in a run's worktree that a process may not
 * live to clean up after (killed, interrupted, its supervisor gone):
 * forge_git_command_before() also writes the untracked set to a note in
 * the worktree's own git directory (.git/worktrees/NAME/, which commands
 * cannot write), forge_git_command_after() cleans (forge_git_clean_new)
 * and removes the note, and forge_git_command_recover(), called before a
 * stopped phase's work is saved (forge_git_save_and_reset) or a phase
 * starts again, finishes a cleanup a dead process left: it removes what
 * appeared since the note was written -- the command's files, as nothing
 * else writes in the worktree while a phase waits for its command -- and
 * the note.  Those files are not deleted but moved, at the same paths, to
 * a directory of this recovery's own beside the note
 * (.git/worktrees/NAME/forge-leftovers/ULID/): a file a person added to
 * the worktree of a dead phase looks the same, and must not be lost.
 * before: *before gets forge_git_untracked()'s set (jv_null()
 * when it cannot be listed); -1 with a message when it cannot be listed or
 * noted (a set listed but not noted is still cleaned after, in process).
 * after: consumes before; -1 when the status cannot be read (the note
 * stays) or the note cannot be removed.  recover: *removed gets the paths
 * taken out (empty when there was no note); *kept_in (when kept_in is not
 * NULL) that directory's path, malloc'd, or NULL when nothing was taken
 * out; -1 with a message when the note cannot be read or removed, the
 * directory cannot be made, or the status cannot be read.
 */
int forge_git_command_before(jv *before, const char *dir);
int forge_git_command_after(jv *removed, const char *dir, jv before);
int forge_git_command_recover(jv *removed, char **kept_in, const char *dir);

/*
 * Where what stopped commands left in the working tree dir was moved
 * (forge_git_command_recover: its own git directory's forge-leftovers/,
 * wherever the worktree is): *out gets that directory's path (malloc'd)
 * when it holds something, else NULL.  It goes with the worktree (git
 * worktree remove, forge gc); until then a person finds a file of theirs
 * there.  -1 with a message when dir is no git working tree.
 */
int forge_git_command_leftovers(char **out, const char *dir);

/*
 * What the worktree changed since `base` (NULL: the run's base commit):
 * the base commit's tree against the working files, staged or not, with
 * new untracked files and deletions.  *out_patch gets the unified patch as
 * git prints it (binary files as "Binary files a/X and b/X differ"),
 * *out_files [{"path", "action":"create"|"modify"|"delete", "additions",
 * "deletions"}] (plus "binary":true for a binary file), in path order.
 * Either out may be NULL when not wanted.
 */
int forge_git_diff(char **out_patch, jv *out_files, struct forge_git_worktree *wt,
		   const char *base);

/*
 * Stage everything (new files, changes, deletions; not ignored files) and
 * commit it on forge/TRACE with `message`, author and committer
 * "Forge <forge@localhost>" (no user.name needed).  *out gets the new
 * commit's SHA.  Returns FORGE_GIT_NOTHING with *out NULL when the tree is
 * the same as HEAD's ("nothing to commit").
 */
int forge_git_commit_all(char **out, struct forge_git_worktree *wt, const char *message);

/* forge_git_commit_all(), and *redacted (always set: an array, empty when
 * none, the caller frees it) gets the paths forge_git_redact_secrets()
 * rewrote before staging -- one scan of the worktree for keys, not two. */
int forge_git_commit_all_redacted(char **out, jv *redacted, struct forge_git_worktree *wt,
				  const char *message);

/*
 * Keys never reach a commit (llm.h: the keys Forge knows).  Every changed
 * or new regular file of the worktree (not ignored ones) that contains a
 * registered key has each occurrence replaced by "[REDACTED]" in the
 * worktree file itself, so the worktree, its diff and the commit agree.
 * forge_git_commit_all() and forge_git_save_and_reset() do this before
 * staging; call it first to learn which files were redacted: *out (may be
 * NULL) gets their paths, an array of strings.  -1 when a file with a key
 * cannot be rewritten or is over 256 MiB (the commit is then refused).
 */
int forge_git_redact_secrets(jv *out, struct forge_git_worktree *wt);

/*
 * Reset the worktree to `commit` (NULL: its HEAD): a hard reset of
 * forge/TRACE plus removal of untracked files (ignored files stay).  First
 * what a command cut short left is removed, not saved
 * (forge_git_command_recover); then what would be lost -- uncommitted
 * changes, untracked files, and commits of forge/TRACE after `commit` --
 * is kept on refs/forge/TRACE/saved/N (N the next free number): a commit whose parent is the old HEAD and whose
 * tree is the old working files (or the old HEAD itself when the files
 * were clean).  *out gets that ref's name.  Returns FORGE_GIT_NOTHING with
 * *out NULL when the worktree is clean and already at `commit`.
 */
int forge_git_save_and_reset(char **out, struct forge_git_worktree *wt, const char *commit);

/*
 * The worktrees of runs (forge_git_is_run_worktree), all of them
 * or only `trace`'s when not NULL, sorted by the run's name:
 * [{"name" (forge_git_run_name: a trace's own for a ULID), "path", "branch" (null when detached), "head" (null when
 * unknown), "valid" (its directory is there), "locked" (`git worktree
 * lock`: Forge never locks one, so the person did), "lock_reason" (the
 * reason given, else null)}].
 */
int forge_git_worktree_list(jv *out, struct forge_git *g, const char *trace);

enum forge_git_remove_flags {
	FORGE_GIT_REMOVE_BRANCH = 1 << 0,  /* also delete forge/TRACE and refs/forge/TRACE/base */
	FORGE_GIT_REMOVE_FORCE = 1 << 1,   /* even with uncommitted changes, or locked */
};

/*
 * Remove the run's worktree: prune its metadata and delete its directory.
 * Refuses when it has uncommitted changes unless FORGE_GIT_REMOVE_FORCE
 * (save them first with forge_git_save_and_reset()).  The saved refs are
 * always kept.  Returns FORGE_GIT_NOTHING when there was no worktree (the
 * branch is still deleted when asked).
 */
int forge_git_worktree_remove(struct forge_git *g, const char *trace, unsigned flags);

/*
 * `git worktree prune` for some worktrees only: forget the registrations
 * of the linked worktrees of the repository at repo (a working tree of it,
 * or its git directory) whose directory is gone, that are not locked, and
 * whose path `which` says yes to.  *out: the paths forgotten (with
 * dry_run, nothing changes: that would be), an array.  0, or -1 with a
 * message when the repository cannot be opened or its worktrees listed.
 */
int forge_git_worktrees_prune(jv *out, const char *repo, bool (*which)(const char *path), bool dry_run);

/* The best common ancestor of two revisions, as a SHA. */
int forge_git_merge_base(char **out, struct forge_git *g, const char *a, const char *b);

/* Whether the repository is a shallow clone (its history cut: a common
 * ancestor may lie beyond what it holds). */
bool forge_git_is_shallow(struct forge_git *g);

/*
 * Whether `base_ref` (e.g. "main") now names a commit other than
 * `base_commit` (a SHA, e.g. the run's base).  An unborn base branch has
 * not moved when base_commit is a forge empty base commit.
 */
int forge_git_base_moved(bool *out, struct forge_git *g, const char *base_ref,
			 const char *base_commit);

/*
 * Merges into a repository's branches, and so into the person's checkouts,
 * one at a time: forge_git_merge_lock() waits for and takes an flock(2)
 * on <commondir>/forge-merge.lock (the kernel releases it when the
 * process dies: it is never stale), which forge_git_merge_ff() and
 * forge_git_merge_commit() take too, around their check of the checkout,
 * its update and the branch's move.  A caller that looks at the branch or
 * the checkout first (is it clean, does the run still fast-forward it)
 * takes it before it looks, so that no other merge moves the branch or
 * writes the checkout in between.  Holds nest (counted in g); each
 * forge_git_merge_lock() that returned 0 is ended by one
 * forge_git_merge_unlock(); forge_git_free() releases what is left.
 * Returns 0, or -1 with a message.
 */
int forge_git_merge_lock(struct forge_git *g);
void forge_git_merge_unlock(struct forge_git *g);

/*
 * Fast-forward the local branch `base_branch` ("main" or "refs/heads/main")
 * to `rev` (e.g. "forge/TRACE"); *out (may be NULL) gets the new tip.
 * Refuses when `rev` does not descend from the branch's tip (only
 * fast-forwards are done here: a merge commit is left to a later change),
 * and when the branch is checked out in a run's worktree.  When it is
 * checked out in g's checkout or another checkout of the person's (the
 * main working tree, a linked worktree), that checkout must have no changes
 * to tracked files -- unless what differs is a fast-forward to rev's own,
 * interrupted while it updated the files or before the branch moved
 * (forge_git_checkout_midway(): the update is finished and the branch
 * moved now); its files and index are updated safely (an untracked file
 * in the way, an ignored one too, or one in a directory rev makes a file,
 * stops it before anything moves: FORGE_GIT_BLOCKED, the message naming
 * the files; so do files marked skip-worktree, and tracked ones marked
 * assume-unchanged that differ, each named as such; an index.lock of the
 * checkout stops it too, -1 naming it).  An unborn base branch
 * (empty repository) is created at `rev`.  Returns FORGE_GIT_NOTHING when
 * the branch is already at `rev`, FORGE_GIT_MOVED (nothing changed: the
 * checkout updated is put back) when the branch no longer fast-forwards to
 * `rev` or moved while the checkout was updated.  Holds
 * forge_git_merge_lock() throughout.
 */
int forge_git_merge_ff(char **out, struct forge_git *g, const char *base_branch, const char *rev);

/*
 * Where the branch `name` (refs/heads/X) is checked out: *out (malloc'd)
 * the working tree whose HEAD it is -- the main one, a linked worktree of
 * the person's, or a run's -- or NULL when none.  -1 when the worktrees
 * cannot be listed.
 */
int forge_git_checked_out_in(char **out, struct forge_git *g, const char *name);

/*
 * What a person does with a finished run (git_runs.c).
 *
 * diff_revs: forge_git_diff()'s outputs for the change from commit `from`
 * to commit `to` (e.g. "refs/forge/TRACE/base" and "forge/TRACE"), the
 * working files left out.
 * run_refs: the refs a run leaves (its branch refs/heads/forge/TRACE and
 * everything under refs/forge/TRACE/), of `trace` or of every run (NULL):
 * [{"name" (the run's, forge_git_run_name), "ref"}], sorted by ref within
 * the two groups.
 * ref_delete: delete the ref `name` (a full name); FORGE_GIT_NOTHING when
 * there is none; refuses a branch checked out in some worktree.
 * head_branch: the branch the main checkout is on ("main"); -1 when HEAD is
 * detached.
 * contains: *out is whether `ancestor` is `rev` or an ancestor of it.
 * merge_commit: merge `rev` into `base_branch` with a merge commit (two
 * parents, author and committer the user's user.name/user.email, else
 * Forge's) even when a fast-forward would do; the branch must be the one
 * checked out in the main checkout, which must have no changes to tracked
 * files; its files and index are updated safely (GIT_CHECKOUT_SAFE).
 * FORGE_GIT_NOTHING when `rev` is in the branch already,
 * FORGE_GIT_CONFLICT (nothing changed, the message names up to 5 paths)
 * when the two sides conflict, FORGE_GIT_BLOCKED when untracked files
 * are in the way (as forge_git_merge_ff()), or when git would sign the
 * commit or run hooks on it (forge_git_commit_by_git(): the message says
 * to merge with git), FORGE_GIT_MOVED (the checkout put back) when the
 * branch moved while the checkout was updated; it holds
 * forge_git_merge_lock() throughout.  *out (may be NULL) gets the new commit.
 * In a shallow clone the merge base is the nearest common commit the
 * clone's history has (-1 saying `git fetch --unshallow` when none).
 */
/* Whether the main checkout has changes to tracked files: 1, 0, or -1. */
int forge_git_checkout_dirty(struct forge_git *g);
/*
 * Whether the main checkout is a fast-forward from HEAD to rev that was
 * interrupted (killed) while it updated the files, or after, before the
 * branch moved: 1 when something differs from HEAD and every difference
 * is the fast-forward's own -- the index HEAD's tree or rev's, each path
 * that differs one the change makes, holding HEAD's blob or rev's (absent
 * where that side has none), or the start of rev's (the file being written
 * when it was killed) -- with at least one of rev's written; 0 when
 * not (the person's changes, a clean checkout), -1 on error.  Untracked
 * files where rev has none are not in the way.
 */
int forge_git_checkout_midway(struct forge_git *g, const char *rev);
/*
 * Whether run `trace` can start from `base` (NULL: HEAD): 1, with a message
 * saying what to do, when base is an unborn HEAD (no commits yet) while the
 * checkout holds files (untracked or staged, outside .forge/), which the
 * run's empty base commit would not have, or when the run's worktree could
 * not be made (forge_git_worktree_open()'s FORGE_GIT_SETUP: .forge is not a
 * directory, a file of base would be at a path longer than PATH_MAX in it,
 * a branch named "forge" is where the run's forge/TRACE would go);
 * 0 when it can (a repository with no files at all starts from the empty
 * base; a base that does not resolve is left to forge_git_worktree_open()
 * to report); -1 when the status cannot be read or trace is not a trace id.
 */
int forge_git_base_check(struct forge_git *g, const char *base, const char *trace);
/*
 * Whether a run can start from `base` (NULL: HEAD) at all: 0 when it names a
 * commit, or the unborn HEAD of a repository with no commits yet (HEAD or
 * the branch it names); -1 with libgit2's message when it does not resolve
 * or names no commit (a tree, a blob).
 */
int forge_git_base_resolves(struct forge_git *g, const char *base);
int forge_git_diff_revs(char **out_patch, jv *out_files, struct forge_git *g, const char *from,
			const char *to);
/* The patch from one revision to another as `git apply` takes it: a
 * binary file's change as a binary patch, bytes that are not UTF-8 kept
 * (*out malloc'd; a patch holds no NUL). */
int forge_git_patch_revs(char **out, struct forge_git *g, const char *from, const char *to);
int forge_git_run_refs(jv *out, struct forge_git *g, const char *trace);
/*
 * The work kept on run `trace`'s saved refs (refs/forge/NAME/saved/N:
 * forge_git_save_and_reset(), what a resume, a cancel or an implement that
 * started again reset away) that `tip` (a revision: the run's branch, or
 * its base when the branch is gone) does not hold, by N:
 * [{"ref", "from" (the SHA the saved change is measured from: the merge
 * base of the ref and tip, where it left the branch's history), "files"
 * (forge_git_diff()'s list, of from..ref)}].  A ref whose change tip holds
 * -- every file it changes has there the content it has on the ref (the
 * work was done again, or merged) -- or that changes nothing is left out.
 * 0 ([] when none), or -1 with a message: also when a saved ref names an
 * object the repository does not have (git cannot tell what it holds).
 */
int forge_git_run_saved(jv *out, struct forge_git *g, const char *trace, const char *tip);
int forge_git_ref_delete(struct forge_git *g, const char *name);
int forge_git_head_branch(char **out, struct forge_git *g);
int forge_git_contains(bool *out, struct forge_git *g, const char *rev, const char *ancestor);
/*
 * Remove the lock files a process killed in the middle of a git write of
 * run `trace` left (its branch's ref lock; its worktree's index, HEAD and
 * ORIG_HEAD locks), which fail every later commit of the run.  Only for the
 * holder of the run's lease: no one else writes there.  How many were
 * removed, or -1.
 */
int forge_git_clear_run_locks(struct forge_git *g, const char *trace);
/*
 * A lock file of one of run `trace`'s saved refs
 * (<commondir>/refs/forge/NAME/saved/N.lock, forge_git_save_and_reset())
 * last changed before `before_ms` (ms since the epoch): a process killed
 * while it saved left it, and the save fails on it until it is removed.
 * *out gets its path (the caller frees it), NULL when there is none.
 * 0, or -1 with a message when the directory cannot be read.
 */
int forge_git_saved_lock(char **out, struct forge_git *g, const char *trace, int64_t before_ms);
int forge_git_merge_commit(char **out, struct forge_git *g, const char *base_branch, const char *rev,
			   const char *message);
/*
 * What git does to a commit made in g's checkout that Forge's commits
 * (libgit2) cannot: sign it (commit.gpgsign) or run a hook of a merge
 * commit on it (pre-merge-commit, prepare-commit-msg, commit-msg: an
 * executable file in core.hooksPath or the common directory's hooks/).
 * *out NULL when nothing, else what, as words ("commit.gpgsign is set",
 * "the commit-msg hook '/r/.git/hooks/commit-msg' would run"; malloc'd).
 * 0, or -1 when the configuration cannot be read.
 */
int forge_git_commit_by_git(char **out, struct forge_git *g);

/*
 * Push `refspec` ("forge/TRACE", "refs/heads/a:refs/heads/b", "+src:dst";
 * a short branch name is expanded) to `remote`: a configured remote's name
 * or a URL or path (e.g. a local bare repository).  Fails when the remote
 * rejects the update (e.g. not a fast-forward, a hook declined), naming
 * the reason.  A repository on this machine takes it through `git
 * send-pack` (git_internal.h): its hooks run and its receive.* settings
 * hold, as for `git push`.
 */
int forge_git_push(struct forge_git *g, const char *remote, const char *refspec);

/*
 * git the program, started by Forge on a repository whose files a model
 * wrote (a run's worktree, a helper's): the settings it runs with, so that
 * nothing the repository names runs as the user outside the sandbox -- no
 * hook (a relative core.hooksPath, as husky's .husky/_ or a .githooks
 * directory, is a directory of that worktree) and no fsmonitor.  Such a
 * git also gets an environment without the keys (llm_scrub_env), and its
 * diffs --no-ext-diff --no-textconv.
 * forge_git_guard: the NAME=VALUE settings, NULL-terminated; on git's
 * command line, "-c" before each.
 * forge_git_guard_env(): the same as "GIT_CONFIG_PARAMETERS=..." -- how
 * `git -c` hands its settings to the gits it starts -- for the
 * environment of a script, whose every git gets them; malloc'd.  For an
 * environment without GIT_* variables of its own.
 */
extern const char *const forge_git_guard[];
char *forge_git_guard_env(void);

/*
 * Fetch `refspec` ("+refs/pull/7/head:refs/forge/pull/7/head", full ref
 * names) from `remote` (a configured remote's name, a URL or a path) into
 * the repository, no tags.  remote_url: remote.NAME.url of a configured
 * remote (insteadOf not applied), else `remote` itself.
 */
int forge_git_fetch(struct forge_git *g, const char *remote, const char *refspec);
int forge_git_remote_url(char **out, struct forge_git *g, const char *remote);

/*
 * Credentials of forge_git_push() and forge_git_fetch(): the URL's own
 * (https://user:token@host/...), else, over http(s), git's credential
 * helpers (`git credential fill`, approve after a push or fetch that
 * worked, reject when the server refused them; never a terminal prompt),
 * over ssh the SSH agent, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa, the
 * server's host key checked against ~/.ssh/known_hosts and
 * /etc/ssh/ssh_known_hosts (an unknown or changed key fails).  A
 * failure's message names the remote as forge_git_url_display() shows it
 * and never holds a password.
 *
 * forge_git_url_display: a malloc'd copy of url (a remote's name, a path or
 * a URL) with the password of its userinfo shown as "***"
 * (https://me:***@host/x); NULL for NULL.  For messages and events.
 */
char *forge_git_url_display(const char *url);

/*
 * A run's refs through a shared remote (a configured remote's name, a URL
 * or a path), so that another clone can carry the run on (git_share.c).
 * forge_git_run_push: force-pushes refs/forge/TRACE/base and forge/TRACE.
 * forge_git_run_fetch: when the repository lacks forge/TRACE, fetches both
 * (no worktree is made); 0 when forge/TRACE is here now, 1 when the remote
 * does not have it either, -1 with a message.
 */
int forge_git_run_push(struct forge_git *g, const char *remote, const char *trace);
int forge_git_run_fetch(struct forge_git *g, const char *remote, const char *trace);

/*
 * The paths in the index of the repository at `dir` itself (a linked
 * worktree's own index; no search upwards), the files git tracks: the
 * first `max` stage-0 entries in index order into *out (a new array of
 * strings), the index's entry count into *total.  -1 with forge_error (and
 * *out jv_null()) when dir is not a repository.
 */
int forge_git_tracked_files(jv *out, size_t *total, const char *dir, size_t max);

/*
 * Of `paths` (borrowed: an array of paths relative to the repository at
 * `dir`, no search upwards), those git ignores and does not track: what a
 * commit of the work tree leaves out.  *out is a new array (empty when
 * none, or when dir is not a repository: nothing to say then).
 */
void forge_git_ignored_paths(jv *out, const char *dir, jv paths);

/*
 * Of `paths` (borrowed, as forge_git_ignored_paths), those inside a
 * submodule of the repository at `dir` -- below a gitlink (mode 160000)
 * of its index, whose files a commit of the work tree never takes: *out
 * is a new array of {"path", "submodule" (the gitlink's path)}, empty
 * when none or when dir is not a repository.
 */
void forge_git_submodule_paths(jv *out, const char *dir, jv paths);

/*
 * Both of the above from one opening of the repository at `dir` (a tool
 * that wrote files asks both): *ignored as forge_git_ignored_paths() says,
 * *inside as forge_git_submodule_paths(); either may be NULL (not asked).
 * The handle of dir's repository is kept for the process and shared with
 * forge_git_identity() (an opening is ~65 system calls; each write tool of
 * a session asks): what it says is still what is on disk at the call
 * (config, ignore files, index and refs are checked against their files).
 * Thread-safe (one caller at a time on the handle).
 */
void forge_git_written_paths(jv *ignored, jv *inside, const char *dir, jv paths);

/*
 * The gitlinks (mode 160000: submodules) of the index of the repository
 * whose working tree is dir, as paths relative to dir: *out a
 * NULL-terminated vector (it and each path malloc'd, the caller's to
 * free), NULL when there is
 * none or dir is not the root of a working tree.  0, or -1 without a
 * message (no repository).  Shares forge_git_identity()'s kept handle.
 * A sandbox_gitlinks_fn (os/sandbox.h).
 */
int forge_git_gitlinks(char ***out, const char *dir);

/* libgit2's version ("1.5.1"), malloc'd; NULL when libgit2 cannot tell. */
char *forge_git_library_version(void);

#endif
