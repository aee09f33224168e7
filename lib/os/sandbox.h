/*
 * sandbox.h - what the tools may touch: paths confined to the run's
 * worktree, the command policy (deny / ask lists), the environment of
 * commands, and sandboxed command execution (proc.h + landlock.h).
 *
 * PATHS.  Every path a model gives is relative to the worktree root.
 * sandbox_path_clean() refuses, before touching the file system: absolute
 * paths, any ".." component, NUL bytes, and any component named ".git"
 * (any case).  The file system is then entered only through the root's
 * directory fd with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so a
 * symlink may point elsewhere inside the worktree but never outside it
 * (where openat2 is missing, the same is checked on the resolved path).
 * After every open the real path of the fd is checked again: it must lie
 * beneath the root and have no ".git" component, so a symlink into .git is
 * refused for reading and writing alike.  Writes go to a temporary file in
 * the target's directory and are renamed over it (atomic per file); a
 * symlink inside the tree is written through to its target.  Writes and
 * removals under the top-level .forge directory (Forge's configuration,
 * database and worktrees; any case) are refused like .git, also through a
 * symlink, so an agent cannot rewrite the rules of the next run; reading
 * there is allowed.
 *
 * COMMAND POLICY.  sandbox.deny and sandbox.ask (plus *_extra) are PCRE2
 * regexes (byte mode, case-sensitive unless the pattern says (?i)).  A
 * command is normalised first: "\<newline>" joins lines, a newline becomes
 * "; ", runs of blanks become one space, and leading/trailing blanks go.
 * Each pattern is matched, unanchored, against that text and against the
 * same text with every ' " and \ removed (so r'm' -rf "/" is still rm -rf /).
 * Any deny match refuses the command; otherwise any ask match returns
 * SANDBOX_ASK (the agent loop turns it into a human gate); otherwise it is
 * allowed.  The literal "{cmd}" in a pattern stands for a command position:
 * the start, or after ; & | ( ` { newline $( or the words then do else sudo
 * exec command nohup time nice env xargs builtin, then any VAR=value or
 * -option words, then an optional directory prefix ("/bin/").  The policy is
 * a guard rail against accidents and advice to the model, not a security
 * boundary (`${g}t push` or `cat ~/.s?h/id_rsa` slip past any regex): the
 * boundary is the kernel's (sandbox_run(): namespaces and the mount view,
 * Landlock, the network namespace, the pids cgroup and the rlimits).
 *
 * Errors: functions return 0, or one of the negative codes below after
 * forge_error(); SANDBOX_EDENIED is an escape attempt (not retryable),
 * SANDBOX_ENOENT a missing file (the model can fix the path).
 */
#ifndef FORGE_SANDBOX_H
#define FORGE_SANDBOX_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "os/proc.h"

struct config;

enum {
	SANDBOX_EIO = -1,      /* any other failure */
	SANDBOX_EDENIED = -2,  /* outside the worktree, inside .git, refused */
	SANDBOX_ENOENT = -3,   /* no such file or directory */
	SANDBOX_EINVAL = -4    /* not a regular file, is a directory, bad path */
};

/* Record a message with forge_error() and return code (one of the above). */
int sandbox_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- paths ---- */

struct sandbox_root {
	int fd;          /* O_PATH|O_DIRECTORY fd of the root */
	char *path;      /* its real path, without a trailing '/' */
};

/* Open dir as a root.  -1 when it is not a directory. */
int sandbox_root_open(struct sandbox_root **out, const char *dir);
void sandbox_root_free(struct sandbox_root *root);

/*
 * The normalised relative form of a model's path ("./a//b/" -> "a/b"), or a
 * negative code with a message naming the path and the reason.  "" and "."
 * name the root itself and are accepted only with allow_root.
 */
int sandbox_path_clean(char **out, const char *path, bool allow_root);

/* True when rel (already clean) or any real path has a ".git" component. */
bool sandbox_path_is_git(const char *rel);
/* True when the first component of rel (clean, relative to the root) is
 * ".forge" (any case). */
bool sandbox_path_is_forge(const char *rel);

/*
 * Open rel for reading: *out_fd (O_RDONLY|O_CLOEXEC) and *st.  Only regular
 * files (SANDBOX_EINVAL for others).  rel is cleaned here.
 */
int sandbox_open_read(int *out_fd, struct stat *st, const struct sandbox_root *root,
		      const char *rel);

/* Read a whole file (at most max bytes; SANDBOX_EINVAL when bigger). */
int sandbox_read_file(struct buf *out, const struct sandbox_root *root, const char *rel,
		      size_t max);

/* Stat rel through the same checks (following in-tree symlinks). */
int sandbox_stat(struct stat *st, const struct sandbox_root *root, const char *rel);

/*
 * Whether rel (a clean path) is a symbolic link to nothing -- one whose
 * target, in the tree, does not exist: 1 with *out_target (malloc'd) the
 * target as the link holds it; 0 when it is not (no such entry, not a link,
 * a link to something; *out_target NULL), or when its directory cannot be
 * opened beneath the root.  The checks above read such a path as absent
 * (SANDBOX_ENOENT; one leading outside is refused), so a write there
 * (sandbox_txn_write) puts a regular file in the link's place -- the target
 * is not created -- and git records the link replaced by a file: a tool
 * says so to the model.
 */
int sandbox_dangling_link(char **out_target, const struct sandbox_root *root, const char *rel);

/*
 * A transaction of file writes and removals, checked and staged first and
 * then committed together: sandbox_txn_commit() resolves every path, writes
 * every new content to a temporary file beside its target and checks every
 * removal; only when all of that succeeded does it rename and unlink, each
 * target's original kept (a hard link beside it) until the last op is done.
 * On failure nothing visible has changed -- ops already done are put back,
 * temporary files and directories it created removed -- and the message
 * names the path at fault.  Only where an op cannot be put back (a file
 * system without hard links) does a failed commit leave a change:
 * sandbox_txn_partial() is then true and the message names those paths.
 */
struct sandbox_txn;
/*
 * The most directories a written file's path may have ("a/b/c.txt": 2); a
 * deeper one is refused (SANDBOX_EINVAL).  libgit2 walks a worktree at most
 * 100 levels deep ("directory nesting too deep"): one file deeper failed
 * every status, diff and commit of the run after it was written.
 */
#define SANDBOX_DIR_DEPTH_MAX 99
struct sandbox_txn *sandbox_txn_new(const struct sandbox_root *root);
/* Queue a write of data (copied); parents are created as needed. */
void sandbox_txn_write(struct sandbox_txn *t, const char *rel, const char *data, size_t len);
/* The same, and a file it creates gets the permission bits of the tree's
 * file `like` (a move's source: a script stays executable), when `like`
 * exists at staging. */
void sandbox_txn_write_like(struct sandbox_txn *t, const char *rel, const char *data, size_t len,
			    const char *like);
/* Queue the removal of a file (a symlink is removed itself). */
void sandbox_txn_remove(struct sandbox_txn *t, const char *rel);
int sandbox_txn_commit(struct sandbox_txn *t);
/* After a failed sandbox_txn_commit(): did it leave changes it could not
 * undo?  false for NULL. */
bool sandbox_txn_partial(const struct sandbox_txn *t);
void sandbox_txn_free(struct sandbox_txn *t);

/* ---- policy ---- */

enum sandbox_mode { SANDBOX_AUTO, SANDBOX_REQUIRE, SANDBOX_OFF };

enum sandbox_verdict { SANDBOX_ALLOW, SANDBOX_ASK, SANDBOX_DENY };

struct sandbox_rule;
struct sandbox_any;

struct sandbox_policy {
	long timeout_ms;             /* default and ceiling of run_command */
	size_t output_cap;           /* bytes of output kept per command */
	enum sandbox_mode landlock;  /* config: auto | require | off */
	enum sandbox_mode network;   /* config: auto | deny (=require) | allow (=off) */
	struct proc_limits limits;
	enum sandbox_mode namespaces; /* config: auto | require | off */
	bool read_anywhere;          /* config: no read allow-list */
	char **read_paths;           /* further readable paths (NULL-terminated) */
	char **writable;             /* further writable dirs (NULL-terminated) */
	char **env_extra;            /* further variable names (NULL-terminated) */
	struct sandbox_rule *deny, *ask;
	size_t ndeny, nask;
	bool rules_compiled;         /* deny and ask compiled (at the first check, from a config) */
	struct sandbox_any *any_deny, *any_ask;   /* private to sandbox.c */
};

/*
 * Build a policy from a config "sandbox" object (borrows section; missing
 * keys take the built-in defaults; jv_null() = all defaults).  -1 with a
 * message naming a pattern that does not compile.
 *
 * sandbox_policy_from_config(): the same from cfg's "sandbox" section,
 * whose patterns the configuration's validation found to compile ("format":
 * "regex"; that result is cached per configuration text), so they are
 * compiled at the first sandbox_check_command(), not here: most programs
 * never check a command (~2M instructions saved in each).
 */
int sandbox_policy_new(struct sandbox_policy **out, jv section);
int sandbox_policy_from_config(struct sandbox_policy **out, const struct config *cfg);
void sandbox_policy_free(struct sandbox_policy *p);

/* Check a command line; *rule (may be NULL) gets the matching pattern as
 * written in the configuration (borrowed from p).  A pattern that does
 * not compile after all ({cmd} put where it breaks the pattern) matches
 * every command: its list's verdict, never a silent allow. */
enum sandbox_verdict sandbox_check_command(const struct sandbox_policy *p, const char *cmd,
					   const char **rule);

/*
 * What confinement this system offers, for `forge doctor` and events:
 * {"landlock":{"available":true,"abi":7,"writes":true,"reads":true,
 *              "scope":true,"mode":"auto","read_anywhere":false},
 *  "network_namespace":{"available":true,"mode":"auto","reason":…},
 *  "namespaces":{"available":true,"user":…,"pid":…,"mount":…,"ipc":…,
 *                "mode":"auto","reason":…},
 *  "cgroup_pids":{"available":true,"path":…|"reason":…,"max":1024},
 *  "seccomp":{"available":true,"used":false},
 *  "openat2":true,"pidfd":true}.  p may be NULL (modes left out).
 */
int sandbox_features(jv *out, const struct sandbox_policy *p);

/* ---- environment and execution ---- */

/*
 * The environment of a command: from base (NULL = environ) only PATH, LANG,
 * LANGUAGE, LC_*, TZ, USER, LOGNAME and the names in p->env_extra; never a
 * name containing KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL (any
 * case) or listed in llm_secret_env_names; then HOME=tmp, TMPDIR=tmp,
 * TERM=dumb.  A malloc'd NULL-terminated array; free with sandbox_env_free().
 */
char **sandbox_build_env(const struct sandbox_policy *p, char *const *base, const char *tmp);
void sandbox_env_free(char **env);

/*
 * base (NULL = environ) with its messages untranslated and the rest of
 * its locale kept: LANGUAGE is dropped, LC_MESSAGES becomes C.UTF-8 (C
 * where the system has no C.UTF-8), and a non-empty LC_ALL, which would
 * override LC_MESSAGES, becomes LANG (the LANG and locale categories
 * LC_CTYPE ... LC_IDENTIFICATION it overrode are dropped), so every other
 * category keeps the value it had.  For a command whose output Forge
 * reads: a full disk says "No space left on device" under de_DE.UTF-8
 * too, while collation, character classes and number formats, which a
 * test suite may depend on, stay the user's.  A malloc'd NULL-terminated
 * array; free with sandbox_env_free().
 */
char **sandbox_env_untranslated(char *const *base);

struct sandbox_cmd {
	const char *command;     /* run as /bin/sh -c command */
	const char *root;        /* the worktree (writable) */
	const char *cwd;         /* where to run (default root) */
	const char *tmp;         /* the run's temp dir (writable; HOME, TMPDIR) */
	char *const *base_env;   /* NULL = environ */
	long timeout_ms;         /* 0 = the policy's */
	bool (*cut_count)(const char *line, size_t len); /* proc_opts.cut_count; may be NULL */
};

/*
 * Where a command's git identity comes from.  HOME is the command's temp
 * dir, with no ~/.gitconfig: a test suite that commits in a repository of
 * its own said "Author identity unknown".  With a source set, sandbox_run()
 * writes tmp/.gitconfig holding only [user] name and email as fn answers
 * for the command's root (fn: 0 and two strings the callee frees, or -1
 * for none) -- never a copy of the user's file, which may hold credential
 * helpers or tokens in url.insteadOf.  Lowest precedence, as a global
 * config is: a repository's own user.name wins.  The answer is kept per
 * root for the process.  The program sets fn (it may use libgit2; this
 * layer does not); NULL: none.
 */
typedef int (*sandbox_identity_fn)(char **name, char **email, const char *root);
void sandbox_set_identity_source(sandbox_identity_fn fn);

/*
 * Where the gitlinks (submodules' directories) of a command's root come
 * from: fn sets a NULL-terminated vector of paths relative to root (each
 * and the vector malloc'd, the callee's answer freed here; NULL: none) and
 * returns 0, or -1.  Git looks into the directory of a gitlink that holds
 * a .git -- runs `git status` there, with that repository's configuration:
 * its core.fsmonitor, hooks, filter drivers -- whenever it looks at the
 * work tree (git status, git diff, git commit -a), run by a person in the
 * worktree or by Forge, outside any sandbox.  A run's worktree has its
 * submodules not checked out: a .git a command makes in a gitlink's
 * directory is removed after it (one that was there before is left).
 * The program sets fn (it may use libgit2; this layer does not); NULL:
 * none.
 */
typedef int (*sandbox_gitlinks_fn)(char ***paths, const char *root);
void sandbox_set_gitlinks_source(sandbox_gitlinks_fn fn);

/*
 * Whether root (absolute) is one of Forge's runs' worktrees, checked out
 * by Forge from a commit: there sandbox_run() does not look for nested
 * .git directories before a command (none can be there but what an
 * earlier command made and could not remove: each one found after the
 * command is removed, and named).  Elsewhere (a person's checkout) one
 * that was there before the command, a person's own nested clone, is
 * left.  The program sets fn (git/git.h forge_git_is_run_root); NULL:
 * none, every root is looked at before the command.
 */
typedef bool (*sandbox_run_root_fn)(const char *root);
void sandbox_set_run_root_source(sandbox_run_root_fn fn);

/*
 * THE CHECKOUT'S INSTALLED DEPENDENCIES.  What a person installed in the
 * main checkout and git ignores -- node_modules at its root and in its
 * package directories one or two levels down (packages/NAME/node_modules),
 * and a Python virtualenv (.venv or venv, with its pyvenv.cfg) -- is not in
 * a run's worktree, made from git.  A command whose root is another
 * directory than the checkout (a run's worktree, review's copy) borrows
 * them, read-only, never copied:
 * - with the mount view, each is bound read-only at its place in the root
 *   (ROOT/node_modules at WORKTREE/node_modules; an empty directory is made
 *   there as the mount point when there is none, and removed after the
 *   command: git records no empty directory), and a virtualenv also at its
 *   own path (its scripts' #! lines name its python there);
 * - without it, each is readable (Landlock) at its own path, and the
 *   environment points at it: PATH starts with CHECKOUT/node_modules/.bin,
 *   NODE_PATH is CHECKOUT/node_modules.
 * A lent virtualenv is the command's VIRTUAL_ENV, its bin/ first in PATH,
 * and the interpreter it was made from (pyvenv.cfg's home) is readable.  A
 * root that has its own (a node_modules that is not empty, a virtualenv)
 * keeps it: nothing is lent in its place.
 *
 * sandbox_set_checkout(): the checkout (the main working tree, where
 * .forge is) for the process; NULL: none, nothing is lent.  What it holds
 * is looked for once per process.  sandbox_deps_lent(): what a command in
 * root borrows, [{"dir": "node_modules", "from": "/repo/node_modules"}, ...]
 * (an empty array when nothing), for an event.
 */
void sandbox_set_checkout(const char *dir);
jv sandbox_deps_lent(const char *root);

/* One directory lent to a command (sandbox_run()). */
struct sandbox_lend {
	char *rel;       /* its path in the root and the checkout ("node_modules") */
	char *src;       /* the checkout's, a real path */
	char *dst;       /* root/rel */
	bool venv;
	bool made;       /* dst was made as the view's mount point */
};
struct sandbox_deps {
	struct sandbox_lend *v;
	size_t n;
	char *venv_home; /* a lent virtualenv's interpreter prefix, or NULL */
};
/* What root borrows (d zeroed first; nothing without a checkout). */
void sandbox_deps_find(struct sandbox_deps *d, const char *root);
/* env (consumed) with the variables the lent directories need (above);
 * view: whether the command gets the mount view. */
char **sandbox_deps_env(const struct sandbox_deps *d, char **env, bool view);
/* Remove the mount points made; free d. */
void sandbox_deps_release(struct sandbox_deps *d);

/*
 * Run a command under the policy's confinement: its own process group,
 * timeout, rlimits, output cap, a clean environment, and the kernel walls:
 * - namespaces (sandbox.namespaces): own user, PID, mount and IPC
 *   namespaces (proc.h, nsview.h).  The command sees only the allow-list
 *   below, a minimal /dev and a /proc of its own processes (no Forge
 *   process, no host socket under /tmp or /run, no /dev/shm); root's
 *   .forge is read-only; everything it starts ends with it;
 * - a command may change nothing in root's .forge (Forge's configuration,
 *   skills and prompts, which a person who merges the branch or a later
 *   phase would take as Forge's): without the view it can write there,
 *   so what it changed or removed is put back after it and what it made
 *   is removed, each named in *unconfined (sandbox_internal.h
 *   forge_guard_save: the database, logs and runs' worktrees Forge itself
 *   writes in a checkout's .forge are left);
 * - a .git a command makes below root's own (src/.git), where git run by
 *   a person would take its configuration, is removed after it and named
 *   (sandbox_set_run_root_source);
 * - Landlock (sandbox.landlock): writes only beneath root, tmp and
 *   p->writable; reads only beneath those and the read allow-list (unless
 *   sandbox.read_anywhere); abstract sockets and signals scoped (ABI 6);
 * - a network namespace (sandbox.network), and the seccomp filter makes
 *   sockets of unix, inet, inet6 and netlink only (not vsock, which the
 *   namespace does not cover, nor AF_PACKET ...); without the mount view
 *   it then also refuses socket(AF_UNIX), so the host's pathname
 *   sockets (D-Bus, ssh-agent) cannot be reached either, and variables
 *   naming them (SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS ...) are not passed;
 * - a pids cgroup with limits.processes when one is writable (proc.h).
 * The read allow-list: /usr /bin /sbin /lib* /opt, /etc except its
 * secrets (shadow, gshadow, ssh host keys, ssl/private, security/opasswd),
 * the directories of the command's PATH (and a dot-directory holding one,
 * as ~/.cargo for ~/.cargo/bin, never ~/.ssh and the like; never, by its
 * real path, /, a temporary directory, the home directory, the user's
 * XDG directories, the Forge database's directory or the repository's
 * parent, nor a parent of any of them: those entries are left out and
 * *unconfined says so), the main
 * repository's .git when root is a linked worktree (read-only), /proc and
 * p->read_paths.
 * When a confinement in mode auto is unavailable the command runs without
 * it and *unconfined (may be NULL) gets an array of strings saying what is
 * missing; in mode require it does not run: -1 with a message.  The
 * command policy is NOT checked here (sandbox_check_command()).
 */
int sandbox_run(struct proc_result *out, jv *unconfined, const struct sandbox_policy *p,
		const struct sandbox_cmd *cmd);

/* The allow-lists of one command (sandbox_exec.c); used by sandbox_run().
 * With view (the command gets the mount view, which covers the /etc
 * secrets) /etc is one readable entry; without, every entry of /etc but the
 * secrets is. */
struct nsview_bind;
struct sandbox_walls {
	char **readable;          /* Landlock read allow-list */
	char **writable;          /* Landlock write allow-list */
	char **viewro, **hidden;  /* the view's read-only binds, the covered secrets */
	char **left_out;          /* "PATH: DIR is left out ... (why)": entries not made readable */
	char *forge_dir;          /* root/.forge (bound read-only) */
	char *git_link;           /* root/.git (bound read-only when it is there) */
	char **covers;            /* pairs: a copy's text (NULL: hidden), the file it covers */
	size_t ncovers;
	char *uncovered;          /* why a git config is hidden (no copy could be made), or NULL */
	struct nsview_bind *view; /* the mount view (strings borrowed from above) */
	size_t nview;
};
void sandbox_walls_build(struct sandbox_walls *w, const struct sandbox_policy *p,
			 const struct sandbox_cmd *cmd, char *const *env, bool view);
void sandbox_walls_release(struct sandbox_walls *w);
/* Add the lent directories d (borrowed: it outlives w) to the walls of
 * cmd; with view their mount points are made (d->v[i].made).  A
 * virtualenv's interpreter prefix the PATH guard refuses (the home
 * directory, /, ...) is left out (w->left_out says so). */
void sandbox_walls_lend(struct sandbox_walls *w, struct sandbox_deps *d,
			const struct sandbox_cmd *cmd, bool view);

#endif
