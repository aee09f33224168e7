/* git_worktree.c - a run's worktree: create or reopen, list, remove. */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/cachedir.h"
#include "core/forge.h"
#include "core/owner.h"
#include "core/forgedir.h"
#include "core/json.h"
#include "core/tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The names of one run: its name N (forge_git_run_name), "forge/N",
 * "refs/heads/forge/N", "refs/forge/N/base". */
struct run_names {
	char name[FORGE_GIT_RUN_NAME_SIZE];
	struct buf branch, branch_ref, base_ref;
};

/* 0, or -1 with a message when trace is not a trace id (n is released
 * either way by run_names_release). */
static int run_names_init(struct run_names *n, const char *trace)
{
	buf_init(&n->branch, 0);
	buf_init(&n->branch_ref, 0);
	buf_init(&n->base_ref, 0);
	if (forge_git_run_name(n->name, trace) < 0)
		return -1;
	buf_addf(&n->branch, "forge/%s", n->name);
	buf_addf(&n->branch_ref, "refs/heads/forge/%s", n->name);
	buf_addf(&n->base_ref, "refs/forge/%s/base", n->name);
	return 0;
}

static void run_names_release(struct run_names *n)
{
	buf_release(&n->branch);
	buf_release(&n->branch_ref);
	buf_release(&n->base_ref);
}

static int remove_tree(const char *path);

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return owner_error(errno, path, true, "cannot create '%s'", path);
	return 0;
}

/* make_dir for Forge's own directories: under sudo in the user's
 * repository, the user's (core/owner.h). */
static int make_own_dir(const char *path)
{
	if (mkdir(path, 0755) == 0) {
		owner_follow(-1, path);
		return 0;
	}
	return make_dir(path);
}

/* KEY/root in a runs dir of the worktrees base: the checkout its runs'
 * worktrees are made for, which nothing else names when the repository
 * has no main working tree (git.c root_named_by), and by which forge gc
 * tells a runs dir whose checkout is gone.  Written when it says
 * otherwise. */
static int note_root(const char *runs, const char *root)
{
	char *file = forge_git_path(runs, "root");
	struct buf want = BUF_INIT, have = BUF_INIT;
	int rc = 0;

	buf_addf(&want, "%s\n", root);
	if (buf_read_file(&have, file) < 0 || have.len != want.len || memcmp(have.buf, want.buf, want.len) != 0) {
		rc = buf_replace_file(file, want.buf, want.len);
		if (rc == 0)
			owner_follow(-1, file);
	}
	buf_release(&want);
	buf_release(&have);
	free(file);
	return rc;
}

/*
 * The runs dir in the worktrees base (g->runs: BASE/KEY) made, with the
 * directories above it and its root file; g->runs and g->runs_base then
 * their real paths.  0; -1 when it cannot be made (the
 * caller falls back on the legacy place).
 */
static int make_runs_dir(struct forge_git *g)
{
	char *real;

	if (cache_mkdirs(g->runs) < 0 || make_own_dir(g->runs) < 0 || !(real = realpath(g->runs, NULL)))
		return -1;
	free(g->runs);
	g->runs = real;
	free(g->runs_base);
	g->runs_base = path_parent(real);
	return note_root(g->runs, g->root);
}

/*
 * <root>/.forge/ with its .gitignore (forge_dir_ignore(): the database
 * and logs ignored; a user's own file left alone) and the directory of
 * runs' worktrees (forge_git_runs_dir): BASE/KEY with its root file, or,
 * when there is no worktrees base or it cannot be made, the legacy
 * <root>/.forge/worktrees (g->runs then that).
 */
static int ensure_forge_dir(struct forge_git *g)
{
	char *dir = forge_git_path(g->root, ".forge");
	int rc = FORGE_GIT_SETUP;

	if (forge_dir_check(g->root) < 0)
		goto out;
	rc = -1;
	if (make_own_dir(dir) < 0 || forge_dir_ignore(dir) < 0)
		goto out;
	if (!g->runs_base || !forge_git_directly_in(g->runs, g->runs_base) || make_runs_dir(g) < 0) {
		free(g->runs);
		g->runs = forge_git_legacy_runs_dir(g->root);
		if (make_own_dir(g->runs) < 0)
			goto out;
	}
	/*
	 * libgit2 creates <commondir>/worktrees itself and fails when another
	 * process made it a moment before (runs started at once): make it
	 * first, tolerating one that exists.
	 */
	char *admin = forge_git_path(git_repository_commondir(g->repo), "worktrees");
	rc = make_dir(admin);
	free(admin);
out:
	free(dir);
	return rc;
}

/*
 * Worktrees are made one process at a time.  git_worktree_add() asks
 * git_branch_is_checked_out(), which opens every worktree of the
 * repository; a sibling that another process is half-way through making
 * cannot be opened, and that error is reported as "reference is already
 * checked out".  forge_git_flock() on forge-worktrees.lock orders the
 * makers.
 */
static int lock_worktrees(struct forge_git *g)
{
	return forge_git_flock(g, "forge-worktrees.lock");
}

int forge_git_flock(struct forge_git *g, const char *name)
{
	char *path = forge_git_path(git_repository_commondir(g->repo), name);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0) {
		owner_error(errno, path, true, "cannot open '%s'", path);
	} else {
		/* Forge's lock, not git's: left root's by `sudo forge run`, it
		 * kept the user from starting runs of their own */
		owner_follow(fd, path);
		while (flock(fd, LOCK_EX) < 0) {
			if (errno == EINTR)
				continue;
			forge_error("cannot lock '%s': %s", path, strerror(errno));
			close(fd);
			fd = -1;
			break;
		}
	}
	free(path);
	return fd;
}

static char *worktree_dir(const struct forge_git *g, const char *name)
{
	struct buf p = BUF_INIT;

	buf_addf(&p, "%s/%s", g->runs, name);
	return buf_detach(&p, NULL);
}

/* A root commit with an empty tree, on no branch. */
static int make_empty_base(git_oid *out, git_repository *repo)
{
	git_treebuilder *tb = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	git_oid tree_id;
	int rc = -1;

	if (git_treebuilder_new(&tb, repo, NULL) < 0 || git_treebuilder_write(&tree_id, tb) < 0 ||
	    git_tree_lookup(&tree, repo, &tree_id) < 0) {
		forge_git_fail("cannot write an empty tree");
		goto out;
	}
	if (forge_git_signature(&sig) < 0)
		goto out;
	if (git_commit_create(out, repo, NULL, sig, sig, NULL, FORGE_GIT_EMPTY_BASE_MESSAGE, tree,
			      0, NULL) < 0) {
		forge_git_fail("cannot write the empty base commit");
		goto out;
	}
	rc = 0;
out:
	git_signature_free(sig);
	git_tree_free(tree);
	git_treebuilder_free(tb);
	return rc;
}

/* The commit `name` points at; 1 when there is no such ref. */
static int ref_target(git_oid *out, git_repository *repo, const char *name)
{
	int e = git_reference_name_to_id(out, repo, name);

	if (e == GIT_ENOTFOUND)
		return 1;
	if (e < 0)
		return forge_git_fail("cannot read '%s'", name);
	return 0;
}

static int write_ref(git_repository *repo, const char *name, const git_oid *id, int force,
		     const char *log)
{
	git_reference *ref = NULL;
	int e = git_reference_create(&ref, repo, name, id, force, log);

	git_reference_free(ref);
	if (e < 0 && !(e == GIT_EEXISTS && !force))
		return forge_git_fail("cannot write '%s'", name);
	return 0;
}

/* Fill wt from the opened worktree repository: check its branch, read the base. */
static int load_worktree(struct forge_git_worktree *wt, const struct run_names *n)
{
	git_reference *head = NULL;
	const char *target;
	git_oid base;
	int e, rc = -1;

	if (git_reference_lookup(&head, wt->repo, "HEAD") < 0) {
		forge_git_fail("cannot read HEAD of worktree '%s'", wt->path);
		goto out;
	}
	target = git_reference_symbolic_target(head);
	if (!target || strcmp(target, n->branch_ref.buf) != 0) {
		forge_error("worktree '%s' is not on branch '%s' (HEAD is %s); remove it and start "
			    "again", wt->path, n->branch.buf, target ? target : "detached");
		goto out;
	}
	if ((e = ref_target(&base, wt->repo, n->branch_ref.buf)) != 0) {
		char hex[GIT_OID_HEXSZ + 1] = "";

		if (e > 0 && ref_target(&base, wt->repo, n->base_ref.buf) == 0)
			git_oid_tostr(hex, sizeof hex, &base);
		if (e > 0)
			forge_git_branch_gone(wt->repo, n->branch.buf, wt->trace, *hex ? hex : NULL);
		goto out;
	}
	e = ref_target(&base, wt->repo, n->base_ref.buf);
	if (e < 0)
		goto out;
	if (e > 0 && ref_target(&base, wt->repo, n->branch_ref.buf) != 0) {
		forge_error("worktree '%s': branch '%s' has no commit", wt->path, n->branch.buf);
		goto out;
	}
	wt->base = forge_git_hex(&base);
	rc = 0;
out:
	git_reference_free(head);
	return rc;
}

struct longest {
	size_t len;             /* of path */
	struct buf path;        /* relative to the tree's root */
};

static int longest_entry(const char *dir, const git_tree_entry *entry, void *payload)
{
	struct longest *l = payload;
	const char *name = git_tree_entry_name(entry);
	size_t n = strlen(dir) + strlen(name);

	if (n > l->len) {
		l->len = n;
		buf_reset(&l->path);
		buf_addf(&l->path, "%s%s", dir, name);
	}
	return 0;
}

int forge_git_tree_fits(git_repository *repo, const git_oid *id, const char *runs, const char *root,
			const char *name)
{
	struct longest l = { 0, BUF_INIT };
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	size_t prefix = strlen(runs) + 1 + strlen(name) + 1, n = strlen(root);
	/* (shown from the root when in it: a deep root's path is cut at the end) */
	const char *shown = strncmp(runs, root, n) == 0 && runs[n] == '/' ? runs + n + 1 : runs;
	int rc = -1;

	/* the worktree's own .git file, in an empty one too */
	buf_adds(&l.path, ".git");
	l.len = l.path.len;
	if (id && (git_commit_lookup(&commit, repo, id) < 0 || git_commit_tree(&tree, commit) < 0 ||
		   git_tree_walk(tree, GIT_TREEWALK_PRE, longest_entry, &l) < 0)) {
		forge_git_fail("cannot read the files of the run's base");
		goto out;
	}
	rc = 0;
	if (prefix + l.len >= PATH_MAX && shown == runs) {
		/* out of the checkout (git.h forge_git_runs_dir): the file is
		 * named from the repository, the directory of runs' worktrees
		 * last (a deep one is cut there) */
		char *base = path_parent(runs);

		forge_error("a path in the repository is too long for a run's worktree: '%s' would be %zu bytes "
			    "from '/' in the run's worktree %s/%s, over the system's limit of %d (PATH_MAX); "
			    "set FORGE_WORKTREES to a directory at least %zu bytes shorter than '%s'", l.path.buf,
			    prefix + l.len, strrchr(runs, '/') + 1, name, PATH_MAX - 1,
			    prefix + l.len - (PATH_MAX - 1), base);
		free(base);
		rc = FORGE_GIT_SETUP;
	} else if (prefix + l.len >= PATH_MAX) {
		/* (the message ends with the repository's path: a deep one is cut there) */
		forge_error("the repository's path is too long for a run's worktree: '%s/%s/%s' "
			    "would be %zu bytes from '/', over the system's limit of %d (PATH_MAX); clone or "
			    "move the repository to a path at least %zu bytes shorter ('%s')", shown, name, l.path.buf,
			    prefix + l.len, PATH_MAX - 1, prefix + l.len - (PATH_MAX - 1), root);
		rc = FORGE_GIT_SETUP;
	}
out:
	git_tree_free(tree);
	git_commit_free(commit);
	buf_release(&l.path);
	return rc;
}

int forge_git_run_refs_clear(git_repository *repo, const char *name)
{
	struct buf ref = BUF_INIT;
	const char *const fixed[] = { "refs/heads/forge", "refs/forge" };
	int rc = 0;

	buf_addf(&ref, "refs/forge/%s", name);
	for (size_t i = 0; i < 3 && rc == 0; i++) {
		const char *at = i < 2 ? fixed[i] : ref.buf;
		git_reference *r = NULL;
		int e = git_reference_lookup(&r, repo, at);

		git_reference_free(r);
		if (e == GIT_ENOTFOUND || e == GIT_EINVALIDSPEC) {
			git_error_clear();
		} else if (e < 0) {
			rc = forge_git_fail("cannot read '%s'", at);
		} else if (i == 0) {
			forge_error("the repository has a branch named 'forge', which is in the way of the runs' "
				    "branches forge/TRACE (git cannot hold a branch 'forge' and branches under "
				    "'forge/' at once); rename it (git branch -m forge NEW-NAME) and start again");
			rc = FORGE_GIT_SETUP;
		} else {
			forge_error("the repository has a ref '%s', which is in the way of the run's refs "
				    "refs/forge/%s/...; move it elsewhere (git update-ref refs/NEW-NAME %s && "
				    "git update-ref -d %s) and start again", at, name, at, at);
			rc = FORGE_GIT_SETUP;
		}
	}
	buf_release(&ref);
	return rc;
}

/* Create forge/TRACE (unless it exists; *out_made says whether it was made
 * now) and record the run's base. */
static int make_branch(git_reference **out, bool *out_made, struct forge_git *g, const struct run_names *n,
		       const char *base)
{
	git_commit *commit = NULL;
	git_oid id;
	bool unborn;
	int e, rc = -1;

	*out = NULL;
	*out_made = false;
	e = git_branch_lookup(out, g->repo, n->branch.buf, GIT_BRANCH_LOCAL);
	if (e == 0) {
		/* Left by a removed worktree: keep it and its recorded base. */
		if (!git_reference_target(*out)) {
			forge_error("'%s' is not a plain branch", n->branch.buf);
			goto out;
		}
		rc = write_ref(g->repo, n->base_ref.buf, git_reference_target(*out), 0,
			       "forge: run base");
		goto out;
	}
	if (e != GIT_ENOTFOUND) {
		forge_git_fail("cannot read branch '%s'", n->branch.buf);
		goto out;
	}
	if (forge_git_peel(&id, &unborn, g->repo, base) < 0)
		goto out;
	if (unborn && make_empty_base(&id, g->repo) < 0)
		goto out;
	if (git_commit_lookup(&commit, g->repo, &id) < 0 ||
	    git_branch_create(out, g->repo, n->branch.buf, commit, 0) < 0) {
		forge_git_fail("cannot create branch '%s'", n->branch.buf);
		goto out;
	}
	*out_made = true;
	rc = write_ref(g->repo, n->base_ref.buf, &id, 1, "forge: run base");
out:
	git_commit_free(commit);
	if (rc < 0) {
		git_reference_free(*out);
		*out = NULL;
	}
	return rc;
}

/*
 * git_worktree_lookup() of libgit2 1.5 returns a bare -1 for an unknown
 * name; this one says GIT_ENOTFOUND when `name` is not in the list.
 */
static int lookup_worktree(git_worktree **out, git_repository *repo, const char *name)
{
	git_strarray names = { NULL, 0 };
	bool known = false;

	*out = NULL;
	if (git_worktree_list(&names, repo) < 0)
		return -1;
	for (size_t i = 0; i < names.count && !known; i++)
		known = strcmp(names.strings[i], name) == 0;
	git_strarray_dispose(&names);
	if (!known)
		return GIT_ENOTFOUND;
	return git_worktree_lookup(out, repo, name);
}

/* Whether a and b name one directory (a trailing slash aside). */
static bool same_dir(const char *a, const char *b)
{
	size_t na = a ? strlen(a) : 0, nb = strlen(b);

	while (na > 1 && a[na - 1] == '/')
		na--;
	while (nb > 1 && b[nb - 1] == '/')
		nb--;
	return na == nb && strncmp(a, b, na) == 0;
}

/*
 * The repository moved (or was copied) with its .git: the run's worktree
 * is where it should be, but the links git keeps between it and its admin
 * entry (gitdir, commondir, the worktree's .git file) name the old places.
 * Point them at the new ones, as `git worktree repair` does.  0 when all
 * three were written.
 */
static int repair_links(struct forge_git *g, const char *path, const char *name)
{
	char *admin = forge_git_path(git_repository_commondir(g->repo), "worktrees");
	char *entry = forge_git_path(admin, name);
	char *gitdir = forge_git_path(entry, "gitdir"), *commondir = forge_git_path(entry, "commondir");
	char *dotgit = forge_git_path(path, ".git");
	struct buf text = BUF_INIT;
	struct stat st;
	int rc = -1;

	if (stat(entry, &st) == 0 && S_ISDIR(st.st_mode) && lstat(dotgit, &st) == 0 && S_ISREG(st.st_mode)) {
		buf_addf(&text, "%s\n", dotgit);
		if (buf_replace_file(gitdir, text.buf, text.len) == 0) {
			buf_reset(&text);
			buf_addf(&text, "%s\n", git_repository_commondir(g->repo));
			if (buf_replace_file(commondir, text.buf, text.len) == 0) {
				buf_reset(&text);
				buf_addf(&text, "gitdir: %s\n", entry);
				rc = buf_replace_file(dotgit, text.buf, text.len);
			}
		}
	}
	buf_release(&text);
	free(admin);
	free(entry);
	free(gitdir);
	free(commondir);
	free(dotgit);
	return rc;
}

int forge_git_run_branch_restore(struct forge_git *g, const char *trace, const char *commit,
				 const char *base_commit)
{
	struct run_names n;
	git_oid tip, base;
	int e, rc = -1;

	if (run_names_init(&n, trace) < 0)
		goto out;
	if ((e = ref_target(&tip, g->repo, n.branch_ref.buf)) <= 0) {
		rc = e;                 /* there (0), or unreadable (-1) */
		goto out;
	}
	if (git_oid_fromstr(&tip, commit) < 0 || (base_commit && git_oid_fromstr(&base, base_commit) < 0)) {
		forge_error("'%s' is not a commit id", git_oid_fromstr(&tip, commit) < 0 ? commit : base_commit);
		goto out;
	}
	if (write_ref(g->repo, n.branch_ref.buf, &tip, 0, "forge: the run's branch, restored") < 0 ||
	    (base_commit && write_ref(g->repo, n.base_ref.buf, &base, 0, "forge: run base") < 0))
		goto out;
	rc = 1;
out:
	run_names_release(&n);
	return rc;
}

static int delete_ref(git_repository *repo, const char *name);

/*
 * Undo what a failed forge_git_worktree_open() made: the half-made
 * worktree (its directory and git's entry of it, when `added`: libgit2
 * leaves both when the checkout fails) and the branch and base ref (when
 * `made_branch`).  The message of the failure stands; one of the undoing
 * that failed is added to it.
 */
static void unmake_worktree(struct forge_git *g, struct forge_git_worktree *wt, const struct run_names *n,
			    bool added, bool made_branch)
{
	char *why = xstrdup(forge_last_error());
	char *admin = forge_git_path(git_repository_commondir(g->repo), "worktrees");
	char *entry = forge_git_path(admin, n->name);
	int rc = 0;

	/* (the worktree's repository holds files of the entry open) */
	git_repository_free(wt->repo);
	wt->repo = NULL;
	if (added && (remove_tree(wt->path) < 0 || remove_tree(entry) < 0))
		rc = -1;
	if (rc == 0 && made_branch &&
	    (delete_ref(g->repo, n->branch_ref.buf) < 0 || delete_ref(g->repo, n->base_ref.buf) < 0))
		rc = -1;
	if (rc < 0) {
		char *undo = xstrdup(forge_last_error());

		forge_error("%s; what was made for it is left: %s", why, undo);
		free(undo);
	} else {
		forge_error("%s", why);
	}
	free(why);
	free(admin);
	free(entry);
}

/* Whether dir holds a run's worktree of g's repository: a .git file whose
 * gitdir is the entry <common>/worktrees/NAME (2), or names a place that
 * is no more (1: the repository moved since; repair_links points it
 * back).  0 when not: none, or a copy's original's, whose .git names the
 * original repository's entry. */
static int worktree_there(struct forge_git *g, const char *dir, const char *name)
{
	char *dotgit = forge_git_path(dir, ".git");
	char *entry = forge_git_path(git_repository_commondir(g->repo), "worktrees");
	char *own = forge_git_path(entry, name);
	struct buf text = BUF_INIT;
	struct stat st, a, b;
	struct buf link = BUF_INIT;
	int there = 0;

	if (lstat(dotgit, &st) == 0 && S_ISREG(st.st_mode) && buf_read_file(&text, dotgit) == 0 &&
	    text.len > 8 && strncmp(text.buf, "gitdir: ", 8) == 0) {
		while (text.len > 0 && (text.buf[text.len - 1] == '\n' || text.buf[text.len - 1] == '\r'))
			text.buf[--text.len] = '\0';
		if (text.buf[8] == '/')
			buf_adds(&link, text.buf + 8);
		else            /* (git's worktree.useRelativePaths) */
			buf_addf(&link, "%s/%s", dir, text.buf + 8);
		if (stat(link.buf, &a) < 0)
			there = 1;
		else if (stat(own, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			there = 2;
	}
	buf_release(&text);
	buf_release(&link);
	free(dotgit);
	free(entry);
	free(own);
	return there;
}

/*
 * Where the worktree of the run named name, which git knows of (w), is: the
 * place git records for it, when it links back to this repository (moved
 * by `git worktree move`), or links to a place that is no more and is in a
 * runs dir (a checkout moved since its run began has another runs dir now:
 * the worktree stays where it was made), else where
 * it would be made now (wt->path), else an older Forge's
 * <root>/.forge/worktrees/NAME (a repository moved with its .forge).  A
 * run's worktree is used where it is: moving it would pull it from under
 * a phase still working in it.  wt->path is set to it; unchanged when
 * none is there (deleted by hand).
 */
static void find_place(struct forge_git_worktree *wt, struct forge_git *g, git_worktree *w)
{
	char *recorded = xstrdup(git_worktree_path(w));
	char *dir = forge_git_legacy_runs_dir(g->root);
	char *old = forge_git_path(dir, wt->name);
	char *found = NULL;
	size_t n = strlen(recorded);
	int e;

	while (n > 1 && recorded[n - 1] == '/')
		recorded[--n] = '\0';
	e = worktree_there(g, recorded, wt->name);
	if (e == 2 || (e == 1 && forge_git_is_run_worktree(g, recorded)))
		found = recorded;
	else if (!worktree_there(g, wt->path, wt->name) && worktree_there(g, old, wt->name))
		found = old;
	if (found) {
		free(wt->path);
		wt->path = xstrdup(found);
	}
	free(recorded);
	free(old);
	free(dir);
}

/* A worktree found in another runs dir of the base (its checkout moved):
 * that dir's root file names the checkout as it is now. */
static void note_moved_root(const struct forge_git *g, const char *path)
{
	char *runs = path_parent(path);
	const char *key = strrchr(runs, '/');

	if (g->runs_base && strcmp(runs, g->runs) != 0 && forge_git_directly_in(runs, g->runs_base) && key &&
	    forge_git_runs_key_shaped(key + 1))
		(void)note_root(runs, g->root);
	free(runs);
}

int forge_git_worktree_open(struct forge_git_worktree **out, struct forge_git *g,
			    const char *trace, const char *base)
{
	struct forge_git_worktree *wt = NULL;
	git_worktree *w = NULL;
	git_reference *branch = NULL;
	git_worktree_add_options opts = GIT_WORKTREE_ADD_OPTIONS_INIT;
	struct run_names n;
	struct stat st;
	bool made_branch = false, added = false;
	int e, there = 0, lock_fd = -1, rc = -1;

	*out = NULL;
	if (run_names_init(&n, trace) < 0)
		goto out;
	forge_git_init();
	wt = xcalloc(1, sizeof *wt);
	wt->trace = xstrdup(trace);
	wt->name = xstrdup(n.name);
	wt->path = worktree_dir(g, n.name);
	wt->branch = xstrdup(n.branch.buf);

	e = lookup_worktree(&w, g->repo, n.name);
	if (e == 0) {
		find_place(wt, g, w);
		there = worktree_there(g, wt->path, n.name);
	}
	/* Moved (links to nowhere): the worktree found for this repository is
	 * the run's, linked back to it. */
	if (e == 0 && there &&
	    (git_worktree_validate(w) < 0 || !same_dir(git_worktree_path(w), wt->path) || there == 1) &&
	    repair_links(g, wt->path, n.name) == 0) {
		note_moved_root(g, wt->path);
		git_worktree_free(w);
		e = lookup_worktree(&w, g->repo, n.name);
	}
	if (e == 0 && there && git_worktree_validate(w) == 0) {
		if (git_repository_open_from_worktree(&wt->repo, w) < 0) {
			forge_git_fail("cannot open worktree '%s'", wt->path);
			goto out;
		}
		if (load_worktree(wt, &n) < 0)
			goto out;
		wt->reopened = true;
		goto done;
	}
	if (e == 0 && git_worktree_validate(w) == 0) {
		/* git's record names a worktree of another repository: this one
		 * is a copy (cp -a), whose record and commondir are the
		 * original's, where its run goes on.  Only this repository's
		 * entry is removed (git_worktree_prune would remove the one its
		 * commondir names: the original's), and the worktree made again
		 * here, out of the original's. */
		char *entry = forge_git_path(git_repository_commondir(g->repo), "worktrees");
		char *own = forge_git_path(entry, n.name);

		git_worktree_free(w);
		w = NULL;
		e = remove_tree(own);
		free(own);
		free(entry);
		if (e < 0)
			goto out;
	} else if (e == 0) {
		/* Its directory was deleted by hand: forget it and make it again. */
		git_worktree_prune_options po = GIT_WORKTREE_PRUNE_OPTIONS_INIT;

		po.flags = GIT_WORKTREE_PRUNE_LOCKED;
		if (git_worktree_prune(w, &po) < 0) {
			forge_git_fail("cannot prune the stale worktree '%s'", n.name);
			goto out;
		}
		git_worktree_free(w);
		w = NULL;
	} else if (e != GIT_ENOTFOUND) {
		forge_git_fail("cannot look up worktree '%s'", n.name);
		goto out;
	}

	if ((e = ensure_forge_dir(g)) < 0) {
		rc = e;
		goto out;
	}
	if (lstat(wt->path, &st) == 0) {
		forge_error("'%s' exists but is not a worktree of '%s'; remove it", wt->path, g->root);
		goto out;
	}
	if ((e = forge_git_run_refs_clear(g->repo, n.name)) != 0) {
		rc = e;
		goto out;
	}
	if (make_branch(&branch, &made_branch, g, &n, base ? base : "HEAD") < 0)
		goto out;
	if ((e = forge_git_tree_fits(g->repo, git_reference_target(branch), g->runs, g->root, n.name)) < 0) {
		rc = e;
		goto out;
	}
	opts.ref = branch;
	if ((lock_fd = lock_worktrees(g)) < 0)
		goto out;
	/* (neither the directory nor git's entry of it is there: both checked above) */
	added = true;
	if (git_worktree_add(&w, g->repo, n.name, wt->path, &opts) < 0) {
		forge_git_fail("cannot create worktree '%s' on '%s'", wt->path, n.branch.buf);
		goto out;
	}
	if (git_repository_open_from_worktree(&wt->repo, w) < 0) {
		forge_git_fail("cannot open worktree '%s'", wt->path);
		goto out;
	}
	if (load_worktree(wt, &n) < 0)
		goto out;
done:
	*out = wt;
	wt = NULL;
	rc = 0;
out:
	if (rc < 0 && (added || made_branch))
		unmake_worktree(g, wt, &n, added, made_branch);
	if (lock_fd >= 0)
		close(lock_fd);
	git_reference_free(branch);
	git_worktree_free(w);
	run_names_release(&n);
	forge_git_worktree_free(wt);
	return rc;
}

void forge_git_worktree_free(struct forge_git_worktree *wt)
{
	if (!wt)
		return;
	git_repository_free(wt->repo);
	free(wt->trace);
	free(wt->name);
	free(wt->path);
	free(wt->branch);
	free(wt->base);
	free(wt);
}

const char *forge_git_worktree_path(const struct forge_git_worktree *wt)
{
	return wt->path;
}

const char *forge_git_worktree_trace(const struct forge_git_worktree *wt)
{
	return wt->trace;
}

const char *forge_git_worktree_branch(const struct forge_git_worktree *wt)
{
	return wt->branch;
}

const char *forge_git_worktree_base(const struct forge_git_worktree *wt)
{
	return wt->base;
}

/* The paths of the gitlinks (mode 160000: submodules, with a .gitmodules
 * entry or without one -- a repository added whole by `git add`) in the
 * index of repo, ", "-joined into names (up to about 200 bytes). */
static void gitlink_paths(struct buf *names, git_repository *repo)
{
	git_index *idx = NULL;

	if (git_repository_index(&idx, repo) < 0) {
		git_error_clear();
		return;
	}
	for (size_t i = 0; i < git_index_entrycount(idx) && names->len < 200; i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);

		if (e && e->mode == GIT_FILEMODE_COMMIT && GIT_INDEX_ENTRY_STAGE(e) == 0)
			buf_addf(names, "%s%s", names->len ? ", " : "", e->path);
	}
	git_index_free(idx);
}

/* The filter names of a .gitattributes text ("filter=lfs"), each once. */
static void filter_names(jv *out, const char *text)
{
	for (const char *p = text; (p = strstr(p, "filter=")) != NULL; ) {
		size_t n;

		p += 7;
		n = strcspn(p, " \t\r\n");
		if (n == 0 || n > 64)
			continue;
		jv name = jv_string_sized(p, (int)n);
		bool seen = false;
		jv_array_foreach(*out, i, x) {
			seen = seen || jv_equal(jv_copy(x), jv_copy(name));
			jv_free(x);
		}
		if (seen)
			jv_free(name);
		else
			*out = jv_array_append(*out, name);
	}
}

/* Whether the configuration defines filter.NAME (clean, smudge or process). */
static bool filter_defined(git_config *cfg, const char *name)
{
	static const char *const keys[] = { "clean", "smudge", "process" };
	bool found = false;

	for (size_t i = 0; i < 3 && !found; i++) {
		struct buf key = BUF_INIT;
		git_config_entry *e = NULL;

		buf_addf(&key, "filter.%s.%s", name, keys[i]);
		found = git_config_get_entry(&e, cfg, key.buf) == 0;
		git_config_entry_free(e);
		buf_release(&key);
	}
	return found;
}

void forge_git_worktree_limits(jv *out, struct forge_git_worktree *wt)
{
	struct buf names = BUF_INIT, attrs = BUF_INIT, note = BUF_INIT;
	git_config *cfg = NULL;
	char *path = forge_git_path(wt->path, ".gitattributes");
	jv filters = jv_array();

	*out = jv_array();
	gitlink_paths(&names, wt->repo);
	if (names.len) {
		buf_addf(&note, "submodules are not checked out in the run's worktree (%s): what needs "
			 "them fails there, and the agent's changes inside them are not committed", names.buf);
		*out = jv_array_append(*out, jv_string(note.buf));
	}
	/* (the worktree's files, which a command may have replaced by a FIFO:
	 * read only when regular) */
	if (buf_read_regular(&attrs, path, 1u << 20) == 0 && git_repository_config(&cfg, wt->repo) == 0) {
		filter_names(&filters, attrs.buf);
		jv_array_foreach(filters, i, f) {
			if (filter_defined(cfg, jv_string_value(f))) {
				buf_reset(&note);
				buf_addf(&note, "the git filter '%s' (.gitattributes) does not run in the run's "
					 "worktree: the files it manages are as stored in git (for git-lfs, pointer "
					 "files), and files the agent writes there are committed without it",
					 jv_string_value(f));
				*out = jv_array_append(*out, jv_string(note.buf));
			}
			jv_free(f);
		}
	}
	jv_free(filters);
	git_config_free(cfg);
	free(path);
	buf_release(&names);
	buf_release(&attrs);
	buf_release(&note);
}

bool forge_git_worktree_reopened(const struct forge_git_worktree *wt)
{
	return wt->reopened;
}

int forge_git_worktree_head(char **out, struct forge_git_worktree *wt)
{
	git_oid id;

	*out = NULL;
	if (git_reference_name_to_id(&id, wt->repo, "HEAD") < 0)
		return forge_git_fail("cannot read HEAD of worktree '%s'", wt->path);
	*out = forge_git_hex(&id);
	return 0;
}

int forge_git_worktree_head_tree(char **out, struct forge_git_worktree *wt)
{
	git_commit *head = NULL;
	git_oid id;
	int rc = 0;

	*out = NULL;
	if (git_reference_name_to_id(&id, wt->repo, "HEAD") < 0 || git_commit_lookup(&head, wt->repo, &id) < 0)
		rc = forge_git_fail("cannot read HEAD of worktree '%s'", wt->path);
	else
		*out = forge_git_hex(git_commit_tree_id(head));
	git_commit_free(head);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One list entry; consumes nothing, returns a new object. */
static jv list_entry(git_worktree *w)
{
	git_repository *r = NULL;
	git_reference *head = NULL;
	jv branch = jv_null(), sha = jv_null();
	bool valid = git_worktree_validate(w) == 0;
	git_oid id;

	if (valid && git_repository_open_from_worktree(&r, w) == 0) {
		if (git_reference_lookup(&head, r, "HEAD") == 0) {
			const char *t = git_reference_symbolic_target(head);

			if (t)
				branch = jv_string(strncmp(t, "refs/heads/", 11) == 0 ? t + 11 : t);
		}
		if (git_reference_name_to_id(&id, r, "HEAD") == 0) {
			char *hex = forge_git_hex(&id);

			sha = jv_string(hex);
			free(hex);
		}
	}
	git_reference_free(head);
	git_repository_free(r);
	jv e = jv_object();
	e = json_set(e, "name", jv_string(git_worktree_name(w)));
	e = json_set(e, "path", jv_string(git_worktree_path(w)));
	e = json_set(e, "branch", branch);
	e = json_set(e, "head", sha);
	e = json_set(e, "valid", jv_bool(valid));
	git_buf why = GIT_BUF_INIT;
	bool locked = git_worktree_is_locked(&why, w) > 0;

	size_t n = why.ptr ? strlen(why.ptr) : 0;

	while (n > 0 && (why.ptr[n - 1] == '\n' || why.ptr[n - 1] == '\r'))
		n--;	/* git writes the reason with a newline */
	e = json_set(e, "locked", jv_bool(locked));
	e = json_set(e, "lock_reason", locked && n ? jv_string_sized(why.ptr, (int)n) : jv_null());
	git_buf_dispose(&why);
	return e;
}

int forge_git_worktree_list(jv *out, struct forge_git *g, const char *trace)
{
	git_strarray names = { NULL, 0 };
	char name[FORGE_GIT_RUN_NAME_SIZE];
	jv list = jv_array();
	int rc = -1;

	*out = jv_invalid();
	if (trace && forge_git_run_name(name, trace) < 0)
		goto out;
	if (git_worktree_list(&names, g->repo) < 0) {
		forge_git_fail("cannot list the worktrees of '%s'", g->root);
		goto out;
	}
	if (names.count > 1)
		qsort(names.strings, names.count, sizeof *names.strings, cmp_str);
	for (size_t i = 0; i < names.count; i++) {
		git_worktree *w = NULL;

		if (trace && strcmp(name, names.strings[i]) != 0)
			continue;
		if (git_worktree_lookup(&w, g->repo, names.strings[i]) < 0)
			continue;   /* vanished meanwhile */
		if (forge_git_is_run_worktree(g, git_worktree_path(w)))
			list = jv_array_append(list, list_entry(w));
		git_worktree_free(w);
	}
	*out = list;
	list = jv_invalid();
	rc = 0;
out:
	jv_free(list);
	git_strarray_dispose(&names);
	return rc;
}

/* Remove the tree at path, to any depth, its chmod 000 directories too
 * (core/tmpdir.h); 0 when it is gone, -1 with a message. */
static int remove_tree(const char *path)
{
	if (tmpdir_rmtree_at(AT_FDCWD, path) < 0)
		return forge_error("cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

/* 1 when the worktree has changes (untracked files included), 0 when clean. */
static int worktree_dirty(git_worktree *w, const char *path)
{
	git_repository *r = NULL;
	git_status_options so = GIT_STATUS_OPTIONS_INIT;
	git_status_list *list = NULL;
	int rc = -1;

	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (git_repository_open_from_worktree(&r, w) < 0 ||
	    git_status_list_new(&list, r, &so) < 0) {
		forge_git_fail_status(path);
		goto out;
	}
	rc = git_status_list_entrycount(list) > 0;
out:
	git_status_list_free(list);
	git_repository_free(r);
	return rc;
}

static int delete_ref(git_repository *repo, const char *name)
{
	git_reference *ref = NULL;
	int e = git_reference_lookup(&ref, repo, name);

	if (e == GIT_ENOTFOUND)
		return 0;
	if (e == 0)
		e = git_reference_delete(ref);
	git_reference_free(ref);
	if (e < 0)
		return forge_git_fail("cannot delete '%s'", name);
	return 0;
}

int forge_git_worktrees_prune(jv *out, const char *repo, bool (*which)(const char *path), bool dry_run)
{
	git_repository *r = NULL;
	git_strarray names = { NULL, 0 };
	jv list = jv_array();
	int rc = -1, e;

	*out = jv_null();
	forge_git_init();
	if ((e = forge_git_repo_open(&r, repo, GIT_REPOSITORY_OPEN_NO_SEARCH)) != 0) {
		if (e == -1)
			forge_git_fail("cannot open the repository '%s'", repo);
		goto out;
	}
	if (git_worktree_list(&names, r) < 0) {
		forge_git_fail("cannot list the worktrees of '%s'", repo);
		goto out;
	}
	for (size_t i = 0; i < names.count; i++) {
		git_worktree_prune_options po = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
		git_worktree *w = NULL;
		const char *path;

		if (git_worktree_lookup(&w, r, names.strings[i]) < 0)
			continue;   /* vanished meanwhile */
		path = git_worktree_path(w);
		/* (the default options prune neither a valid worktree nor a
		 * locked one: checked first, for a dry run) */
		if (path && which(path) && git_worktree_validate(w) < 0 && git_worktree_is_locked(NULL, w) == 0) {
			if (!dry_run && git_worktree_prune(w, &po) < 0) {
				forge_git_fail("cannot forget the worktree '%s' of '%s'", path, repo);
				git_worktree_free(w);
				goto out;
			}
			list = jv_array_append(list, jv_string(path));
		}
		git_worktree_free(w);
	}
	*out = list;
	list = jv_invalid();
	rc = 0;
out:
	jv_free(list);
	git_strarray_dispose(&names);
	git_repository_free(r);
	return rc;
}

int forge_git_worktree_remove(struct forge_git *g, const char *trace, unsigned flags)
{
	git_worktree *w = NULL;
	git_worktree_prune_options po = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
	struct run_names n;
	char *path = NULL;
	bool force = flags & FORGE_GIT_REMOVE_FORCE, removed = false;
	struct stat st;
	int e, rc = -1;

	if (run_names_init(&n, trace) < 0)
		goto out;
	path = worktree_dir(g, n.name);
	e = lookup_worktree(&w, g->repo, n.name);
	if (e == 0) {
		/* where it is: made by an older Forge, or before its checkout moved */
		struct forge_git_worktree at = { .name = n.name, .path = path };

		find_place(&at, g, w);
		path = at.path;
	}
	if (e == 0) {
		if (git_worktree_validate(w) == 0 && !force) {
			e = worktree_dirty(w, path);
			if (e < 0)
				goto out;
			if (e > 0) {
				forge_error("worktree '%s' has uncommitted changes; save them first "
					    "or force the removal", path);
				goto out;
			}
		}
		po.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_WORKING_TREE |
			   (force ? GIT_WORKTREE_PRUNE_LOCKED : 0);
		if (!git_worktree_is_prunable(w, &po)) {
			forge_git_fail("cannot remove worktree '%s'", path);
			goto out;
		}
		int lock_fd = lock_worktrees(g);   /* a half-removed one is half-made too */
		if (lock_fd < 0)
			goto out;
		/* The directory first, the registration after: libgit2 drops
		 * the metadata before it removes the tree, and when that failed
		 * (a tree deeper than it walks, a directory it cannot read) the
		 * tree stayed, known to nothing, for ever; now a failure leaves
		 * the worktree registered, and the next removal tries again. */
		e = remove_tree(path);
		if (e == 0 && (e = git_worktree_prune(w, &po)) < 0)
			forge_git_fail("cannot forget worktree '%s'", path);
		close(lock_fd);
		if (e < 0)
			goto out;
		removed = true;
	} else if (e != GIT_ENOTFOUND) {
		forge_git_fail("cannot look up worktree '%s'", n.name);
		goto out;
	}
	/* A directory left without metadata (or without its .git file). */
	if (lstat(path, &st) == 0) {
		if (!removed && !force) {
			forge_error("'%s' is not a registered worktree; force the removal to delete it",
				    path);
			goto out;
		}
		if (remove_tree(path) < 0)
			goto out;
		removed = true;
	}
	if (flags & FORGE_GIT_REMOVE_BRANCH) {
		git_reference *b = NULL;

		if (git_branch_lookup(&b, g->repo, n.branch.buf, GIT_BRANCH_LOCAL) == 0 &&
		    git_branch_is_checked_out(b) == 1) {
			git_reference_free(b);
			forge_error("cannot delete branch '%s': it is checked out elsewhere", n.branch.buf);
			goto out;
		}
		git_reference_free(b);
		if (delete_ref(g->repo, n.branch_ref.buf) < 0 ||
		    delete_ref(g->repo, n.base_ref.buf) < 0)
			goto out;
	}
	rc = removed ? 0 : FORGE_GIT_NOTHING;
out:
	git_worktree_free(w);
	run_names_release(&n);
	free(path);
	return rc;
}

int forge_git_clear_run_locks(struct forge_git *g, const char *trace)
{
	static const char *const locks[][2] = {
		{ "refs/heads/forge/", ".lock" }, { "worktrees/", "/index.lock" },
		{ "worktrees/", "/HEAD.lock" }, { "worktrees/", "/ORIG_HEAD.lock" },
	};
	const char *common = git_repository_commondir(g->repo);
	char name[FORGE_GIT_RUN_NAME_SIZE];
	struct buf path = BUF_INIT;
	int removed = 0;

	if (!common || forge_git_run_name(name, trace) < 0)
		return 0;
	for (size_t i = 0; i < sizeof locks / sizeof *locks; i++) {
		buf_reset(&path);
		buf_adds(&path, common);
		if (path.len && path.buf[path.len - 1] != '/')
			buf_addch(&path, '/');
		buf_addf(&path, "%s%s%s", locks[i][0], name, locks[i][1]);
		if (unlink(path.buf) == 0)
			removed++;
		else if (errno != ENOENT) {
			int rc = forge_error("cannot remove the stale lock '%s': %s", path.buf, strerror(errno));

			buf_release(&path);
			return rc;
		}
	}
	buf_release(&path);
	return removed;
}

int forge_git_saved_lock(char **out, struct forge_git *g, const char *trace, int64_t before_ms)
{
	const char *common = git_repository_commondir(g->repo);
	char name[FORGE_GIT_RUN_NAME_SIZE];
	struct buf dir = BUF_INIT, path = BUF_INIT;
	struct dirent *e;
	DIR *d = NULL;
	int rc = 0;

	*out = NULL;
	if (!common || forge_git_run_name(name, trace) < 0)
		return 0;
	buf_adds(&dir, common);
	if (dir.len && dir.buf[dir.len - 1] != '/')
		buf_addch(&dir, '/');
	buf_addf(&dir, "refs/forge/%s/saved/", name);
	if (!(d = opendir(dir.buf))) {
		if (errno != ENOENT && errno != ENOTDIR)
			rc = forge_error("cannot read '%s': %s", dir.buf, strerror(errno));
		goto out;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;

		if (n <= 5 || strcmp(e->d_name + n - 5, ".lock") != 0)
			continue;
		buf_reset(&path);
		buf_addf(&path, "%s%s", dir.buf, e->d_name);
		if (lstat(path.buf, &st) == 0 && S_ISREG(st.st_mode) &&
		    (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 < before_ms) {
			*out = buf_detach(&path, NULL);
			break;
		}
	}
out:
	if (d)
		closedir(d);
	buf_release(&dir);
	buf_release(&path);
	return rc;
}
